"""Rollout cost per task, from the tokens rollouts report, so informativeness can be ranked per token.

A task that takes 30 turns costs as much as ten that take 3; a variance-seeking scheduler that
ignores it pays for its informative groups at very different prices. `RolloutCost` keeps each
task's tokens per rollout (an EMA over its groups, as `TaskHistory` keeps rewards) and, for tasks
never run, its environment's mean over the tasks that were (else the pool's). `factor` turns cost
into a priority multiplier: (reference / cost)^power, the reference being the pool's typical cost
(the geometric mean over environments), clipped to [floor, 1 / floor] so a long-horizon environment
keeps at least `floor` of its priority (and the quotas' starvation rule still gives it slots).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .types import RolloutGroup, group_tokens


class RolloutCost:
    """Per-task tokens per rollout as flat arrays (O(batch) per update, O(N) per estimate)."""

    def __init__(self, env_ids: np.ndarray, num_envs: int, power: float = 0.5, floor: float = 0.25,
                 ema: float = 0.5) -> None:  # fmt: skip
        if not 0.0 <= power <= 2.0 or not 0.0 < floor <= 1.0:
            raise ValueError(f"cost power must be in [0, 2] and cost_floor in (0, 1]; got {power}, {floor}")
        self.env_ids, self.num_envs = env_ids, num_envs
        self.power, self.floor, self.ema = power, floor, ema
        self.tokens = np.zeros(env_ids.shape[0])  # EMA of mean tokens per rollout; 0: never reported
        self.known = np.zeros(env_ids.shape[0], dtype=bool)

    def observe(self, groups: Sequence[RolloutGroup]) -> None:
        index = np.fromiter((g.index for g in groups), dtype=np.int64, count=len(groups))
        tokens = group_tokens(groups)
        for i, t in zip(index[~np.isnan(tokens)], tokens[~np.isnan(tokens)]):  # in order: a repeat folds twice
            self.tokens[i] = t if not self.known[i] else self.ema * t + (1 - self.ema) * self.tokens[i]
            self.known[i] = True

    def estimate(self) -> np.ndarray:
        """float[N]: tokens per rollout, a task's own where it was run, else its environment's mean,
        else the pool's; NaN while nothing was reported."""
        if not self.known.any():
            return np.full(self.env_ids.shape[0], np.nan)
        known = np.flatnonzero(self.known)
        env = self.env_ids[known]
        n = np.bincount(env, minlength=self.num_envs)
        total = np.bincount(env, weights=self.tokens[known], minlength=self.num_envs)
        per_env = np.where(n > 0, total / np.maximum(n, 1), self.tokens[known].mean())
        out = per_env[self.env_ids]
        out[known] = self.tokens[known]
        return out

    def factor(self) -> np.ndarray:
        """float[N] in [floor, 1 / floor]: (typical cost / task cost)^power; 1 while nothing was reported."""
        cost = self.estimate()
        if self.power == 0 or np.isnan(cost[0]):
            return np.ones(self.env_ids.shape[0])
        cost = np.maximum(cost, 1.0)
        env_mean = np.bincount(self.env_ids, weights=np.log(cost), minlength=self.num_envs) / np.maximum(
            np.bincount(self.env_ids, minlength=self.num_envs), 1)
        reference = float(np.exp(env_mean[np.bincount(self.env_ids, minlength=self.num_envs) > 0].mean()))
        return np.clip((reference / cost) ** self.power, self.floor, 1.0 / self.floor)

    def state_dict(self) -> dict:
        return {"tokens": self.tokens.copy(), "known": self.known.copy()}

    def load_state_dict(self, state: dict) -> None:
        tokens = np.asarray(state["tokens"], dtype=np.float64)
        known = np.asarray(state["known"], dtype=bool)
        if tokens.shape != self.tokens.shape or known.shape != self.known.shape or not np.isfinite(tokens).all():
            raise ValueError(f"cost: shapes {tokens.shape}, {known.shape} (expected {self.tokens.shape}) or non-finite tokens")
        self.tokens, self.known = tokens.copy(), known.copy()
