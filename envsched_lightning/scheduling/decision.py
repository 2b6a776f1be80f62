"""The record of one `select`: what was chosen and why, for logging and debugging."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

# priority multipliers a scheduler may report per chosen task (1 = not discounted): learning progress
# and reward dependence, rollout cost, environment effects
DISCOUNTS = ("learnability", "cost_factor", "env_factor")

if TYPE_CHECKING:
    from .selection import FillResult
    from .types import TaskSpec


@dataclass
class Decision:
    step: int
    indices: list[int]
    rows: list[dict[str, Any]]  # one per chosen task: env, task_id, priority, components..., penalty
    env_counts: dict[str, int]
    relaxations: list[str] = field(default_factory=list)

    @classmethod
    def build(
        cls, specs: Sequence[TaskSpec], env_ids: np.ndarray, env_names: Sequence[str], step: int, result: FillResult,
        keys: np.ndarray, components: dict[str, np.ndarray],
    ) -> Decision:  # fmt: skip
        """The record of one fill: `env_ids` [N] index `env_names`; `keys` [N] and each component [N]."""
        rows = []
        task_id = specs.task_id if hasattr(specs, "task_id") else (lambda i: specs[i].task_id)  # a TaskTable reads columns
        for pos, i in enumerate(result.indices):
            row: dict[str, Any] = {"index": i, "env": env_names[env_ids[i]], "task_id": task_id(i), "priority": float(keys[i])}
            for name, arr in components.items():
                row[name] = float(arr[i])
            row["penalty"] = float(result.penalties[pos])
            if result.copy_ranks is not None:  # how many of its near-copy group the batch held before it
                row["copy_rank"] = result.copy_ranks[pos]
            rows.append(row)
        counts = np.bincount(env_ids[result.indices], minlength=len(env_names))
        env_counts = {e: int(c) for e, c in zip(env_names, counts)}
        return cls(step, list(result.indices), rows, env_counts, list(result.relaxations))


def decision_summary(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """What a choice's rows say in a few numbers, under the metric names every trainer logs:
    ``copy_repeat_frac`` (the share repeating a near-copy group already in the batch, when the penalty
    has groups) and ``<factor>_mean`` for each of `DISCOUNTS` the rows carry (how much was discounted)."""
    if not rows:
        return {}
    out = {}
    if "copy_rank" in rows[0]:
        out["copy_repeat_frac"] = sum(r["copy_rank"] > 0 for r in rows) / len(rows)
    for name in DISCOUNTS:
        if name in rows[0]:
            out[f"{name}_mean"] = sum(r[name] for r in rows) / len(rows)
    return out
