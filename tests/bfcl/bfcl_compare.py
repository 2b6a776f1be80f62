"""What the differential tests of tests/bfcl share when they compare our outputs with the official code's."""

from __future__ import annotations

import os
import random
import re
from typing import Any, TypeVar

T = TypeVar("T")


def _share() -> float:
    """BFCL_CHECK_SHARE: the share of each multi-turn task's call sequences compared (1, every one, when unset).
    The multi-turn agreement is the one check too long for every CI run (about 30 of its 35 minutes)."""
    text = os.environ.get("BFCL_CHECK_SHARE", "1")
    try:
        share = float(text)
    except ValueError:
        share = float("nan")
    if not 0 < share <= 1:
        raise ValueError(f"BFCL_CHECK_SHARE must be a number in (0, 1], got {text!r}")
    return share


SHARE = _share()


def sampled(cases: list[T], key: str) -> list[T]:
    """A seeded share (`SHARE`) of one task's cases, in their order, the first (its ground truth) always kept.

    The cases are generated in full first, so every one checked is the case the full run checks; the
    choice depends only on `key` (the task's id), not on what ran before. `make test-bfcl` compares a
    tenth of them; `make test-bfcl-full` every one."""
    if SHARE >= 1 or len(cases) <= 1:
        return cases
    rng = random.Random(f"sample {key}")
    rest = sorted(rng.sample(range(1, len(cases)), round((len(cases) - 1) * SHARE)))
    return [cases[0], *(cases[i] for i in rest)]


_SET_DISPLAY = re.compile(r"\{('[^'{}]*'(?:, '[^'{}]*')+)\}")


def canonical(text: Any) -> Any:
    """`text` with every printed set of strings in sorted order (anything else unchanged).

    A set prints in an order that depends on the process's string hashes and on the compiled file its
    constant came from: upstream's `{"economy", "business", "first"}` prints in either order from one
    run to the next, so set displays are compared as sets."""
    if not isinstance(text, str):
        return text
    return _SET_DISPLAY.sub(lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", text)
