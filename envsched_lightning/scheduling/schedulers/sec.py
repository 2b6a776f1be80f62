"""`sec`: Self-Evolving Curriculum (Chen et al. 2025) with environments as bandit arms.

Q(env) <- a * r + (1 - a) * Q(env) where r is the mean absolute advantage (reward minus group
mean) of that env's groups this step: a learning-gain proxy that is 0 for zero-variance groups.
Each batch slot draws an environment from a Boltzmann distribution over Q (temperature `tau`),
then a task uniformly within it.
"""

from __future__ import annotations

import numpy as np

from ..base import Scheduler
from ..registry import register_scheduler


@register_scheduler("sec")
class SECScheduler(Scheduler):
    def __init__(self, specs, seed: int = 0, lr: float = 0.5, tau: float = 0.1, q_init: float = 0.0, **kw) -> None:
        super().__init__(specs, seed=seed, **kw)
        if not 0.0 < lr <= 1.0 or tau <= 0:
            raise ValueError(f"sec needs lr in (0, 1] and tau > 0, got lr={lr}, tau={tau}")
        self.lr, self.tau = lr, tau
        self.q = np.full(self.num_envs, q_init, dtype=np.float64)

    def _observe(self, groups) -> None:
        gain = np.zeros(self.num_envs)
        n = np.zeros(self.num_envs)
        for g in groups:
            e = self.env_ids[g.index]
            gain[e] += float(np.mean(np.abs(np.asarray(g.rewards) - g.mean)))
            n[e] += 1
        hit = n > 0
        self.q[hit] = self.lr * gain[hit] / n[hit] + (1 - self.lr) * self.q[hit]

    def env_probabilities(self, remaining: np.ndarray) -> np.ndarray:
        logits = np.where(remaining > 0, self.q / self.tau, -np.inf)
        w = np.exp(logits - logits.max())
        return w / w.sum()

    def _priorities(self, batch_size: int) -> dict[str, np.ndarray]:
        remaining = self.env_sizes.copy()
        take = np.zeros(self.num_envs, dtype=np.int64)
        for _ in range(batch_size):  # one Boltzmann draw per slot
            e = self.rng.choice(self.num_envs, p=self.env_probabilities(remaining))
            take[e] += 1
            remaining[e] -= 1
        within = self.rng.random(self.num_tasks)  # uniform order inside each env
        chosen = np.zeros(self.num_tasks, dtype=bool)
        for e in np.flatnonzero(take).tolist():  # each env's `take` first tasks in that order: O(N), no sort
            members, k = self.env_members[e], int(take[e])
            chosen[members if k >= members.shape[0] else members[np.argpartition(within[members], k - 1)[:k]]] = True
        priority = np.where(chosen, 1.0 + within, within)
        return {"priority": priority, "env_q": self.q[self.env_ids]}

    def _extra_state(self) -> dict:
        return {"q": self.q.copy()}

    def _load_extra_state(self, state: dict) -> None:
        self.q = np.asarray(state["q"], dtype=np.float64).copy()
