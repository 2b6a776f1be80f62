"""User task files for tool worlds: one JSON object per line, in the shape `patterns.draft_to_record`
writes. Every problem is reported as ``path:line: reason`` so a bad file is fixed in one look.

A line looks like::

    {"id": "t1", "pattern": "single", "request": "Deposit 5 into A101.",
     "turns": [[{"name": "deposit", "arguments": {"account_id": "A101", "amount": 5}}]],
     "answer": "Done.", "checks": ["state"]}

Optional keys: ``answer_contains`` (list of strings), ``related_tools`` (list of tool names). Tool
names and ground-truth calls are checked against the world when it builds the tasks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .base import Task, ToolCall
from .patterns import PATTERNS, Draft, draft_to_record
from .verify import CHECKS

_REQUIRED = {"pattern": str, "request": str, "turns": list, "answer": str, "checks": list}
_OPTIONAL = {"id": str, "answer_contains": list, "related_tools": list}


def _turns(raw: list[Any]) -> tuple[tuple[ToolCall, ...], ...]:
    turns = []
    for i, turn in enumerate(raw):
        if not isinstance(turn, list):
            raise ValueError(f"turns[{i}] must be a list of calls")
        calls = []
        for j, c in enumerate(turn):
            if not (isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("arguments", {}), dict)):
                raise ValueError(f"turns[{i}][{j}] must be {{'name': str, 'arguments': object}}")
            calls.append(ToolCall(c["name"], c.get("arguments", {})))
        turns.append(tuple(calls))
    return tuple(turns)


def _draft(rec: Any, lineno: int, where: str) -> Draft:
    if not isinstance(rec, dict):
        raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
    for key, kind in _REQUIRED.items():
        if key not in rec:
            raise ValueError(f"missing key {key!r}")
        if not isinstance(rec[key], kind):
            raise ValueError(f"{key!r} must be {kind.__name__}")
    for key, kind in _OPTIONAL.items():
        if key in rec and not isinstance(rec[key], kind):
            raise ValueError(f"{key!r} must be {kind.__name__}")
    extra = set(rec) - set(_REQUIRED) - set(_OPTIONAL)
    if extra:
        raise ValueError(f"unexpected keys {sorted(extra)}")
    if rec["pattern"] not in PATTERNS:
        raise ValueError(f"unknown pattern {rec['pattern']!r}; valid: {', '.join(PATTERNS)}")
    bad = [c for c in rec["checks"] if c not in CHECKS]
    if bad or not rec["checks"]:
        raise ValueError(f"checks must be a non-empty subset of {list(CHECKS)}, got {rec['checks']}")
    for key in ("answer_contains", "related_tools"):
        if not all(isinstance(s, str) for s in rec.get(key, [])):
            raise ValueError(f"{key!r} must be a list of strings")
    return Draft(pattern=rec["pattern"], request=rec["request"], turns=_turns(rec["turns"]), answer=rec["answer"],
                 checks=tuple(rec["checks"]), answer_contains=tuple(rec.get("answer_contains", [])),
                 related_tools=tuple(rec.get("related_tools", [])), task_id=rec.get("id") or f"line-{lineno}",
                 source=where)


def load_tasks_jsonl(path: str | Path) -> list[Draft]:
    """Read and check a task file; raises ``ValueError("path:line: reason")`` on the first bad line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: task file not found")
    drafts, ids = [], set()
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
            if not line.strip():
                continue
            try:
                draft = _draft(json.loads(line), lineno, where)
            except (ValueError, RecursionError) as e:
                raise ValueError(f"{where}: {e}") from None
            if draft.task_id in ids:
                raise ValueError(f"{where}: duplicate id {draft.task_id!r}")
            ids.add(draft.task_id)
            drafts.append(draft)
    if not drafts:
        raise ValueError(f"{path}: no tasks in file")
    return drafts


def save_tasks_jsonl(path: str | Path, tasks: Iterable[Draft | Task]) -> None:
    """Write drafts or built tool-world tasks in the shape `load_tasks_jsonl` reads (to edit by hand)."""
    keys = ("id", "pattern", "request", "turns", "answer", "checks", "answer_contains", "related_tools")
    with Path(path).open("w", encoding="utf-8") as f:
        for t in tasks:
            gt = {} if isinstance(t, Draft) else t.ground_truth
            rec = draft_to_record(t) if isinstance(t, Draft) else {k: gt[k] for k in keys if k in gt}
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
