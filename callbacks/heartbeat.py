"""A console heartbeat for long work: a line at most every `every_s` seconds while a phase runs.

A unit of work can outlast the interval (one warm-start step of a real model on 2 CPU cores takes
minutes), so besides the work points themselves a daemon thread looks every second whether a line
is due; the line then says what the latest work point reported and how long the phase has run.
Torch releases the GIL in its kernels, so the thread gets its turn during a long forward pass.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from envsched_lightning.stopping import WorkProgress

Format = Callable[[WorkProgress, float, float | None], str]  # (work, seconds so far, seconds left) -> line


def clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


class Heartbeat:
    """`begin()` as a phase starts, `report(work)` at each work point, `end()` when the phase is over."""

    def __init__(self, every_s: float, say: Callable[[str], None], line: Format) -> None:
        self.every_s, self.say, self.line = every_s, say, line
        self._lock = threading.RLock()  # a line it says goes through `printed` on the same thread
        self._phase_t0 = 0.0
        self._work: WorkProgress | None = None
        self._work_at = 0.0  # when `_work` was reported
        self._last_line = 0.0
        self._closed = threading.Event()
        self._ticker: threading.Thread | None = None

    def begin(self) -> None:
        """A phase starts; its first line is due `every_s` after the console's last line, which may be the
        previous phase's (so a phase change never leaves a longer silence)."""
        with self._lock:
            self._phase_t0 = time.perf_counter()
            self._last_line = self._last_line or self._phase_t0
            self._work = None

    def printed(self) -> None:
        """Another line went to the console: the next heartbeat is due `every_s` from now."""
        with self._lock:
            self._last_line = time.perf_counter()

    def end(self) -> None:
        with self._lock:
            self._work = None

    def report(self, work: WorkProgress) -> None:
        with self._lock:
            self._work, self._work_at = work, time.perf_counter()
            self._beat_if_due(self.every_s)
        self._start_ticker()

    def close(self) -> None:
        self._closed.set()

    def _start_ticker(self) -> None:
        if self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, name="progress-heartbeat", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._closed.wait(min(1.0, self.every_s)):
            with self._lock:
                self._beat_if_due(max(1.0, self.every_s))  # between work points: never more than once a second

    def _beat_if_due(self, interval: float) -> None:
        now = time.perf_counter()
        work = self._work
        if work is None or now - self._last_line < interval:
            return
        self._last_line = now
        so_far = now - self._phase_t0
        left = None
        if 0 < work.done < work.total:  # the pace up to the latest work point, less the time since it
            per_unit = (self._work_at - self._phase_t0) / work.done
            left = max(0.0, per_unit * (work.total - work.done) - (now - self._work_at))
        self.say(self.line(work, so_far, left))
