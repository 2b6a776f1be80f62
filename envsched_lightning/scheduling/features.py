"""Node features for the task graph: what a task touches and how it is solved (static), and what
its rollouts showed so far (history, with a mask for never-observed tasks).

Sets and feature names are hashed into fixed-width slots (the hashing trick), so any tool
vocabulary, including one never seen before, maps to the same small input width.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from .history import TaskHistory
from .task_table import TaskTable, as_task_table
from .types import TaskSpec

SET_DIM = 16  # hashed tools / state keys / verifier
NUM_DIM = 8  # hashed numeric features
RT_DIM = 2  # hashed reward type
STATIC_DIM = SET_DIM + NUM_DIM + RT_DIM + 1
HISTORY_DIM = 5


def _slot(name: str, dim: int) -> tuple[int, float]:
    h = zlib.crc32(name.encode())
    return h % dim, 1.0 if (h >> 16) & 1 else -1.0


def hashed_codes(vocab: Sequence[str], codes: np.ndarray, prefix: str) -> np.ndarray:
    """uint32[len(codes)]: crc32 of ``prefix + vocab[code]`` for each code, each string hashed once."""
    uniq, inverse = np.unique(codes, return_inverse=True)
    hashes = np.fromiter((zlib.crc32(f"{prefix}{vocab[c]}".encode()) for c in uniq.tolist()), np.uint32, count=uniq.size)
    return hashes[inverse.reshape(-1)]


def _slots(hashes: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(slot int64, sign float64) of crc32 hashes: the hashing trick of `_slot`, vectorised."""
    h = hashes.astype(np.int64)
    return h % dim, np.where((h >> 16) & 1, 1.0, -1.0)


def static_features(specs: Sequence[TaskSpec] | TaskTable) -> np.ndarray:
    """float32[N, STATIC_DIM]; identical specs give identical rows, whatever their environment.

    Computed from the table's columns in O(tokens) array passes; each cell adds its terms in the
    task's token order in float32 (`np.add.at`), so the values do not depend on how the table was built."""
    t = as_task_table(specs)
    n = len(t)
    x = np.zeros((n, STATIC_DIM), dtype=np.float32)
    indptr, kind, code = t.token_lists(("tools", "state_keys", "verifier"))
    hashes = np.empty(code.shape[0], np.uint32)
    for k, prefix in enumerate(("t:", "s:", "v:")):
        sel = kind == k
        hashes[sel] = hashed_codes(t.vocab, code[sel], prefix)
    rows = np.repeat(np.arange(n), np.diff(indptr))
    slot, sign = _slots(hashes, SET_DIM)
    scale = 1.0 / np.sqrt(np.diff(indptr).astype(np.float64))  # every task names its verifier: >= 1 token
    np.add.at(x.reshape(-1), rows * STATIC_DIM + slot, (sign * scale[rows]).astype(np.float32))
    x[:, SET_DIM : SET_DIM + NUM_DIM + RT_DIM] = pattern_vectors(t)
    x[:, -1] = np.log1p(np.diff(t.tools[0]).astype(np.float64)) / 3.0
    return x


def pattern_vectors(specs: Sequence[TaskSpec] | TaskTable) -> np.ndarray:
    """float32[N, NUM_DIM + RT_DIM]: execution pattern and reward structure, comparable across envs
    (the middle columns of `static_features`, computed alone: the graph build needs only these)."""
    t = as_task_table(specs)
    n = len(t)
    width = NUM_DIM + RT_DIM
    x = np.zeros((n, width), dtype=np.float32)
    fptr, fname, fvalue = t.features
    if fname.size:
        frows = np.repeat(np.arange(n), np.diff(fptr))
        slot, sign = _slots(hashed_codes(t.vocab, fname, "f:"), NUM_DIM)
        value = sign * np.copysign(np.log1p(np.abs(fvalue)), fvalue)
        np.add.at(x.reshape(-1), frows * width + slot, value.astype(np.float32))
    slot, sign = _slots(hashed_codes(t.vocab, t.reward_type, "r:"), RT_DIM)
    x[np.arange(n), NUM_DIM + slot] = sign
    return x


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
