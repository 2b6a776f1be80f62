"""Does a task's reward depend on what the policy did? A flaky verifier's says nothing about it.

A reward decided by a coin (a broken judge, a checker that passes at random) is independent of the
trajectory the policy produced; a reward the policy earns goes with how it behaved (how many turns
it took, where it went wrong). So within each group whose rewards and trajectory lengths both
vary, the correlation of the two is read, and over a task's groups the evidence is pooled
(Stouffer: the Fisher z of each group's correlation, times sqrt(G - 3), summed with its sign and
divided by sqrt(groups)). A task whose reward ignores the trajectory has |Z| ~ |N(0, 1)| however
often it is picked; one the policy decides moves away from 0 with every group.

`learnability()` turns |Z| into a factor in [floor, 1] the same way `progress.py` turns a trend:
1 while a task has fewer than `min_groups` such groups, then |Z| / `z_full`, discounted as far as
tasks without dependence are common in this pool. What it needs: per-rollout `lengths` (turns or
tokens) in the groups; groups without them teach it nothing and leave the factor at 1. Where a
task's success shows in no length (a one-turn answer scored right or wrong), its reward looks
independent of the trajectory too, so it is an option (`dependence=true`), off by default.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .progress import TaskSums, discount, null_share
from .types import RolloutGroup

_MIN_GROUP = 4  # a correlation's Fisher z has variance 1 / (G - 3)


class DependenceTracker(TaskSums):
    """Per task: the signed sum of the groups' standardised correlation z and their number (2 floats)."""

    SUMS = ("n", "z")
    NAME = "dependence"

    def __init__(self, num_tasks: int, min_groups: int = 1, floor: float = 0.05, z_full: float = 2.0) -> None:
        if min_groups < 1:
            raise ValueError(f"dependence min_groups must be >= 1, got {min_groups}")
        if not 0.0 <= floor <= 1.0 or z_full <= 0:
            raise ValueError(f"dependence floor must be in [0, 1] and z_full > 0; got {floor}, {z_full}")
        self.min_groups, self.floor, self.z_full = min_groups, floor, z_full
        self.n = np.zeros(num_tasks)  # groups whose rewards and lengths both varied
        self.z = np.zeros(num_tasks)  # sum of their atanh(correlation) * sqrt(G - 3)

    def observe(self, groups: Sequence[RolloutGroup]) -> None:
        """Add one step's groups; a group without lengths, with fewer than 4 rollouts or with constant
        rewards or lengths carries no evidence and is skipped."""
        for g in groups:
            if g.lengths is None or len(g.rewards) < _MIN_GROUP:
                continue
            r = np.asarray(g.rewards, dtype=np.float64)
            length = np.asarray(g.lengths, dtype=np.float64)
            r, length = r - r.mean(), length - length.mean()
            spread = float(np.sqrt((r @ r) * (length @ length)))
            if spread <= 1e-12:
                continue
            corr = float(np.clip((r @ length) / spread, -0.999, 0.999))
            self.n[g.index] += 1
            self.z[g.index] += np.arctanh(corr) * np.sqrt(r.size - 3.0)

    def z_score(self) -> np.ndarray:
        """float[N]: |pooled z| per task (0 where no group counted)."""
        return np.abs(self.z) / np.sqrt(np.maximum(self.n, 1.0))

    def learnability(self) -> np.ndarray:
        """float[N] in [floor, 1]: how much of a task's reward variance to believe the policy decides."""
        z = self.z_score()
        ready = self.n >= self.min_groups
        return np.where(ready, discount(z, null_share(z[ready]), self.floor, self.z_full), 1.0)
