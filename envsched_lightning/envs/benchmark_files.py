"""Reading the benchmark suites' data files: the one place every suite (BFCL, ACEBench, tau-bench) finds its
data root, reads JSON Lines with errors that name the file and line, converts function docs to tool
schemas and describes a task's execution pattern for the scheduler's cross-environment edges."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from envsched_lightning.envs.patterns import PATTERNS

# BFCL doc type -> JSON-schema type, as BFCL's own FC handlers convert docs for `tools=`.
JSON_SCHEMA_TYPES: dict[str, str] = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}


def resolve_data_dir(env_name: str, data_dir: str | os.PathLike[str] | None, sub: str) -> Path:
    """The benchmark folder: `data_dir/sub` if present, else `data_dir` itself.

    Accepting both lets one data root serve every family. Without `data_dir`, the default data root
    (`$ENVSCHED_DATA`, else the folder `python -m envsched_lightning.data fetch` writes to) is used
    when it holds `sub`; otherwise this fails at construction, naming the option and the command,
    instead of deep inside a rollout.
    """
    if data_dir in (None, "", "None", "null"):
        from envsched_lightning.data import default_data_root, source_for

        root = default_data_root()
        if not (root / sub).is_dir():
            fetch = source_for(sub.split(os.sep)[0].split("/")[0])
            raise ValueError(f"environment {env_name!r}: option `data_dir` is not set and {root} holds no {sub!r}: run "
                             f"`python -m envsched_lightning.data fetch {fetch}`, or set ENVSCHED_DATA=/path/to/data or "
                             f"env.{env_name}.data_dir=...")  # fmt: skip
        return root / sub
    root = Path(data_dir).expanduser()
    path = root / sub if (root / sub).is_dir() else root
    if not path.is_dir():
        raise FileNotFoundError(f"environment {env_name!r}: `data_dir` {str(root)!r} holds no {sub!r} folder")
    return path


def read_utf8(path: str | os.PathLike[str]) -> str:
    """A whole file's text; bytes that are not UTF-8 are an error naming `path:line`."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_jsonl(
    path: str | os.PathLike[str], key: str = "id", check: Callable[[dict[str, Any]], str | None] | None = None
) -> list[dict[str, Any]]:
    """One object per line (BFCL and ACEBench `.json` files are JSON Lines); errors name file and line.

    Every record needs a unique `key`; `check(record)` may return a reason the record is unusable,
    reported with its line (`field_types` builds one from expected field types)."""
    records = []
    first_line: dict[str, int] = {}
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise ValueError(f"{path}:{lineno}: malformed JSON ({getattr(exc, 'msg', type(exc).__name__)})") from None
            if not isinstance(record, dict) or key not in record:
                raise ValueError(f"{path}:{lineno}: expected an object with a {key!r} field")
            rid = json.dumps(record[key], sort_keys=True)
            if rid in first_line:
                raise ValueError(f"{path}:{lineno}: duplicate {key} {record[key]!r} (first on line {first_line[rid]})")
            first_line[rid] = lineno
            problem = check(record) if check is not None else None
            if problem:
                raise ValueError(f"{path}:{lineno}: {problem}")
            records.append(record)
    return records


def field_types(**expected: type | tuple[type, ...]) -> Callable[[dict[str, Any]], str | None]:
    """A `read_jsonl` check: each named field present with one of the given JSON types."""

    def check(record: dict[str, Any]) -> str | None:
        for name, types in expected.items():
            if name not in record:
                return f"record {record.get('id', '?')!r} has no {name!r} field"
            if not isinstance(record[name], types):
                want = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
                return f"record {record.get('id', '?')!r}: {name!r} must be {want}, got {type(record[name]).__name__}"
        return None

    return check


def to_tool_schema(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL/ACEBench FunctionDoc as a Qwen3 `tools=` entry (types converted, names kept)."""

    def convert(node: Any) -> Any:
        if isinstance(node, list):
            return [convert(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if key == "type" and isinstance(value, str):
                out[key] = JSON_SCHEMA_TYPES.get(value, value)
            elif key == "properties" and isinstance(value, dict):  # keys are parameter names, not keywords
                out[key] = {name: convert(sub) for name, sub in value.items()}
            elif key in ("items", "additionalProperties"):
                out[key] = convert(value)
            else:
                out[key] = value
        return out

    params = convert(dict(doc.get("parameters") or {"type": "object", "properties": {}}))
    return {"type": "function", "function": {"name": doc["name"], "description": doc.get("description", ""), "parameters": params}}


def pattern_features(pattern: str, n_calls: float) -> dict[str, float]:
    """The shared ``pattern_*`` one-hot and ``n_calls`` that link benchmark tasks to the built-in worlds."""
    if pattern not in PATTERNS:
        raise ValueError(f"unknown execution pattern {pattern!r}; valid: {PATTERNS}")
    return {"n_calls": float(n_calls), **{f"pattern_{p}": float(p == pattern) for p in PATTERNS}}
