"""Learning progress per task: does a task's reward move as it is trained on, or only scatter?

A group whose rewards differ is informative only if the policy decides the difference. A flaky
verifier (a noisy judge, a stochastic simulated user) gives a task reward variance on every pick
however much the policy learns from it, and a variance-seeking scheduler keeps paying for it. What
tells the two apart from the rollouts alone is the trend: a task that is learned climbs (or, being
unlearned, falls) as it is picked, one whose reward is a coin stays where it was.

`ProgressTracker` keeps, per task, the running sums of a least-squares line through the task's
group means against its own pick number, and the mean sampling variance of a group mean
(std^2 / G). `learnability()` turns the slope's t statistic into a factor in [floor, 1]: 1 while a
task has fewer than `min_picks` groups (too little evidence either way), then t / `t_full` (a slope
`t_full` standard errors from zero counts fully), never below `floor`. The slope is measured per
pick, so the trend a real learner makes in a few picks shows within them, and a coin's flat line
is told apart after a handful of picks rather than never.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .types import RolloutGroup, group_stats


MIN_READY = 5  # judged tasks an environment needs before its flat share is compared


def null_share_counts(below: np.ndarray | int, size: np.ndarray | int) -> np.ndarray:
    """`null_share` from counts (`below` of `size` statistics at most 1), elementwise."""
    return np.clip((np.asarray(below) + 0.683 * 10 * 0.5) / (0.683 * (np.asarray(size) + 10)), 0.0, 1.0)


def null_share(stat: np.ndarray) -> float:
    """Estimated share of tasks without the effect among those whose statistic `stat` is |N(0, 1)|
    without it (a trend's or a dependence's z): how many more of them fall below 1 than tasks with the
    effect would explain (Storey's estimator at lambda = 1: |N(0, 1)| is below 1 with probability
    0.683), shrunk toward 1/2 by 10 pseudo-tasks while few are known."""
    return float(null_share_counts(int((stat <= 1.0).sum()), stat.size))


def discount(stat: np.ndarray, share: float, floor: float, full: float) -> np.ndarray:
    """float[N] in [floor, 1]: stat / `full` (a statistic `full` standard errors from zero counts
    fully), never below `floor`, and that discount applied as far as `share` of the tasks lack the effect."""
    return 1.0 - share * (1.0 - np.clip(stat / full, floor, 1.0))


class TaskSums:
    """Per-task running sums as float arrays named in `SUMS` (the first, `n`, counts), checkpointed by
    `NAME`: a loaded state is checked whole (shapes, finite values) before any array is set."""

    SUMS: tuple[str, ...] = ()
    NAME = "sums"
    n: np.ndarray

    def state_dict(self) -> dict:
        return {k: getattr(self, k).copy() for k in self.SUMS}

    def load_state_dict(self, state: dict) -> None:
        arrays = {k: np.asarray(state[k], dtype=np.float64) for k in self.SUMS}
        for k, arr in arrays.items():
            if arr.shape != self.n.shape or not np.isfinite(arr).all():
                raise ValueError(f"{self.NAME}.{k}: shape {arr.shape} (expected {self.n.shape}) or non-finite values")
        for k, arr in arrays.items():
            setattr(self, k, arr.copy())


class ProgressTracker(TaskSums):
    """Per-task trend of group means over picks, as flat arrays (O(1) per group, 6 floats per task)."""

    SUMS = ("n", "sx", "sxx", "sy", "sxy", "noise")
    NAME = "progress"

    def __init__(self, num_tasks: int, min_picks: int = 4, floor: float = 0.05, t_full: float = 2.0,
                 env_ids: np.ndarray | None = None) -> None:
        if min_picks < 3:
            raise ValueError(f"progress min_picks must be >= 3 (a line through 2 points has no error), got {min_picks}")
        if not 0.0 <= floor <= 1.0 or t_full <= 0:
            raise ValueError(f"progress floor must be in [0, 1] and t_full > 0; got {floor}, {t_full}")
        self.min_picks, self.floor, self.t_full = min_picks, floor, t_full
        # with environments: a flat task is discounted as far as its environment has more flat tasks than
        # the least flat one (a flaky verifier or user belongs to an environment; a slow learner to all)
        self.env_ids = None if env_ids is None else np.asarray(env_ids, dtype=np.int64)
        self.n = np.zeros(num_tasks)
        self.sx = np.zeros(num_tasks)  # sum of pick numbers (0, 1, 2, ...)
        self.sxx = np.zeros(num_tasks)
        self.sy = np.zeros(num_tasks)  # sum of group means
        self.sxy = np.zeros(num_tasks)
        self.noise = np.zeros(num_tasks)  # sum of each group mean's sampling variance, std^2 / G

    def observe(self, groups: Sequence[RolloutGroup]) -> None:
        """Add one step's groups (a task picked twice in a step counts twice, in order)."""
        index, mean, std, _ = group_stats(groups)
        size = np.fromiter((len(g.rewards) for g in groups), dtype=np.float64, count=len(groups))
        for i, m, s, g in zip(index, mean, std, size):
            x = self.n[i]
            self.n[i] += 1
            self.sx[i] += x
            self.sxx[i] += x * x
            self.sy[i] += m
            self.sxy[i] += x * m
            self.noise[i] += s * s / max(g - 1.0, 1.0)  # unbiased: the group's std is the population one

    def slope_t(self) -> np.ndarray:
        """float[N]: |slope| / its standard error per task (0 where fewer than 3 picks)."""
        n = self.n
        with np.errstate(divide="ignore", invalid="ignore"):
            sxx_c = self.sxx - self.sx**2 / n  # spread of the pick numbers
            slope = (self.sxy - self.sx * self.sy / n) / sxx_c
            # the noise of one group mean, plus a floor: a group of identical rewards has none, and a
            # task whose reward sits at 0 or 1 on every pick is not "learning" however flat it is
            var = np.maximum(self.noise / n, 1e-4)
            t = np.abs(slope) / np.sqrt(var / sxx_c)
        return np.where(n >= 3, np.nan_to_num(t, nan=0.0, posinf=0.0), 0.0)

    def null_share(self, t: np.ndarray | None = None) -> float:
        """Estimated share of flat tasks among those with enough picks and varied rewards (`null_share`
        of their trend statistics)."""
        return null_share((self.slope_t() if t is None else t)[self._ready()])  # `t`: `slope_t()` when the caller has it

    def _ready(self) -> np.ndarray:
        """bool[N]: tasks whose trend is judged (enough picks, and rewards that varied)."""
        return (self.n >= self.min_picks) & (self.noise / np.maximum(self.n, 1.0) > 1e-3)

    def excess_share(self, t: np.ndarray) -> np.ndarray:
        """float[N]: per task, how far its environment's share of flat tasks exceeds the least flat
        environment's (among those with `MIN_READY` judged tasks), as a share of what is left above
        it: 0 where every environment learns alike, however slowly."""
        ready = self._ready()
        num_envs = int(self.env_ids.max()) + 1 if self.env_ids.size else 0
        counts = np.bincount(self.env_ids[ready], minlength=num_envs)
        flat = np.bincount(self.env_ids[ready & (t <= 1.0)], minlength=num_envs)
        shares = null_share_counts(flat, counts)
        known = counts >= MIN_READY
        if not known.any():
            return np.zeros(self.env_ids.shape[0])
        ref = float(shares[known].min())
        excess = np.clip((shares - ref) / max(1.0 - ref, 1e-6), 0.0, 1.0)
        return excess[self.env_ids]

    def learnability(self) -> np.ndarray:
        """float[N] in [floor, 1]: how much of a task's reward variance to believe is learnable
        (`discount` of the trend statistic: a flat trend discounted as far as flat tasks are common in
        this pool, or with environments as far as its environment has more of them than the least flat
        one; where every task learns, a slow one is not a coin)."""
        t = self.slope_t()
        share = self.null_share(t) if self.env_ids is None else self.excess_share(t)
        return np.where(self.n >= self.min_picks, discount(t, share, self.floor, self.t_full), 1.0)
