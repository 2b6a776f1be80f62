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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TOOL_TIME_LIMIT = 5.0
"""Seconds a tool call may run (a turn's calls share the number of calls times this)."""


class ToolTimeout(BaseException):
    """Raised inside a tool call that ran past its time limit."""


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


class _Deadline:
    """One running limit of one thread: a watchdog timer that can be stopped and restarted with the time left."""

    def __init__(self, thread_id: int, seconds: float) -> None:
        self.thread_id, self.left = thread_id, seconds
        self.lock = threading.Lock()
        self.running, self.fired = True, False
        self.started = 0.0
        self.timer: threading.Timer | None = None

    def arm(self) -> None:
        self.started = time.monotonic()
        self.timer = threading.Timer(max(self.left, 0.0), self._expire)
        self.timer.daemon = True
        self.timer.start()

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.left -= time.monotonic() - self.started

    def _expire(self) -> None:
        with self.lock:
            if self.running:
                self.fired = True
                _raise_in(self.thread_id, ToolTimeout)

    def finish(self) -> None:
        with self.lock:
            self.running = False
            if self.fired:
                _raise_in(self.thread_id, None)  # clear it if it has not been raised yet
        if self.timer is not None:
            self.timer.cancel()


_active = threading.local()  # .deadlines: this thread's running limits, innermost last


@contextmanager
def time_limit_paused() -> Iterator[None]:
    """Time spent in the block does not count against the calling thread's limits.

    A simulated user's reply (a local model or an API server, with its own timeout) is waited for inside
    `end_turn`; the limit is on the episode's own code, not on that wait."""
    deadlines = list(getattr(_active, "deadlines", ()))
    for d in deadlines:
        d.disarm()
    try:
        yield
    finally:
        for d in deadlines:
            d.arm()


def call_with_time_limit(fn: Callable[[], T], seconds: float | None) -> T:
    """`fn()`, or `ToolTimeout` once it has run `seconds` (None or <= 0: no limit; time in `time_limit_paused` not counted)."""
    if seconds is None or seconds <= 0:
        return fn()
    deadline = _Deadline(threading.get_ident(), seconds)
    stack = _active.__dict__.setdefault("deadlines", [])
    stack.append(deadline)
    deadline.arm()
    try:
        try:
            return fn()
        finally:
            deadline.finish()
            stack.remove(deadline)
    except ToolTimeout:
        raise ToolTimeout(f"ran past its time limit of {seconds:g} s") from None
