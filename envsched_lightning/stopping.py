"""Stopping a run promptly: a signal stops the work where it may be dropped, else at the next work point.

A GRPO step is long (minutes of rollouts on a CPU) and Lightning acts on SIGTERM only at batch
boundaries. Here a stop takes effect at once wherever the work in progress may be dropped (a step
before its first optimiser step, an evaluation, the warm start: `GRPOModule.droppable`), else at
the next work point (`GRPOModule` reports each as a `WorkProgress`). `StopRequested` abandons the
work; the caller writes the last completed state and exits with 128 + the signal's number (143 for
SIGTERM, 130 for SIGINT). A second signal exits at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, NamedTuple


class WorkProgress(NamedTuple):
    """A unit of long work done: where a progress line may be printed and a stop may take effect."""

    phase: str  # "warm start", "rollouts", "eval"
    done: int  # units done in this phase (warm-start steps, finished episodes, evaluated tasks)
    total: int  # units the phase has
    detail: str = ""  # e.g. "SFT loss 0.512"


class StopRequested(BaseException):
    """Raised after a stop signal (at a `WorkProgress` point, or at once): the work in progress is abandoned.

    A `BaseException`, as KeyboardInterrupt is: raised at once inside a tool call or a verifier, it
    must not be taken for their failure by an `except Exception`."""

    def __init__(self, signum: int, where: WorkProgress | None = None) -> None:
        self.signum = signum
        self.where = where
        at = f" during {where.phase} ({where.done}/{where.total})" if where is not None else ""
        super().__init__(f"{signal_name(signum)} received{at}")

    @property
    def exit_status(self) -> int:
        return exit_status(self.signum)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_status(signum: int) -> int:
    """The shell's convention for a process ended by a signal: 128 + its number."""
    return 128 + int(signum)


class StopSignal:
    """Handlers for `signals` that record the first one (`requested`) and exit at once on the second.

    While `at_once()` is true the first signal raises `StopRequested` right where the main thread is,
    as Ctrl-C raises KeyboardInterrupt (a long torch kernel finishes first): the owner says when the
    work in progress may be dropped anywhere. `install` keeps the handlers it
    replaces and `restore` puts them back; both do nothing off the main thread (Python delivers
    signals to the main thread only)."""

    def __init__(self, signals: Sequence[int] = (signal.SIGTERM, signal.SIGINT),
                 at_once: Callable[[], bool] = lambda: False) -> None:  # fmt: skip
        self.signals = tuple(int(s) for s in signals)
        self.requested: int | None = None
        self.at_once = at_once
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in self.signals:
            previous = signal.signal(signum, self._handle)
            self._previous.setdefault(signum, previous)

    def restore(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, previous in self._previous.items():  # kept: Lightning may re-install ours after this
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)

    def check(self, where: WorkProgress | None = None) -> None:
        """Raise `StopRequested` once a signal came."""
        if self.requested is not None:
            raise StopRequested(self.requested, where)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.requested is not None:  # asked twice: no checkpoint, no cleanup
            print(f"\n{signal_name(signum)} again: exiting now", file=sys.stderr, flush=True)
            os._exit(exit_status(signum))
        self.requested = signum
        now = self.at_once()
        when = "now" if now else "at the next point where the work in progress can be dropped"
        print(f"\n{signal_name(signum)}: stopping {when} (a second signal exits at once)", file=sys.stderr, flush=True)
        if now:
            raise StopRequested(signum)
