"""Translation between a trainer's rows and the scheduler's task indices, shared by the adapters.

A task is identified by its ``(env, task_id)`` pair, read from the data itself, never by the
position of a row: datasets get shuffled, filtered and concatenated, and a position that silently
points at another task would feed one task's rewards to another. Everything here is plain Python
so it can be tested without trl or verl.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envsched_lightning.scheduling.task_table import TaskTable
from envsched_lightning.scheduling import RolloutGroup, TaskSpec

TaskKey = tuple[str, str]
"""``(env, task_id)``: the identity a dataset row carries in its ``env`` and ``task_id`` columns."""

SPEC_FIELDS = ("tools", "state_keys", "verifier", "features", "reward_type")
"""`TaskSpec` fields besides the key that a data row may carry (see `spec_record`)."""


def _key(env: Any, task_id: Any) -> TaskKey:
    if not isinstance(env, str) or not env or not isinstance(task_id, str) or not task_id:
        raise ValueError(f"task ids must be non-empty strings, got env={env!r}, task_id={task_id!r}")
    return env, task_id


def _show(key: TaskKey) -> str:
    return f"{key[0]}/{key[1]}"


class TaskIndex:
    """Scheduler index <-> ``(env, task_id)`` for one scheduler's task pool."""

    def __init__(self, specs: Sequence[TaskSpec] | TaskTable) -> None:
        pairs = specs.key_pairs() if isinstance(specs, TaskTable) else ((s.env, s.task_id) for s in specs)
        self.keys: tuple[TaskKey, ...] = tuple(pairs)
        self._index = {k: i for i, k in enumerate(self.keys)}
        if len(self._index) != len(self.keys):
            raise ValueError("the scheduler's task pool holds the same (env, task_id) twice")

    def __len__(self) -> int:
        return len(self.keys)

    def index(self, env: Any, task_id: Any) -> int:
        key = _key(env, task_id)
        if key not in self._index:
            raise ValueError(f"task {_show(key)} is not in the scheduler's task pool ({len(self)} tasks)")
        return self._index[key]

    def rows(self, keys: Iterable[TaskKey]) -> list[int]:
        """``rows[i]``: the position of scheduler task ``i``'s only row among `keys` (a dataset's ids).

        Raises when a task has no row or two rows; rows of tasks outside the pool are never served.
        """
        seen = unique_rows(keys)
        missing = [k for k in self.keys if k not in seen]
        if missing:
            shown = ", ".join(_show(k) for k in missing[:5])
            raise ValueError(f"{len(missing)} scheduled tasks have no row in the dataset: {shown}")
        return [seen[k] for k in self.keys]


def unique_rows(keys: Iterable[TaskKey]) -> dict[TaskKey, int]:
    """``{(env, task_id): row}`` for a dataset's ids; a task on two rows raises, naming both."""
    seen: dict[TaskKey, int] = {}
    for pos, (env, task_id) in enumerate(keys):
        key = _key(env, task_id)
        if key in seen:
            raise ValueError(f"task {_show(key)} appears in rows {seen[key]} and {pos}; ids must be unique")
        seen[key] = pos
    return seen


@dataclass(frozen=True)
class RewardRange:
    """``[lo, hi]``, the range of a trainer's reward, mapped linearly onto the [0, 1] that
    `Scheduler.update` accepts. Checked when it is built (finite, ``hi > lo``), so a bad declaration
    fails when the trainer or sampler is built, not mid-run; a value outside it at run time is
    clipped to the nearest end and counted (`to_unit`), never raised."""

    lo: float = 0.0
    hi: float = 1.0

    def __post_init__(self) -> None:
        lo, hi = float(self.lo), float(self.hi)
        if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
            raise ValueError(f"reward_range must be [lo, hi] with finite lo < hi, got {[self.lo, self.hi]}")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    @classmethod
    def of(cls, value: RewardRange | Sequence[float]) -> RewardRange:
        """From a `RewardRange` or any ``(lo, hi)`` pair (tuple, list, OmegaConf list)."""
        if isinstance(value, RewardRange):
            return value
        pair = list(value) if not isinstance(value, str | bytes) else []
        if len(pair) != 2:
            raise ValueError(f"reward_range must be a pair [lo, hi], got {value!r}")
        return cls(*pair)

    def to_unit(self, rewards: Iterable[float]) -> tuple[list[float], int]:
        """(each reward mapped to [0, 1], how many lay outside ``[lo, hi]`` and were clipped).

        NaN (a rollout nothing scored) stays NaN for the caller to handle."""
        span, out, clipped = self.hi - self.lo, [], 0
        for r in rewards:
            u = (float(r) - self.lo) / span
            if u < 0.0 or u > 1.0:  # False for NaN
                clipped += 1
                u = min(max(u, 0.0), 1.0)
            out.append(u)
        return out, clipped


def group_rewards(tasks: Sequence[int], rewards: Sequence[float], groups: Sequence[Hashable],
                  lengths: Sequence[float] | None = None) -> list[RolloutGroup]:
    """One `RolloutGroup` per GRPO group, in first-seen order, from per-rollout rows.

    ``tasks[r]`` is row ``r``'s scheduler index, ``groups[r]`` its group id (TRL: the block of
    ``num_generations`` rows; verl: the ``uid``), ``lengths[r]`` (optional) its completion length,
    which the graph's ``log1p(ema_len)`` statistic reads. A group mixing two tasks, or a task split
    over two groups of one batch, raises: either would credit rewards to the wrong task or count
    them twice. Rewards are passed on as given; `Scheduler.update` validates them (NaN, range)
    before any change.
    """
    if not len(tasks) == len(rewards) == len(groups) or (lengths is not None and len(lengths) != len(tasks)):
        raise ValueError(f"{len(tasks)} task ids, {len(rewards)} rewards, {len(groups)} group ids"
                         f"{'' if lengths is None else f' and {len(lengths)} lengths'} differ in length")  # fmt: skip
    if not len(tasks):
        raise ValueError("no rollouts to report")
    task_of: dict[Hashable, int] = {}
    collected: dict[Hashable, list[float]] = {}
    sizes: dict[Hashable, list[float]] = {}
    group_of: dict[int, Hashable] = {}
    for r, (task, reward, group) in enumerate(zip(tasks, rewards, groups)):
        task = int(task)
        if group not in task_of:
            if task in group_of:
                raise ValueError(f"task index {task} appears in two groups ({group_of[task]!r}, {group!r}) of one batch")
            task_of[group], group_of[task] = task, group
            collected[group], sizes[group] = [], []
        elif task_of[group] != task:
            raise ValueError(f"group {group!r} holds rollouts of two tasks ({task_of[group]} and {task})")
        collected[group].append(float(reward))
        if lengths is not None:
            sizes[group].append(float(lengths[r]))
    return [RolloutGroup(task_of[g], tuple(rs), None if lengths is None else tuple(sizes[g]))
            for g, rs in collected.items()]  # fmt: skip


def repeat_layout(chosen: Sequence[int], num_generations: int, num_processes: int, process_index: int) -> list[int]:
    """This process's share of one generation batch laid out as TRL's `RepeatSampler` lays it out.

    The global batch is every chosen item repeated `num_generations` times in a row (whole groups,
    the same order on every rank); process ``p`` holds the ``p``-th contiguous slice, which is how
    TRL slices the gathered rewards and advantages back to each process.
    """
    if num_generations < 1 or num_processes < 1 or not 0 <= process_index < num_processes:
        raise ValueError(f"bad layout: num_generations={num_generations}, process {process_index}/{num_processes}")
    rows = [c for c in chosen for _ in range(num_generations)]
    if len(rows) % num_processes:
        raise ValueError(f"{len(rows)} rollouts do not split evenly over {num_processes} processes")
    share = len(rows) // num_processes
    return rows[process_index * share : (process_index + 1) * share]


def spec_record(spec: TaskSpec) -> dict[str, Any]:
    """A JSON/parquet-friendly dict of `spec` (its key plus `SPEC_FIELDS`), for a data row."""
    return {"env": spec.env, "task_id": spec.task_id, "tools": list(spec.tools), "state_keys": list(spec.state_keys),
            "verifier": spec.verifier, "features": dict(spec.features), "reward_type": spec.reward_type}  # fmt: skip


def spec_fields(env: str, task_id: str, record: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The fields of the `TaskSpec` a data row describes (`TaskTable.from_rows` takes them); fields
    it lacks keep `TaskSpec`'s defaults.

    Parquet may store an absent feature as None (struct columns get the union of keys); those are dropped.
    """
    record = dict(record or {})
    fields = {k: record[k] for k in SPEC_FIELDS if record.get(k) is not None}
    if "features" in fields:
        fields["features"] = {k: v for k, v in dict(fields["features"]).items() if v is not None}
    for name in ("tools", "state_keys"):
        if name in fields:
            fields[name] = tuple(fields[name])
    env, task_id = _key(env, task_id)
    return {"env": env, "task_id": task_id, **fields}

