"""`plr`: Prioritized Level Replay (Jiang et al. 2021) adapted to GRPO groups.

Departures from the paper: the level score is the latest group reward std (GRPO's learning
signal) instead of the mean positive value loss, and the per-slot "replay or new level" coin
becomes one sampling distribution, ``P = u * uniform(unseen) + (1 - u) * P_replay(seen)`` with
``u`` the unseen share, drawn without replacement (Gumbel-top-k) so constraints apply uniformly.
"""

from __future__ import annotations

import numpy as np

from ..base import Scheduler, gumbel_keys
from ..registry import register_scheduler


@register_scheduler("plr")
class PLRScheduler(Scheduler):
    def __init__(self, specs, seed: int = 0, beta: float = 0.1, rho: float = 0.1, **kw) -> None:
        super().__init__(specs, seed=seed, **kw)
        if beta <= 0 or not 0.0 <= rho <= 1.0:
            raise ValueError(f"plr needs beta > 0 and rho in [0, 1], got beta={beta}, rho={rho}")
        self.beta, self.rho = beta, rho

    def replay_distribution(self) -> np.ndarray:
        """P_replay over seen tasks: rank prioritisation of std mixed with staleness."""
        h = self.history
        seen = h.observed
        p = np.zeros(self.num_tasks)
        if not seen.any():
            return p
        idx = np.flatnonzero(seen)
        scores = h.last_std[idx].astype(np.float64)
        order = np.lexsort((idx, -scores))  # rank 1 = highest std, ties by index
        rank = np.empty(idx.shape[0])
        rank[order] = np.arange(1, idx.shape[0] + 1)
        ps = (1.0 / rank) ** (1.0 / self.beta)
        ps /= ps.sum()
        stale = (h.step - h.last_step[idx]).astype(np.float64)
        pc = stale / stale.sum() if stale.sum() > 0 else np.full(idx.shape[0], 1.0 / idx.shape[0])
        p[idx] = (1 - self.rho) * ps + self.rho * pc
        return p

    def _priorities(self, batch_size: int) -> dict[str, np.ndarray]:
        seen = self.history.observed
        n_unseen = int((~seen).sum())
        u = n_unseen / self.num_tasks
        p = (1 - u) * self.replay_distribution()
        if n_unseen:
            p[~seen] = u / n_unseen
        with np.errstate(divide="ignore"):
            logp = np.log(p)
        return {"priority": gumbel_keys(self.rng, logp), "eligible": p > 0, "sample_prob": p}

    def _extra_state(self) -> dict:
        return {"beta": self.beta, "rho": self.rho}
