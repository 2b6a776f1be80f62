"""`TaskTable`: every task's spec as columns, so a million tasks are a few arrays, not a million objects.

A `TaskSpec` per task costs about a kilobyte of Python objects (the dataclass, its tuples, its
feature mapping); the scheduling core needs none of them: it reads environments, tools, state
keys, verifiers, reward types and features as codes. A `TaskTable` keeps

- the keys ``env/task_id`` as one UTF-8 buffer, each followed by a NUL (its SHA-1 is the pool's
  fingerprint, the same as for a list of specs) with their start offsets;
- the environment of each task as an int32 code into `env_names` (first-appearance order);
- each task's `text` as one UTF-8 buffer with start offsets (empty for most pools);
- tools, state keys and features as CSR lists of int32 codes into one interned vocabulary `vocab`
  (features with a float64 value per entry), verifier and reward type as int32 codes.

It is a `Sequence[TaskSpec]`: ``table[i]`` builds that task's `TaskSpec` on demand (for a log row
or a batch), so code written for a list of specs keeps working. Build one from specs, from
columns (a dict of lists, a `datasets.Dataset`'s columns), from row dicts or a JSONL file streamed
row by row (`from_rows`, `from_jsonl`): the rows never become objects that outlive the build.
"""

from __future__ import annotations

import hashlib
import json
import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from .types import TaskSpec

FIELDS = ("env", "task_id", "tools", "state_keys", "verifier", "features", "reward_type", "text")


class _Builder:
    """Appends one task at a time into compact buffers, interning every string once."""

    def __init__(self) -> None:
        self.env_index: dict[str, int] = {}
        self.vocab: dict[str, int] = {}
        self.env_ids = array("i")
        self.keys = bytearray()
        self.key_starts = array("q")
        self.tools, self.tools_ptr = array("i"), array("q", [0])
        self.state, self.state_ptr = array("i"), array("q", [0])
        self.feat_names, self.feat_values, self.feat_ptr = array("i"), array("d"), array("q", [0])
        self.verifier, self.reward_type = array("i"), array("i")
        self.texts, self.text_starts = bytearray(), array("q", [0])

    def _code(self, text: str) -> int:
        code = self.vocab.get(text)
        if code is None:
            code = self.vocab[text] = len(self.vocab)
        return code

    def add(self, env: Any, task_id: Any, tools: Iterable[Any] = (), state_keys: Iterable[Any] = (),
            verifier: Any = "", features: Mapping[str, Any] | None = None, reward_type: Any = "binary",
            text: Any = "") -> None:  # fmt: skip
        pos = len(self.env_ids)
        if not env or not isinstance(env, str):
            raise ValueError(f"task {pos}: env must be a non-empty string, got {env!r}")
        if not isinstance(task_id, str) or not task_id:
            raise ValueError(f"task {pos}: task_id must be a non-empty string, got {task_id!r}")
        if not isinstance(text, str):
            raise ValueError(f"task {pos} ({env}/{task_id}): text must be a string, got {type(text).__name__}")
        env_code = self.env_index.get(env)
        if env_code is None:
            env_code = self.env_index[env] = len(self.env_index)
        self.env_ids.append(env_code)
        self.key_starts.append(len(self.keys))
        self.keys += f"{env}/{task_id}".encode()
        self.keys.append(0)
        self.tools.extend(self._code(str(t)) for t in tools)
        self.tools_ptr.append(len(self.tools))
        self.state.extend(self._code(str(k)) for k in state_keys)
        self.state_ptr.append(len(self.state))
        self.verifier.append(self._code(str(verifier or "")))
        self.reward_type.append(self._code(str(reward_type)))
        for name, value in (features or {}).items():
            v = float(value)
            if not math.isfinite(v):
                raise ValueError(f"TaskSpec {env}/{task_id}: non-finite features {[str(name)]}")
            self.feat_names.append(self._code(str(name)))
            self.feat_values.append(v)
        self.feat_ptr.append(len(self.feat_names))
        self.texts += text.encode()
        self.text_starts.append(len(self.texts))

    def build(self) -> TaskTable:
        self.key_starts.append(len(self.keys))

        def arr(a: array, dtype: type) -> np.ndarray:
            return np.frombuffer(a, dtype=dtype).copy() if len(a) else np.zeros(0, dtype)

        return TaskTable(
            env_names=tuple(self.env_index), env_ids=arr(self.env_ids, np.int32), keys=bytes(self.keys),
            key_starts=arr(self.key_starts, np.int64), vocab=tuple(self.vocab),
            tools=(arr(self.tools_ptr, np.int64), arr(self.tools, np.int32)),
            state_keys=(arr(self.state_ptr, np.int64), arr(self.state, np.int32)),
            verifier=arr(self.verifier, np.int32), reward_type=arr(self.reward_type, np.int32),
            features=(arr(self.feat_ptr, np.int64), arr(self.feat_names, np.int32), arr(self.feat_values, np.float64)),
            text=(bytes(self.texts), arr(self.text_starts, np.int64)) if self.texts else None,
        )  # fmt: skip


class TaskTable(Sequence[TaskSpec]):
    """Task specs as columns (see the module docstring); ``table[i]`` is task i's `TaskSpec`."""

    def __init__(self, *, env_names: tuple[str, ...], env_ids: np.ndarray, keys: bytes, key_starts: np.ndarray,
                 vocab: tuple[str, ...], tools: tuple[np.ndarray, np.ndarray], state_keys: tuple[np.ndarray, np.ndarray],
                 verifier: np.ndarray, reward_type: np.ndarray,
                 features: tuple[np.ndarray, np.ndarray, np.ndarray],
                 text: tuple[bytes, np.ndarray] | None = None) -> None:  # fmt: skip
        """`text`: (UTF-8 buffer, int64[N+1] offsets) of every task's text; None when no task has one."""
        self.env_names, self.env_ids, self.keys, self.key_starts = env_names, env_ids, keys, key_starts
        self.vocab, self.tools, self.state_keys = vocab, tools, state_keys
        self.verifier, self.reward_type, self.features = verifier, reward_type, features
        n = env_ids.shape[0]
        self.text = text
        offsets = (("text", text[1]),) if text is not None else ()
        for name, ptr in (("key_starts", key_starts), ("tools", tools[0]), ("state_keys", state_keys[0]),
                          ("features", features[0]), *offsets):  # fmt: skip
            if ptr.shape != (n + 1,):
                raise ValueError(f"TaskTable.{name}: {ptr.shape[0]} offsets for {n} tasks (need {n + 1})")
        self._check_unique()

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def from_specs(cls, specs: Iterable[TaskSpec]) -> TaskTable:
        if isinstance(specs, TaskTable):
            return specs
        b = _Builder()
        for s in specs:
            if not isinstance(s, TaskSpec):
                raise ValueError(f"specs must be TaskSpec instances, got {type(s).__name__}")
            b.add(s.env, s.task_id, s.tools, s.state_keys, s.verifier, s.features, s.reward_type, s.text)
        return b.build()

    @classmethod
    def from_codes(cls, *, env_names: Sequence[str], env_ids: np.ndarray, task_ids: Sequence[str], vocab: Sequence[str],
                   tools: tuple[np.ndarray, np.ndarray], state_keys: tuple[np.ndarray, np.ndarray],
                   verifier: np.ndarray, reward_type: np.ndarray,
                   features: tuple[np.ndarray, np.ndarray, np.ndarray],
                   text: Sequence[str] | None = None) -> TaskTable:  # fmt: skip
        """From columns already coded against `env_names` and `vocab` (CSR pairs: indptr, codes):
        the fast path for a generator or a columnar dataset, no per-task object at all."""
        env_ids = np.asarray(env_ids, dtype=np.int32)
        if len(task_ids) != env_ids.shape[0]:
            raise ValueError(f"{len(task_ids)} task ids for {env_ids.shape[0]} tasks")
        if env_ids.size and (env_ids.min() < 0 or env_ids.max() >= len(env_names)):
            raise ValueError(f"env_ids must index env_names ({len(env_names)} names)")
        prefixes = [f"{e}/".encode() for e in env_names]
        try:
            parts = [prefixes[e] + t.encode() for e, t in zip(env_ids.tolist(), task_ids)]
        except AttributeError:
            bad = next(t for t in task_ids if not isinstance(t, str))
            raise ValueError(f"task_id must be a non-empty string, got {bad!r}") from None
        empty = [i for i, (e, x) in enumerate(zip(env_ids.tolist(), parts)) if len(x) == len(prefixes[e])]
        if empty:
            raise ValueError(f"task {empty[0]}: task_id must be a non-empty string, got ''")
        lengths = np.fromiter((len(x) + 1 for x in parts), np.int64, count=len(parts))
        starts = np.zeros(len(parts) + 1, np.int64)
        np.cumsum(lengths, out=starts[1:])
        keys = b"\0".join(parts) + (b"\0" if parts else b"")
        return cls(env_names=tuple(env_names), env_ids=env_ids, keys=keys, key_starts=starts, vocab=tuple(vocab),
                   tools=tools, state_keys=state_keys, verifier=np.asarray(verifier, np.int32),
                   reward_type=np.asarray(reward_type, np.int32), features=features,
                   text=None if text is None else _text_column(text, len(parts)))  # fmt: skip

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> TaskTable:
        """One task per row dict with `TaskSpec`'s field names (only `env` and `task_id` required)."""
        b = _Builder()
        for pos, row in enumerate(rows):
            unknown = set(row) - set(FIELDS)
            if unknown:
                raise ValueError(f"row {pos}: unknown field(s) {sorted(unknown)}; a task has {list(FIELDS)}")
            b.add(**{k: v for k, v in row.items() if v is not None})
        return b.build()

    @classmethod
    def from_columns(cls, env: Sequence[Any], task_id: Sequence[Any], tools: Sequence[Iterable[Any]] | None = None,
                     state_keys: Sequence[Iterable[Any]] | None = None, verifier: Sequence[Any] | None = None,
                     features: Mapping[str, Sequence[float | None]] | None = None,
                     reward_type: Sequence[Any] | None = None, text: Sequence[str] | None = None) -> TaskTable:  # fmt: skip
        """From columns of equal length; a feature cell that is None or NaN leaves the feature out."""
        n = len(env)
        given = dict(task_id=task_id, tools=tools, state_keys=state_keys, verifier=verifier, reward_type=reward_type,
                     text=text)  # fmt: skip
        for name, col in [*given.items(), *((f"features[{k!r}]", v) for k, v in (features or {}).items())]:
            if col is not None and len(col) != n:
                raise ValueError(f"column {name} has {len(col)} rows, env has {n}")
        b = _Builder()
        feats = list((features or {}).items())
        for i in range(n):
            f = {}
            for name, col in feats:
                v = col[i]
                if v is not None and not (isinstance(v, float) and math.isnan(v)):
                    f[name] = v
            b.add(env[i], task_id[i], () if tools is None else tools[i] or (), () if state_keys is None else state_keys[i] or (),
                  "" if verifier is None else verifier[i] or "", f,
                  "binary" if reward_type is None else reward_type[i] or "binary", "" if text is None else text[i] or "")  # fmt: skip
        return b.build()

    @classmethod
    def from_jsonl(cls, path: str | Path) -> TaskTable:
        """One task per line (an object with `TaskSpec`'s field names), read line by line."""
        path = Path(path)

        def rows() -> Iterator[Mapping[str, Any]]:
            with path.open() as f:
                for line_no, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            yield json.loads(line)
                        except json.JSONDecodeError as err:
                            raise ValueError(f"{path}:{line_no}: not a JSON object ({err.msg})") from None

        try:
            return cls.from_rows(rows())
        except ValueError as err:
            if str(err).startswith(str(path)):
                raise
            raise ValueError(f"{path}: {err}") from None

    # -- the Sequence protocol ----------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.env_ids.shape[0])

    @overload
    def __getitem__(self, i: int) -> TaskSpec: ...
    @overload
    def __getitem__(self, i: slice) -> list[TaskSpec]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = int(i)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"task {i} out of range for {len(self)} tasks")
        v = self.vocab
        (tp, tc), (sp, sc), (fp, fn, fv) = self.tools, self.state_keys, self.features
        env = self.env_names[self.env_ids[i]]
        return TaskSpec(
            env=env, task_id=self.task_id(i),
            tools=tuple(v[c] for c in tc[tp[i] : tp[i + 1]]), state_keys=tuple(v[c] for c in sc[sp[i] : sp[i + 1]]),
            verifier=v[self.verifier[i]], reward_type=v[self.reward_type[i]],
            features={v[c]: float(x) for c, x in zip(fn[fp[i] : fp[i + 1]], fv[fp[i] : fp[i + 1]])},
            text=self.text_of(i),
        )  # fmt: skip

    def __iter__(self) -> Iterator[TaskSpec]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TaskTable):
            return self.fingerprint() == other.fingerprint() and list(self) == list(other)
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    # -- columns the scheduling core reads ---------------------------------------------------
    def key(self, i: int) -> str:
        return self.keys[self.key_starts[i] : self.key_starts[i + 1] - 1].decode()

    def key_pairs(self) -> list[tuple[str, str]]:
        """Every task's ``(env, task_id)``, decoded from the key buffer in one pass."""
        keys = self.keys.decode().split("\0")[:-1]
        names = [self.env_names[e] for e in self.env_ids.tolist()]
        return [(env, key[len(env) + 1 :]) for env, key in zip(names, keys)]

    def task_id(self, i: int) -> str:
        """Task i's id, read from its key without building its `TaskSpec`."""
        return self.key(i)[len(self.env_names[self.env_ids[i]]) + 1 :]

    def text_of(self, i: int) -> str:
        """Task i's text ("" when the pool has none)."""
        if self.text is None:
            return ""
        buf, starts = self.text
        return buf[starts[i] : starts[i + 1]].decode()

    def fingerprint(self) -> str:
        """SHA-1 of every key followed by NUL: equal to `spec_fingerprint` of the same specs as a list."""
        return hashlib.sha1(self.keys).hexdigest()

    def token_lists(self, kinds: Sequence[str] = ("tools", "state_keys", "verifier")) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr int64[N+1], kind int8[nnz], code int32[nnz]): per task, its tokens of each of
        `kinds` in turn (tools, state keys: lists; verifier, reward_type: one each), `kind`
        indexing `kinds`, `code` indexing `vocab`. O(nnz), no per-task loop."""
        single = np.arange(len(self) + 1, dtype=np.int64)
        parts = [(single, getattr(self, k)) if k in ("verifier", "reward_type") else getattr(self, k) for k in kinds]
        lens = sum(np.diff(p[0]) for p in parts)
        indptr = np.zeros(len(self) + 1, np.int64)
        np.cumsum(lens, out=indptr[1:])
        kind = np.empty(int(indptr[-1]), np.int8)
        code = np.empty(int(indptr[-1]), np.int32)
        offset = indptr[:-1].copy()
        for k, (ptr, codes) in enumerate(parts):
            n_i = np.diff(ptr)
            rows = np.repeat(np.arange(len(self)), n_i)
            pos = offset[rows] + (np.arange(codes.shape[0]) - ptr[:-1][rows])
            kind[pos], code[pos] = k, codes
            offset += n_i
        return indptr, kind, code

    def nbytes(self) -> int:
        arrays = [self.env_ids, self.key_starts, *self.tools, *self.state_keys, self.verifier, self.reward_type, *self.features]
        text = 0 if self.text is None else len(self.text[0]) + self.text[1].nbytes
        return len(self.keys) + text + sum(a.nbytes for a in arrays)

    def key_hashes(self) -> np.ndarray:
        """uint64[N]: a hash of every key (`key_hashes`), for lookups and the uniqueness check."""
        return key_hashes(self.keys, self.key_starts)

    def _check_unique(self) -> None:
        """Refuse a repeated ``env/task_id``: hash every key, then compare the bytes of the (rare)
        keys whose hashes collide."""
        if len(self) < 2:
            return
        h = self.key_hashes()
        order = np.argsort(h, kind="stable")
        same = np.flatnonzero(h[order][1:] == h[order][:-1])
        for j in same.tolist():
            a, b = int(order[j]), int(order[j + 1])
            if self.key(a) == self.key(b):
                raise ValueError(f"duplicate task {self.key(a)!r} in specs")


def key_hashes(buf: bytes, starts: np.ndarray, block: int = 1 << 16) -> np.ndarray:
    """uint64 hash of each NUL-terminated key of `buf` (key i spans ``starts[i]:starts[i + 1]``), in
    vectorised passes over blocks of keys so temporaries stay small. A function of the key's bytes
    alone: the same key hashes the same in any buffer."""
    n = starts.shape[0] - 1
    h = np.empty(max(n, 0), np.uint64)
    if n <= 0:
        return h
    lengths = np.diff(starts)
    powers = np.cumprod(np.full(int(lengths.max()), 0x100000001B3, dtype=np.uint64))  # wrapping
    with np.errstate(over="ignore"):
        for a in range(0, n, block):
            b = min(n, a + block)
            lo, hi = int(starts[a]), int(starts[b])
            data = np.frombuffer(buf, dtype=np.uint8, count=hi - lo, offset=lo).astype(np.uint64)
            first = starts[a:b] - lo
            pos = np.arange(hi - lo) - np.repeat(first, lengths[a:b])  # position inside its key
            mixed = data * powers[pos] + np.uint64(0x9E3779B97F4A7C15) * (pos.astype(np.uint64) + np.uint64(1))
            h[a:b] = np.add.reduceat(mixed, first)
    return h


def _text_column(text: Sequence[str], n: int) -> tuple[bytes, np.ndarray] | None:
    """(buffer, offsets) of a column of `n` strings; None when every one is empty."""
    if len(text) != n:
        raise ValueError(f"{len(text)} texts for {n} tasks")
    bad = next((t for t in text if not isinstance(t, str)), None)
    if bad is not None:
        raise ValueError(f"text must be a string, got {type(bad).__name__}")
    parts = [t.encode() for t in text]
    if not any(parts):
        return None
    starts = np.zeros(n + 1, np.int64)
    np.cumsum([len(p) for p in parts], out=starts[1:])
    return b"".join(parts), starts


def as_task_table(specs: Iterable[TaskSpec] | TaskTable) -> TaskTable:
    """`specs` as a `TaskTable` (a table is returned as is)."""
    return specs if isinstance(specs, TaskTable) else TaskTable.from_specs(specs)
