"""Constructor argument checks that name the option, so a bad config fails before anything runs."""

from __future__ import annotations

import math
from typing import Any


def check_number(name: str, value: Any, low: float | None = None, high: float | None = None, *,
                 integer: bool = False, low_open: bool = False) -> None:  # fmt: skip
    """Raise ``ValueError("<name> must be ...")`` unless `value` is a finite number in the range."""
    kind = "an integer" if integer else "a number"
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type or not math.isfinite(value):
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    below = value <= low if low_open else value < low if low is not None else False
    if below or (high is not None and value > high):
        lo = "" if low is None else f"{'>' if low_open else '>='} {low}"
        hi = "" if high is None else f"<= {high}"
        raise ValueError(f"{name} must be {kind} {' and '.join(x for x in (lo, hi) if x)}, got {value!r}")


def check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
