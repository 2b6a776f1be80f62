"""The record of one `select`: what was chosen and why, for logging and debugging."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .base import Scheduler
    from .selection import FillResult


@dataclass
class Decision:
    step: int
    indices: list[int]
    rows: list[dict[str, Any]]  # one per chosen task: env, task_id, priority, components..., penalty
    env_counts: dict[str, int]
    relaxations: list[str] = field(default_factory=list)

    @classmethod
    def build(
        cls, sched: Scheduler, step: int, result: FillResult, keys: np.ndarray, components: dict[str, np.ndarray]
    ) -> Decision:
        rows = []
        for pos, i in enumerate(result.indices):
            spec = sched.specs[i]
            row: dict[str, Any] = {"index": i, "env": spec.env, "task_id": spec.task_id, "priority": float(keys[i])}
            for name, arr in components.items():
                row[name] = float(arr[i])
            row["penalty"] = float(result.penalties[pos])
            rows.append(row)
        counts = np.bincount(sched.env_ids[result.indices], minlength=sched.num_envs)
        env_counts = {e: int(c) for e, c in zip(sched.env_names, counts)}
        return cls(step, list(result.indices), rows, env_counts, list(result.relaxations))
