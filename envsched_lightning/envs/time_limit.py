"""A time limit on tool code: a tool that runs too long is interrupted, and its calls answered with an error.

The rollout loop waits for every tool call of every episode in the batch, so one slow call stalls all
of them. `call_with_time_limit` runs the call in the calling thread and, when the limit passes, a
watchdog thread raises `ToolTimeout` inside it (`PyThreadState_SetAsyncExc`). Python checks for that
exception between bytecodes, so loops written in Python stop at once; a single C-level operation
that holds the interpreter (a huge integer product, a regex with catastrophic backtracking) is
interrupted only when it returns: such operations are bounded where a tool performs them (tau's
`calculate` refuses integer operations above a size). `ToolTimeout` is a `BaseException`, so a tool's
own `except Exception` cannot swallow it.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TOOL_TIME_LIMIT = 5.0
"""Seconds a tool call may run (a turn's calls share the number of calls times this)."""


class ToolTimeout(BaseException):
    """Raised inside a tool call that ran past its time limit."""


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


def call_with_time_limit(fn: Callable[[], T], seconds: float | None) -> T:
    """`fn()`, or `ToolTimeout` once it has run `seconds` (None or <= 0: no limit)."""
    if seconds is None or seconds <= 0:
        return fn()
    tid = threading.get_ident()
    lock = threading.Lock()
    state = {"running": True, "fired": False}

    def expire() -> None:
        with lock:
            if state["running"]:
                state["fired"] = True
                _raise_in(tid, ToolTimeout)

    watchdog = threading.Timer(seconds, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        try:
            return fn()
        finally:
            with lock:
                state["running"] = False
                if state["fired"]:
                    _raise_in(tid, None)  # clear it if it has not been raised yet
            watchdog.cancel()
    except ToolTimeout:
        raise ToolTimeout(f"tool call ran past its time limit of {seconds:g} s") from None
