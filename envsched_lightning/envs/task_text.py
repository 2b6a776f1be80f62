"""`TaskSpec.text`: what the model reads that is this task's own, for near-copy detection.

A task's instruction, and the function documents offered with this task alone (BFCL and ACEBench
single-turn tasks each carry theirs). A tool set every task of an environment shares is left out:
it would make every pair of the environment's tasks look alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def user_contents(turns: Iterable[Iterable[Mapping[str, Any]]]) -> list[str]:
    """The content of every user message of a list of turns (each a list of messages)."""
    return [str(m.get("content", "")) for turn in turns for m in turn if m.get("role") == "user"]


def task_text(instructions: Sequence[str], docs: Sequence[Mapping[str, Any]] = ()) -> str:
    """The instructions, then the task's own documents as sorted JSON (their words are what counts)."""
    parts = [s for s in instructions if s]
    if docs:
        parts.append(json.dumps(list(docs), sort_keys=True, ensure_ascii=False))
    return "\n".join(parts)
