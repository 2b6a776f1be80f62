"""Paired-seed statistics for scheduler comparisons: bootstrap intervals and a plain verdict.

Runs of different schedulers with the same seed share the model initialisation and the data
order, so comparisons are made per seed and the seeds are resampled together (a paired
bootstrap): the interval of a difference reflects seed-to-seed variation of the difference, not
of each scheduler alone. Intervals are percentile intervals over `n_boot` resamples.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np


class Interval(NamedTuple):
    estimate: float  # the statistic on the observed seeds
    low: float  # percentile bootstrap bounds
    high: float

    def excludes(self, value: float) -> bool:
        return self.low > value or self.high < value

    def __str__(self) -> str:
        return f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}]"


def bootstrap(stat: Callable[[np.ndarray], float], n_seeds: int, n_boot: int = 4000, level: float = 0.95,
              seed: int = 0) -> Interval:  # fmt: skip
    """`stat(seed_indices)` on the observed seeds and on `n_boot` resamples of them (with replacement)."""
    if n_seeds < 2:
        value = stat(np.arange(n_seeds))
        return Interval(value, float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    draws = np.array([stat(rng.integers(0, n_seeds, n_seeds)) for _ in range(n_boot)])
    draws = draws[np.isfinite(draws)] if np.isfinite(draws).any() else draws
    tail = (1 - level) / 2 * 100
    return Interval(stat(np.arange(n_seeds)), float(np.percentile(draws, tail)), float(np.percentile(draws, 100 - tail)))


def mean_curve_band(curves: np.ndarray, **kw) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, low, high) per evaluation point of `curves` [seeds, points], seeds resampled."""
    points = [bootstrap(lambda idx, j=j: float(curves[idx, j].mean()), len(curves), **kw) for j in range(curves.shape[1])]
    return tuple(np.array([getattr(p, f) for p in points]) for f in ("estimate", "low", "high"))  # type: ignore[return-value]


def paired_difference(a: np.ndarray, b: np.ndarray, **kw) -> Interval:
    """Mean over seeds of a - b (same seed, same index), with its paired bootstrap interval."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return bootstrap(lambda idx: float(diff[idx].mean()), len(diff), **kw)


def verdict(diff: Interval, name: str, other: str, what: str = "final held-out score") -> str:
    """One sentence a reader can quote: significant at the interval's level or not, with the numbers."""
    if not np.isfinite(diff.low):
        return f"{name} - {other} {what}: {diff.estimate:+.3f} (one seed: no interval)"
    if diff.excludes(0.0):
        better = name if diff.estimate > 0 else other
        return f"{name} - {other} {what}: {diff.estimate:+.3f}, 95% CI [{diff.low:+.3f}, {diff.high:+.3f}]: significant, {better} higher"
    return f"{name} - {other} {what}: {diff.estimate:+.3f}, 95% CI [{diff.low:+.3f}, {diff.high:+.3f}]: not significant (the interval holds 0)"
