"""Drawing a world's knobs from (low, high) ranges: one place for how both world families draw."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


class KnobDraws:
    """`uniform(name)`: a float in the named range; `integer(name)`: an int in it, both ends included."""

    def __init__(self, rng: np.random.Generator, ranges: Mapping[str, tuple[float, float]]) -> None:
        self.rng, self.ranges = rng, ranges

    def uniform(self, name: str) -> float:
        return float(self.rng.uniform(*self.ranges[name]))

    def integer(self, name: str) -> int:
        lo, hi = self.ranges[name]
        return int(self.rng.integers(lo, hi + 1))
