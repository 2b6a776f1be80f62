"""`TaskSpec`s for a plain dataset, and a warning when they tell the scheduler nothing.

envsched links tasks that touch the same tools, state or verifier (intra-environment edges,
weighted by overlap) and describes each task by hashed tools, numeric features and reward type
(node features). Specs built from ``env`` and ``task_id`` alone give every task of an environment
the same description: all intra edges weigh 1.0 and node features are identical, so until a task
has been tried, nothing but its environment sets it apart. `specs_from_rows` reads the usual
columns instead, and `warn_if_unstructured` says so when a pool has no structure to use.
"""

from __future__ import annotations

import json
import math
import numbers
import warnings
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from envsched_lightning.scheduling import TaskSpec
from envsched_lightning.scheduling.task_table import TaskTable

_DEFAULTS = {"tools": "tools", "state_keys": "state_keys", "verifier": "verifier", "reward_type": "reward_type"}


def tool_names(value: Any) -> tuple[str, ...]:
    """Tool names from a ``tools`` cell: names, OpenAI/TRL tool schemas (``{"type": "function",
    "function": {"name": ...}}`` or ``{"name": ...}``), one name, or any of these as a JSON string."""
    if value is None:
        return ()
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return ()
        return tool_names(json.loads(text)) if text[0] in "[{" else (text,)
    if isinstance(value, Mapping):
        inner = value.get("function")
        name = (inner if isinstance(inner, Mapping) else value).get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a tool schema without a name: {dict(value)!r}")
        return (name,)
    if isinstance(value, Iterable):
        return tuple(name for item in value for name in tool_names(item))
    raise ValueError(f"cannot read tool names from {value!r}")


def _columns(rows: Any) -> tuple[list[str], Any]:
    """(column names, a getter ``col -> list``) for a `datasets.Dataset`, a dict of columns, or row dicts."""
    if hasattr(rows, "column_names"):  # datasets.Dataset: read whole columns, never row by row
        return list(rows.column_names), lambda c: list(rows[c])
    if isinstance(rows, Mapping):
        return list(rows), lambda c: list(rows[c])
    rows = list(rows)
    names = list(dict.fromkeys(k for r in rows for k in r))
    return names, lambda c: [r.get(c) for r in rows]


def _number(value: Any, column: str, pos: int) -> float | None:
    if value is None:
        return None
    if not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise ValueError(f"row {pos}: feature column {column!r} holds {value!r}, not a finite number")
    return float(value)


def specs_from_rows(rows: Any, *, env: str = "env", task_id: str = "task_id", tools: str | None = "tools",
                    state_keys: str | None = "state_keys", verifier: str | None = "verifier",
                    reward_type: str | None = "reward_type", features: Sequence[str] | Mapping[str, str] = (),
                    warn: bool = True) -> TaskTable:  # fmt: skip
    """One task per row of `rows` (a `datasets.Dataset`, a dict of columns, or row dicts), as a
    `TaskTable`: the specs as columns, a `Sequence[TaskSpec]` whose items are built on demand, so
    a million-row dataset never becomes a million objects.

    Each argument names the column a field comes from; None skips it. ``tools``: tool names or
    tool schemas (see `tool_names`); ``state_keys``: names of the state a task reads or writes;
    ``verifier`` and ``reward_type``: strings (e.g. ``"exact_match"``, ``"binary"`` /
    ``"continuous"``); ``features``: numeric columns (a list, or ``{feature name: column}``), an
    empty cell leaves that feature out. A column left at its default name may be absent; one named
    explicitly must exist. With `warn`, `warn_if_unstructured` checks the result.
    """
    names, column = _columns(rows)
    for field, name in (("env", env), ("task_id", task_id)):
        if name not in names:
            raise ValueError(f"no {name!r} column ({field}); columns: {names}")
    feats = dict(features) if isinstance(features, Mapping) else {c: c for c in features}
    fields = {f: c for f, c in dict(tools=tools, state_keys=state_keys, verifier=verifier, reward_type=reward_type).items()
              if c is not None and (c in names or c != _DEFAULTS[f])}  # fmt: skip
    missing = [c for c in [*fields.values(), *feats.values()] if c not in names]
    if missing:
        raise ValueError(f"no column(s) {missing}; columns: {names}")
    envs, ids = column(env), column(task_id)
    data = {f: column(c) for f, c in fields.items()}
    feat_data = {f: column(c) for f, c in feats.items()}

    def row(pos: int, e: Any, t: Any) -> dict[str, Any]:
        kw: dict[str, Any] = {"env": str(e), "task_id": str(t)}
        if "tools" in data:
            kw["tools"] = tool_names(data["tools"][pos])
        if "state_keys" in data and data["state_keys"][pos] is not None:
            cell = data["state_keys"][pos]
            kw["state_keys"] = (cell,) if isinstance(cell, str) else tuple(str(k) for k in cell)
        for f in ("verifier", "reward_type"):
            if f in data and data[f][pos] is not None:
                kw[f] = str(data[f][pos])
        values = {f: _number(v[pos], feats[f], pos) for f, v in feat_data.items()}
        kw["features"] = {f: v for f, v in values.items() if v is not None}
        return kw

    specs = TaskTable.from_rows(row(pos, e, t) for pos, (e, t) in enumerate(zip(envs, ids, strict=True)))
    if warn:
        warn_if_unstructured(specs)
    return specs


def _signature(spec: TaskSpec) -> tuple:
    return (frozenset(spec.tools), frozenset(spec.state_keys), spec.verifier,
            tuple(sorted(spec.features.items())), spec.reward_type)  # fmt: skip


def unstructured_envs(specs: Sequence[TaskSpec] | TaskTable) -> list[str]:
    """The environments of two or more tasks whose specs are all alike (same tools, state keys,
    verifier, features and reward type): envsched can tell their untried tasks apart only by
    environment."""
    if isinstance(specs, TaskTable):
        return _unstructured_table(specs)
    first: dict[str, tuple] = {}
    size: dict[str, int] = {}
    varied: set[str] = set()
    for s in specs:
        size[s.env] = size.get(s.env, 0) + 1
        if s.env in varied:
            continue
        sig = _signature(s)
        if first.setdefault(s.env, sig) != sig:
            varied.add(s.env)
    return [e for e in first if e not in varied and size[e] > 1]


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: uint64 -> well-spread uint64 (wrapping)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _unstructured_table(t: TaskTable) -> list[str]:
    """`unstructured_envs` from the columns: each task's signature is a 64-bit hash of its sets of
    tools and state keys, verifier, features and reward type (sums of element hashes, so order and
    repeats within a set do not count), compared within each environment in one pass."""
    n = len(t)
    sig = np.zeros(n, np.uint64)
    with np.errstate(over="ignore"):
        for salt, (ptr, codes) in enumerate((t.tools, t.state_keys), 1):
            rows = np.repeat(np.arange(n, dtype=np.uint64), np.diff(ptr))
            pairs = np.unique((rows << np.uint64(32)) | codes.astype(np.uint64))  # a set: repeats once
            np.add.at(sig, pairs >> np.uint64(32), _mix((pairs & np.uint64(0xFFFFFFFF)) + np.uint64(salt << 40)))
        fptr, fname, fvalue = t.features
        frows = np.repeat(np.arange(n), np.diff(fptr))
        np.add.at(sig, frows, _mix(_mix(fname.astype(np.uint64) + np.uint64(3 << 40)) ^ fvalue.view(np.uint64)))
        sig += _mix(t.verifier.astype(np.uint64) + np.uint64(4 << 40)) + _mix(t.reward_type.astype(np.uint64) + np.uint64(5 << 40))
    env = t.env_ids.astype(np.int64)
    size = np.bincount(env, minlength=len(t.env_names))
    first = np.zeros(len(t.env_names), np.uint64)
    present, at = np.unique(env, return_index=True)
    first[present] = sig[at]  # each environment's first task's signature
    varied = np.bincount(env, weights=(sig != first[env]), minlength=len(t.env_names)) > 0
    return [e for k, e in enumerate(t.env_names) if size[k] > 1 and not varied[k]]


_WARNED: weakref.WeakValueDictionary[int, TaskSpec] = weakref.WeakValueDictionary()  # id -> spec already warned of
_WARNED_TABLES: weakref.WeakValueDictionary[int, TaskTable] = weakref.WeakValueDictionary()


def warn_if_unstructured(specs: Sequence[TaskSpec] | TaskTable) -> list[str]:
    """Warn (`UserWarning`) when environments' tasks all look alike; returns them. The same specs (spec
    objects, or one `TaskTable`) are warned about once: `specs_from_rows` checks them and a trainer
    given them does not say it again."""
    alike = unstructured_envs(specs)
    if isinstance(specs, TaskTable):
        seen = _WARNED_TABLES.get(id(specs)) is specs
        _WARNED_TABLES[id(specs)] = specs
    else:
        seen = bool(specs) and all(_WARNED.get(id(s)) is s for s in specs)
        _WARNED.update({id(s): s for s in specs})
    if alike and not seen:
        envs = specs.env_names if isinstance(specs, TaskTable) else {s.env for s in specs}
        which = "every environment" if len(alike) == len(envs) else f"{len(alike)} of {len(envs)} environments"
        shown = ", ".join(alike[:5]) + (", ..." if len(alike) > 5 else "")
        warnings.warn(
            f"TaskSpecs carry no structure beyond the environment in {which} ({shown}): their tasks have the "
            "same tools, state keys, verifier, features and reward type, so envsched's graph joins them with "
            "equal weights and gives them identical node features, and an untried task is told apart by its "
            "environment alone. Build specs with tools, a verifier or numeric features "
            "(envsched_lightning.adapters.specs.specs_from_rows; docs/adapters.md).",
            UserWarning,
            stacklevel=2,
        )
    return alike
