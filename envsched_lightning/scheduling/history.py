"""Per-task rollout history kept as flat arrays, so 1M tasks cost a few MB and O(1) per update."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .types import ZERO_STD_EPS, RolloutGroup, group_stats


class TaskHistory:
    """What the trainer has already paid for: counts, latest and EMA reward statistics per task.

    Every scheduler reads this one record instead of keeping its own copy; `step` is the number
    of `update` calls, and `last_step` (-1 = never) gives staleness.
    """

    ARRAYS = ("count", "last_step", "last_mean", "last_std", "ema_mean", "ema_std", "ema_len", "zero_var")

    def __init__(self, num_tasks: int, ema: float = 0.5) -> None:
        if not 0.0 < ema <= 1.0:
            raise ValueError(f"ema must be in (0, 1], got {ema}")
        self.ema = ema
        self.step = 0
        self.count = np.zeros(num_tasks, dtype=np.int64)  # groups observed
        self.last_step = np.full(num_tasks, -1, dtype=np.int64)
        self.last_mean = np.zeros(num_tasks, dtype=np.float32)
        self.last_std = np.zeros(num_tasks, dtype=np.float32)
        self.ema_mean = np.zeros(num_tasks, dtype=np.float32)
        self.ema_std = np.zeros(num_tasks, dtype=np.float32)
        self.ema_len = np.zeros(num_tasks, dtype=np.float32)
        self.zero_var = np.zeros(num_tasks, dtype=np.int64)  # zero-variance groups observed
        self._observed: tuple[int, np.ndarray] | None = None

    @property
    def num_tasks(self) -> int:
        return int(self.count.shape[0])

    @property
    def observed(self) -> np.ndarray:
        """bool[N]: tasks with at least one group (cached per step: read several times a step)."""
        if self._observed is None or self._observed[0] != self.step:
            self._observed = (self.step, self.count > 0)
        return self._observed[1]

    def staleness(self) -> np.ndarray:
        """Updates since each task was last observed; never-observed tasks get ``step + 1``."""
        return np.where(self.last_step >= 0, self.step - self.last_step, self.step + 1)

    def record(self, groups: Sequence[RolloutGroup]) -> None:
        """Fold one step's (already validated) groups into the history and advance the clock.
        A task that appears twice in one step is folded twice, in order."""
        self.step += 1
        index, mean, std, length = group_stats(groups)
        pending = np.arange(index.shape[0])
        while pending.size:  # one pass per repetition of a task within the step (usually one)
            _, first = np.unique(index[pending], return_index=True)
            rows, pending = pending[first], np.delete(pending, first)
            self._fold(index[rows], mean[rows], std[rows], length[rows])
        self._observed = None

    def _fold(self, i: np.ndarray, mean: np.ndarray, std: np.ndarray, length: np.ndarray) -> None:
        """Fold groups of distinct tasks `i` into the arrays."""
        a = np.where(self.count[i] == 0, 1.0, self.ema)
        self.ema_mean[i] = a * mean + (1 - a) * self.ema_mean[i]
        self.ema_std[i] = a * std + (1 - a) * self.ema_std[i]
        has_len = ~np.isnan(length)
        li = i[has_len]
        self.ema_len[li] = a[has_len] * length[has_len] + (1 - a[has_len]) * self.ema_len[li]
        self.count[i] += 1
        self.zero_var[i] += (std < ZERO_STD_EPS).astype(np.int64)
        self.last_step[i] = self.step
        self.last_mean[i] = mean
        self.last_std[i] = std

    def state_dict(self) -> dict:
        return {"step": self.step, "ema": self.ema, **{k: getattr(self, k).copy() for k in self.ARRAYS}}

    def load_state_dict(self, state: dict) -> None:
        arrays = {}
        for k in self.ARRAYS:  # every array is checked before any is set
            arr = np.asarray(state[k])
            if arr.shape != getattr(self, k).shape:
                raise ValueError(f"history.{k}: shape {arr.shape} does not match {getattr(self, k).shape}")
            if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
                raise ValueError(f"history.{k}: {int((~np.isfinite(arr)).sum())} non-finite values")
            arrays[k] = arr.astype(getattr(self, k).dtype, copy=True)
        if not np.isfinite(float(state["ema"])):
            raise ValueError(f"history.ema: non-finite {state['ema']!r}")
        for k, arr in arrays.items():
            setattr(self, k, arr)
        self._observed = None
        self.step = int(state["step"])
        self.ema = float(state["ema"])
