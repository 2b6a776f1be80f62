"""Reusable batch constraints: environment quotas and a similarity penalty.

They are plain objects that any scheduler accepts through `Scheduler.install`; the batch fill in
`selection.py` consults them. The Lightning callbacks only build and install these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from .near_copies import near_copy_groups
from .similarity import SimilarityUnion, SparseSimilarity, task_similarity
from .task_table import as_task_table
from .types import TaskSpec


class EnvQuota:
    """Minimum and maximum share of each batch per environment, plus a no-starvation rule.

    Default cap: no environment above ``max(2 x its task share, floor)`` of the batch. Every
    environment that still has eligible (learnable) tasks gets at least one slot if it went
    `starvation_steps` batches without one. When shares cannot all be met, the smallest relaxation
    is applied and recorded in `relaxations` for the step (never silently).
    """

    def __init__(
        self,
        min_share: float = 0.0,
        max_share: float | None = None,
        floor: float = 0.2,
        starvation_steps: int = 4,
        per_env: Mapping[str, Mapping[str, float]] | None = None,
    ) -> None:
        if not 0.0 <= min_share <= 1.0:
            raise ValueError(f"min_share must be in [0, 1], got {min_share}")
        if max_share is not None and not 0.0 < max_share <= 1.0:
            raise ValueError(f"max_share must be in (0, 1], got {max_share}")
        if not 0.0 < floor <= 1.0:
            raise ValueError(f"floor must be in (0, 1], got {floor}")
        if starvation_steps < 1:
            raise ValueError(f"starvation_steps must be >= 1, got {starvation_steps}")
        self.min_share, self.max_share, self.floor = min_share, max_share, floor
        self.starvation_steps = starvation_steps
        self.per_env = {str(k): dict(v) for k, v in (per_env or {}).items()}
        for env, o in self.per_env.items():
            unknown = set(o) - {"min_share", "max_share"}
            if unknown:
                raise ValueError(f"quota per_env[{env!r}]: unknown keys {sorted(unknown)}")
            lo, hi = o.get("min_share", min_share), o.get("max_share", 1.0)
            if not (0.0 <= lo <= 1.0 and 0.0 < hi <= 1.0 and lo <= hi):
                raise ValueError(f"quota per_env[{env!r}]: need 0 <= min_share <= max_share <= 1, got {o}")
        self.env_names: tuple[str, ...] = ()
        self.since_seen = np.zeros(0, dtype=np.int64)
        self.relaxations: list[str] = []
        self.last_limits: tuple[np.ndarray, np.ndarray] | None = None

    def bind(self, env_names: Sequence[str], env_sizes: np.ndarray) -> None:
        unknown = set(self.per_env) - set(env_names)
        if unknown:
            raise ValueError(f"quota per_env names unknown environments {sorted(unknown)}; known: {list(env_names)}")
        self.env_names = tuple(env_names)
        share = env_sizes / env_sizes.sum()
        default_max = np.maximum(2.0 * share, self.floor) if self.max_share is None else np.full(len(share), self.max_share)
        self.max_shares = np.array(
            [self.per_env.get(e, {}).get("max_share", default_max[i]) for i, e in enumerate(env_names)], dtype=np.float64
        )
        self.min_shares = np.array(
            [self.per_env.get(e, {}).get("min_share", self.min_share) for e in env_names], dtype=np.float64
        )
        if self.min_shares.sum() > 1.0 + 1e-9:
            raise ValueError(f"quota min_share values sum to {self.min_shares.sum():.3f} > 1: cannot be met")
        self.since_seen = np.zeros(len(env_names), dtype=np.int64)

    def limits(self, batch_size: int, available: np.ndarray, learnable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-environment (min, max) slot counts for one batch of `batch_size`."""
        self.relaxations = []
        hi = np.minimum(np.floor(self.max_shares * batch_size + 1e-9).astype(np.int64), available)
        hi = np.maximum(hi, np.minimum(1, available))
        if hi.sum() < batch_size:  # caps too tight for this batch: raise them in proportion
            self.relaxations.append(f"max shares allow {int(hi.sum())} < batch {batch_size}; caps raised")
            while hi.sum() < batch_size:
                room = available - hi
                grow = np.flatnonzero(room > 0)
                hi[grow[np.argmin(hi[grow] / np.maximum(self.max_shares[grow], 1e-9))]] += 1
        lo = np.minimum(np.ceil(self.min_shares * batch_size - 1e-9).astype(np.int64), hi)
        starving = (self.since_seen >= self.starvation_steps - 1) & learnable & (available > 0)
        lo = np.where(starving, np.maximum(lo, 1), lo)
        lo = np.minimum(lo, hi)
        while lo.sum() > batch_size:  # more minimum slots than the batch: drop the most-served first
            cand = np.flatnonzero(lo > 0)
            drop = cand[np.argmin(self.since_seen[cand])]
            lo[drop] -= 1
            self.relaxations.append(f"min slots exceed batch; {self.env_names[drop]} lost one")
        self.last_limits = (lo.copy(), hi.copy())
        return lo, hi

    def violations(self, env_counts: Mapping[str, int]) -> list[str]:
        """Environments whose count in a batch lies outside the slot range of the last `limits` call."""
        if self.last_limits is None:
            return []
        lo, hi = self.last_limits
        out = []
        for e, name in enumerate(self.env_names):
            n = int(env_counts.get(name, 0))
            if not lo[e] <= n <= hi[e]:
                out.append(f"{name}: {n} tasks, allowed {lo[e]}..{hi[e]}")
        return out

    def observe_batch(self, env_counts: np.ndarray) -> None:
        self.since_seen = np.where(env_counts > 0, 0, self.since_seen + 1)

    def state_dict(self) -> dict:
        return {"since_seen": self.since_seen.copy()}

    def load_state_dict(self, state: dict) -> None:
        self.since_seen = np.asarray(state["since_seen"], dtype=np.int64).copy()


class SimilarityPenalty:
    """Reduce a candidate's priority by ``lam * max similarity to the tasks already in the batch``,
    and, with `copy_decay` < 1, count the k-th near-copy of a group in one batch for `copy_decay`^(k-1)
    of its priority, however large the group (`near_copies.py`).

    The similarity is sparse (graph neighbours only), so the penalty costs O(k) per chosen task.
    Its source is the scheduler's task graph when it has one (envsched), else a kNN graph over
    tool/state/verifier overlap built here. A kNN graph reaches only k of a cluster's copies; the
    near-copy groups reach all of them, at O(1) per chosen task.
    """

    def __init__(self, lam: float = 0.5, k: int = 10, scale: str | float = "auto", copy_decay: float = 1.0,
                 copy_threshold: float = 0.6) -> None:  # fmt: skip
        if lam < 0 or not math.isfinite(lam):
            raise ValueError(f"lam must be a finite non-negative number, got {lam}")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not 0.0 <= copy_decay <= 1.0:
            raise ValueError(f"copy_decay must be in [0, 1] (1: near-copies not discounted), got {copy_decay}")
        if not 0.0 < copy_threshold <= 1.0:
            raise ValueError(f"copy_threshold must be in (0, 1], got {copy_threshold}")
        self.lam, self.k, self.scale = float(lam), int(k), scale
        self.copy_decay, self.copy_threshold = float(copy_decay), float(copy_threshold)
        self.similarity: SparseSimilarity | SimilarityUnion | None = None
        self.copy_groups: np.ndarray | None = None  # int64[N]: each task's near-copy group (with copy_decay < 1)

    def bind(self, specs: Sequence[TaskSpec], source: SparseSimilarity | None) -> None:
        self.similarity = source if source is not None else task_similarity(specs, k=self.k)
        if self.copy_decay < 1.0:
            self.copy_groups = near_copy_groups(as_task_table(specs), self.copy_threshold)

    def weight(self, priority_spread: float) -> float:
        """Penalty weight in priority units: ``lam`` times the spread of priorities if ``scale='auto'``."""
        if self.scale == "auto":
            return self.lam * max(priority_spread, 1e-12)
        return self.lam * float(self.scale)
