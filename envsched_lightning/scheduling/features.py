"""Node features for the task graph: what a task touches and how it is solved (static), and what
its rollouts showed so far (history, with a mask for never-observed tasks).

Sets and feature names are hashed into fixed-width slots (the hashing trick), so any tool
vocabulary, including one never seen before, maps to the same small input width.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

from .history import TaskHistory
from .types import TaskSpec

SET_DIM = 16  # hashed tools / state keys / verifier
NUM_DIM = 8  # hashed numeric features
RT_DIM = 2  # hashed reward type
STATIC_DIM = SET_DIM + NUM_DIM + RT_DIM + 1
HISTORY_DIM = 5


def _slot(name: str, dim: int) -> tuple[int, float]:
    h = zlib.crc32(name.encode())
    return h % dim, 1.0 if (h >> 16) & 1 else -1.0


def static_features(specs: Sequence[TaskSpec]) -> np.ndarray:
    """float32[N, STATIC_DIM]; identical specs give identical rows, whatever their environment."""
    x = np.zeros((len(specs), STATIC_DIM), dtype=np.float32)
    cache: dict[tuple[str, int], tuple[int, float]] = {}

    def slot(name: str, dim: int) -> tuple[int, float]:
        key = (name, dim)
        if key not in cache:
            cache[key] = _slot(name, dim)
        return cache[key]

    for i, s in enumerate(specs):
        names = [f"t:{t}" for t in s.tools] + [f"s:{k}" for k in s.state_keys] + [f"v:{s.verifier}"]
        scale = 1.0 / math.sqrt(len(names))
        for name in names:
            j, sign = slot(name, SET_DIM)
            x[i, j] += sign * scale
        for name, v in s.features.items():
            j, sign = slot(f"f:{name}", NUM_DIM)
            x[i, SET_DIM + j] += sign * math.copysign(math.log1p(abs(v)), v)
        j, sign = slot(f"r:{s.reward_type}", RT_DIM)
        x[i, SET_DIM + NUM_DIM + j] = sign
        x[i, -1] = math.log1p(len(s.tools)) / 3.0
    return x


def pattern_vectors(specs: Sequence[TaskSpec]) -> np.ndarray:
    """float32[N, NUM_DIM + RT_DIM]: execution pattern and reward structure, comparable across envs."""
    x = static_features(specs)
    return np.ascontiguousarray(x[:, SET_DIM : SET_DIM + NUM_DIM + RT_DIM])


def history_features(h: TaskHistory) -> np.ndarray:
    """float32[N, HISTORY_DIM]: observed mask, EMA reward mean and std, log count, zero-variance share.

    Staleness is deliberately left out: it changes for every node every step, which would force a
    full-graph recompute; the scheduler adds it in its coverage bonus instead.
    """
    obs = h.observed
    out = np.zeros((h.num_tasks, HISTORY_DIM), dtype=np.float32)
    out[:, 0] = obs
    out[:, 1] = np.where(obs, h.ema_mean, 0.0)
    out[:, 2] = np.where(obs, 2.0 * h.ema_std, 0.0)  # binary group std peaks at 0.5
    out[:, 3] = np.log1p(h.count) / 3.0
    out[:, 4] = np.where(obs, h.zero_var / np.maximum(h.count, 1), 0.0)
    return out
