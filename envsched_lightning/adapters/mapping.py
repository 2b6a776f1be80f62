"""Translation between a trainer's rows and the scheduler's task indices, shared by the adapters.

A task is identified by its ``(env, task_id)`` pair, read from the data itself, never by the
position of a row: datasets get shuffled, filtered and concatenated, and a position that silently
points at another task would feed one task's rewards to another. Everything here is plain Python
so it can be tested without trl or verl.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from envsched_lightning.scheduling import RolloutGroup, TaskSpec
from envsched_lightning.scheduling.task_table import TaskTable, as_task_table, key_hashes

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
    """Scheduler index <-> ``(env, task_id)`` for one scheduler's task pool.

    Kept as the pool's `TaskTable` and its keys' hashes in sorted order: a million tasks cost two
    arrays, not a million key tuples and a dict. A lookup hashes the asked key, finds it by
    binary search and compares its bytes and environment, so two keys never pass for one."""

    def __init__(self, specs: Sequence[TaskSpec] | TaskTable) -> None:
        self.table = as_task_table(specs)  # a repeated (env, task_id) raises here
        hashes = self.table.key_hashes()
        self._order = np.argsort(hashes, kind="stable")
        self._sorted = hashes[self._order]
        self._env_code = {name: e for e, name in enumerate(self.table.env_names)}

    def __len__(self) -> int:
        return len(self.table)

    def key(self, i: int) -> TaskKey:
        """Task ``i``'s ``(env, task_id)``."""
        return self.table.env_names[int(self.table.env_ids[i])], self.table.task_id(int(i))

    @property
    def keys(self) -> tuple[TaskKey, ...]:
        """Every task's key, in index order (builds one tuple per task: for small pools and tests)."""
        return tuple(self.table.key_pairs())

    def index(self, env: Any, task_id: Any) -> int:
        return int(self.indices([(env, task_id)])[0])

    def indices(self, keys: Iterable[TaskKey]) -> np.ndarray:
        """int64 task index of each key; one not in the pool raises, naming it."""
        asked = _KeyBuffer.of(keys, self._env_code)
        found = self._lookup(asked)
        if (found < 0).any():
            key = asked.key(int(np.flatnonzero(found < 0)[0]))
            raise ValueError(f"task {_show(key)} is not in the scheduler's task pool ({len(self)} tasks)")
        return found

    def rows(self, keys: Iterable[TaskKey]) -> np.ndarray:
        """``rows[i]``: the position of scheduler task ``i``'s only row among `keys` (a dataset's ids).

        Raises when a task has no row or two rows; rows of tasks outside the pool are never served.
        Columnar: the dataset's ids are packed into one buffer and matched by hash, not a dict.
        """
        asked = _KeyBuffer.of(keys, self._env_code)
        asked.check_unique()
        found = self._lookup(asked)
        rows = np.full(len(self), -1, dtype=np.int64)
        hit = np.flatnonzero(found >= 0)
        rows[found[hit]] = hit
        missing = np.flatnonzero(rows < 0)
        if missing.size:
            shown = ", ".join(_show(self.key(int(i))) for i in missing[:5])
            raise ValueError(f"{missing.size} scheduled tasks have no row in the dataset: {shown}")
        return rows

    def _lookup(self, asked: _KeyBuffer) -> np.ndarray:
        """Pool index of each asked key, -1 where the pool has none."""
        h = asked.hashes()
        at = np.minimum(np.searchsorted(self._sorted, h), max(len(self) - 1, 0))
        found = np.full(h.shape[0], -1, dtype=np.int64)
        if not len(self):
            return found
        cand = np.flatnonzero(self._sorted[at] == h)
        task = self._order[at[cand]]
        same = _same_bytes(asked.buf, asked.starts, cand, self.table.keys, self.table.key_starts, task)
        same &= asked.env[cand] == self.table.env_ids[task]
        found[cand[same]] = task[same]
        # two keys of one hash (odds about 3 in 10^8 for a million tasks): compare with each pool key of it
        for j in cand[~same].tolist():
            lo, hi = np.searchsorted(self._sorted, h[j], "left"), np.searchsorted(self._sorted, h[j], "right")
            for i in self._order[lo:hi].tolist():
                if self.key(i) == asked.key(j):
                    found[j] = i
        return found


class _KeyBuffer:
    """Keys ``(env, task_id)`` packed as the pool packs its own (``env/task_id`` + NUL in one buffer)
    with each key's environment code (-1: no such environment in the pool) and the byte length of
    its environment name (to split the key again)."""

    def __init__(self, buf: bytes, starts: np.ndarray, env: np.ndarray, env_len: np.ndarray) -> None:
        self.buf, self.starts, self.env, self.env_len = buf, starts, env, env_len

    @classmethod
    def of(cls, keys: Iterable[TaskKey], env_code: Mapping[str, int]) -> _KeyBuffer:
        buf, ends, env, env_len = bytearray(), array("q", [0]), array("i"), array("i")
        for pair in keys:
            e, t = _key(*pair)
            name = e.encode()
            buf += name + b"/" + t.encode() + b"\0"
            ends.append(len(buf))
            env.append(env_code.get(e, -1))
            env_len.append(len(name))
        return cls(bytes(buf), np.frombuffer(ends, dtype=np.int64), np.frombuffer(env, dtype=np.int32),
                   np.frombuffer(env_len, dtype=np.int32))  # fmt: skip

    def __len__(self) -> int:
        return self.starts.shape[0] - 1

    def key(self, j: int) -> TaskKey:
        raw, cut = self.buf[self.starts[j] : self.starts[j + 1] - 1], int(self.env_len[j])
        return raw[:cut].decode(), raw[cut + 1 :].decode()

    def hashes(self) -> np.ndarray:
        return key_hashes(self.buf, self.starts)

    def check_unique(self) -> None:
        """A task on two rows raises, naming the first such pair of rows in row order."""
        h = self.hashes()
        order = np.argsort(h, kind="stable")
        tie = np.flatnonzero(h[order][1:] == h[order][:-1])
        first, second = order[tie], order[tie + 1]
        same = _same_bytes(self.buf, self.starts, first, self.buf, self.starts, second)
        same &= self.env[first] == self.env[second]
        if same.any():
            j = int(np.argmin(np.where(same, second, len(self))))
            a, b = int(first[j]), int(second[j])
            raise ValueError(f"task {_show(self.key(a))} appears in rows {a} and {b}; ids must be unique")


def _same_bytes(buf_a: bytes, starts_a: np.ndarray, a: np.ndarray, buf_b: bytes, starts_b: np.ndarray,
                b: np.ndarray, block: int = 1 << 16) -> np.ndarray:  # fmt: skip
    """bool per pair: key ``a[k]`` of `buf_a` has the same bytes as key ``b[k]`` of `buf_b`."""
    len_a = starts_a[a + 1] - starts_a[a]
    same = len_a == starts_b[b + 1] - starts_b[b]
    bytes_a, bytes_b = np.frombuffer(buf_a, np.uint8), np.frombuffer(buf_b, np.uint8)
    for lo in range(0, a.shape[0], block):
        k = lo + np.flatnonzero(same[lo : lo + block])
        lens = len_a[k]
        seg = np.repeat(np.arange(k.shape[0]), lens)
        within = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        differ = bytes_a[starts_a[a[k]][seg] + within] != bytes_b[starts_b[b[k]][seg] + within]
        same[k[np.unique(seg[differ])]] = False
    return same


def require_unique_rows(keys: Iterable[TaskKey]) -> None:
    """Raise if a task is on two rows, naming both (as `unique_rows`), without a dict of the keys."""
    _KeyBuffer.of(keys, {}).check_unique()


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
    which the graph's ``log1p(ema_len)`` statistic reads and which is also the rollout's cost in
    tokens (`RolloutGroup.tokens`: what generation paid for). A group mixing two tasks, or a task split
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
    return [RolloutGroup(task_of[g], tuple(rs), *((None, None) if lengths is None else (tuple(sizes[g]),) * 2))
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

