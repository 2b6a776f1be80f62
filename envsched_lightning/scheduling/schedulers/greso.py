"""`greso`: selective rollouts that skip predictably uninformative tasks (Zheng et al. 2025).

A task whose last `z` observations were all solved (mean >= `easy_mean`) or all failed (mean <=
`hard_mean`) is skipped with probability ``1 - max(p ** z, min_explore)``. The base exploration
probabilities p_easy and p_hard self-tune after each step: down by `step_size` when zero-variance
groups of that kind exceed their target share of the batch, up otherwise. The batch is filled
uniformly from the tasks not skipped.
"""

from __future__ import annotations

import numpy as np

from ..base import Scheduler
from ..checks import check_number
from ..registry import register_scheduler


@register_scheduler("greso")
class GRESOScheduler(Scheduler):
    def __init__(
        self,
        specs,
        seed: int = 0,
        easy_mean: float = 0.98,
        hard_mean: float = 0.11,
        target_easy: float = 0.083,
        target_hard: float = 0.083,
        p_init: float = 0.5,
        step_size: float = 0.01,
        min_explore: float = 0.01,
        **kw,
    ) -> None:
        for name, value in dict(easy_mean=easy_mean, hard_mean=hard_mean, target_easy=target_easy,
                                target_hard=target_hard, p_init=p_init, step_size=step_size,
                                min_explore=min_explore).items():  # fmt: skip
            check_number(name, value, 0.0, 1.0)
        super().__init__(specs, seed=seed, **kw)
        self.easy_mean, self.hard_mean = easy_mean, hard_mean
        self.targets = {"easy": target_easy, "hard": target_hard}
        self.p = {"easy": p_init, "hard": p_init}
        self.step_size, self.min_explore = step_size, min_explore
        self.streak_easy = np.zeros(self.num_tasks, dtype=np.int64)  # consecutive all-solved observations
        self.streak_hard = np.zeros(self.num_tasks, dtype=np.int64)  # consecutive all-failed observations

    def _observe(self, groups) -> None:
        n_easy = n_hard = 0
        for g in groups:
            easy, hard = g.mean >= self.easy_mean, g.mean <= self.hard_mean
            self.streak_easy[g.index] = self.streak_easy[g.index] + 1 if easy else 0
            self.streak_hard[g.index] = self.streak_hard[g.index] + 1 if hard else 0
            n_easy += easy
            n_hard += hard
        for kind, n in (("easy", n_easy), ("hard", n_hard)):
            share = n / max(len(groups), 1)
            delta = -self.step_size if share > self.targets[kind] else self.step_size
            self.p[kind] = float(np.clip(self.p[kind] + delta, self.min_explore, 1.0))

    def skip_probability(self) -> np.ndarray:
        """float64[N]; the powers only where a streak runs (a few tasks of a large pool)."""
        keep = np.ones(self.num_tasks)
        easy = np.flatnonzero(self.streak_easy > 0)
        hard = np.flatnonzero((self.streak_hard > 0) & (self.streak_easy == 0))
        keep[easy] = np.maximum(self.p["easy"] ** self.streak_easy[easy], self.min_explore)
        keep[hard] = np.maximum(self.p["hard"] ** self.streak_hard[hard], self.min_explore)
        return 1.0 - keep

    def _priorities(self, batch_size: int) -> dict[str, np.ndarray]:
        skip_p = self.skip_probability()
        skipped = self.rng.random(self.num_tasks) < skip_p
        return {"priority": self.rng.random(self.num_tasks), "eligible": ~skipped, "skip_prob": skip_p}

    def _extra_state(self) -> dict:
        return {"p": dict(self.p), "streak_easy": self.streak_easy.copy(), "streak_hard": self.streak_hard.copy()}

    def _load_extra_state(self, state: dict) -> None:
        self.p = dict(state["p"])
        self.streak_easy = np.asarray(state["streak_easy"], dtype=np.int64).copy()
        self.streak_hard = np.asarray(state["streak_hard"], dtype=np.int64).copy()
