"""`mopps`: Model-Predictive Prompt Selection (Qu et al. 2025).

Each task's success rate has a Beta posterior updated with fractional counts (alpha += sum r,
beta += sum (1 - r)) and decayed toward the prior, so old evidence fades as the policy changes:
every posterior once per step (`decay_mode="step"`, the default), or a task's own posterior each
time it is observed, before its new evidence is added (`"observation"`, as the MoPPS paper's
recursive update). Selection Thompson-samples rates on a uniform candidate pool of `pool_factor` x
batch (0: every task) and keeps the tasks whose sampled rate is closest to `target` (0.5: the
highest-variance groups).
"""

from __future__ import annotations

import numpy as np

from ..base import Scheduler
from ..registry import register_scheduler


@register_scheduler("mopps")
class MoPPSScheduler(Scheduler):
    def __init__(
        self, specs, seed: int = 0, prior: float = 1.0, decay: float = 0.5, pool_factor: int = 8, target: float = 0.5,
        decay_mode: str = "step", **kw,
    ) -> None:  # fmt: skip
        super().__init__(specs, seed=seed, **kw)
        if prior <= 0 or not 0.0 <= decay <= 1.0 or pool_factor < 0 or not 0.0 < target < 1.0:
            raise ValueError("mopps needs prior > 0, decay in [0, 1], pool_factor >= 0 (0: every task), target in (0, 1)")
        if decay_mode not in ("step", "observation"):
            raise ValueError(f"mopps decay_mode must be 'step' or 'observation', got {decay_mode!r}")
        self.prior, self.decay, self.pool_factor, self.target = prior, decay, pool_factor, target
        self.decay_mode = decay_mode
        self.alpha = np.full(self.num_tasks, prior)
        self.beta = np.full(self.num_tasks, prior)

    def _observe(self, groups) -> None:
        # decay toward the prior (every posterior, or the observed task's), then add this step's evidence
        if self.decay_mode == "step":
            self.alpha = self.decay * self.alpha + (1 - self.decay) * self.prior
            self.beta = self.decay * self.beta + (1 - self.decay) * self.prior
        for g in groups:
            if self.decay_mode == "observation":
                i = g.index
                self.alpha[i] = self.decay * self.alpha[i] + (1 - self.decay) * self.prior
                self.beta[i] = self.decay * self.beta[i] + (1 - self.decay) * self.prior
            s = float(sum(g.rewards))
            self.alpha[g.index] += s
            self.beta[g.index] += len(g.rewards) - s

    def _priorities(self, batch_size: int) -> dict[str, np.ndarray]:
        pool_size = self.num_tasks if self.pool_factor == 0 else min(self.num_tasks, self.pool_factor * batch_size)
        pool = self.rng.choice(self.num_tasks, size=pool_size, replace=False)
        in_pool = np.zeros(self.num_tasks, bool)
        in_pool[pool] = True
        sampled = np.full(self.num_tasks, self.target)
        sampled[pool] = self.rng.beta(self.alpha[pool], self.beta[pool])
        closeness = -np.abs(sampled - self.target)
        return {"priority": closeness, "eligible": in_pool, "sampled_rate": sampled}

    def _extra_state(self) -> dict:
        return {"alpha": self.alpha.copy(), "beta": self.beta.copy()}

    def _load_extra_state(self, state: dict) -> None:
        self.alpha = np.asarray(state["alpha"], dtype=np.float64).copy()
        self.beta = np.asarray(state["beta"], dtype=np.float64).copy()
