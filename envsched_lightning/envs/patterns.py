"""Execution patterns shared by every tool world, and the task draft each world's generator returns.

Patterns recur across worlds under the same names, so the scheduler's cross-environment edges have
something real to connect: a "lookup_write" task in banking is solved the way one in airline is.

- ``single``: one call answers or does the request.
- ``lookup_write``: a read resolves a name to an id, then one write uses it.
- ``multi_hop``: a chain of two or more dependent calls (each needs the previous result).
- ``parallel``: independent calls in one turn.
- ``missing_arg``: a required argument is absent; the right move is no call and a question.
- ``refuse``: the request is impossible in this state; the right move is no change and a refusal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .base import ToolCall
from .verify import CHECKS, VERIFIER_NAMES

PATTERNS = ("single", "lookup_write", "multi_hop", "parallel", "missing_arg", "refuse")
REFUSAL = "cannot"  # what a refusal must say; refuse tasks check for it in the answer


@dataclass(frozen=True)
class Draft:
    """A task before it meets a world's state: what the user asks and how the oracle solves it."""

    pattern: str
    request: str  # the user message
    turns: tuple[tuple[ToolCall, ...], ...]  # the oracle's tool turns, in order (calls in a turn are parallel)
    answer: str  # the oracle's final text
    checks: tuple[str, ...]  # verify.CHECKS the reward averages
    answer_contains: tuple[str, ...] = ()
    related_tools: tuple[str, ...] = ()  # tools the task is about when the oracle calls none
    task_id: str = ""
    source: str = ""  # "file:line" for tasks read from a user file, for error messages

    def __post_init__(self) -> None:
        if self.pattern not in PATTERNS:
            raise ValueError(f"{self.source or 'draft'}: unknown pattern {self.pattern!r}; valid: {', '.join(PATTERNS)}")
        object.__setattr__(self, "turns", tuple(tuple(t) for t in self.turns))
        object.__setattr__(self, "checks", tuple(self.checks))
        by_verifier = {v: k for k, v in VERIFIER_NAMES.items()}
        for check in self.checks:
            if check not in CHECKS:
                hint = f" ({check!r} is the verifier; its check is {by_verifier[check]!r})" if check in by_verifier else ""
                raise ValueError(f"{self.source or 'draft'} {self.task_id or self.request[:40]!r}: unknown check "
                                 f"{check!r}{hint}; valid: {', '.join(CHECKS)}")  # fmt: skip
        object.__setattr__(self, "answer_contains", tuple(self.answer_contains))
        object.__setattr__(self, "related_tools", tuple(self.related_tools))

    @property
    def calls(self) -> list[ToolCall]:
        return [c for turn in self.turns for c in turn]

    def tools_used(self) -> tuple[str, ...]:
        """Ground-truth tools in first-use order, then the related ones."""
        return tuple(dict.fromkeys([c.name for c in self.calls] + list(self.related_tools)))


def call(tool_name: str, /, **arguments: Any) -> ToolCall:
    """Shorthand for ground-truth calls (positional-only, so a tool may take a ``name`` argument)."""
    return ToolCall(name=tool_name, arguments=arguments)


def ask_for(request: str, missing: str, tool: str) -> Draft:
    """A missing-argument task: the oracle calls nothing and asks for `missing` by name."""
    return Draft("missing_arg", request, (), f"Please tell me the {missing.replace('_', ' ')}.",
                 ("no_call", "answer"), (missing.replace("_", " "),), (tool,))


def refuse(request: str, lookup: Sequence[ToolCall], why: str, write_tool: str) -> Draft:
    """An impossible request: the oracle may look first, must change nothing, and says it cannot."""
    turns = (tuple(lookup),) if lookup else ()
    return Draft("refuse", request, turns, f"Sorry, I {REFUSAL} do that: {why}.", ("state", "answer"),
                 (REFUSAL,), (write_tool,))


def features(draft: Draft, writes: set[str]) -> dict[str, float]:
    """Numeric execution-pattern descriptors, the same keys in every world (cross-env similarity)."""
    calls = draft.calls
    feats = {
        "n_calls": float(len(calls)),
        "n_turns_expected": float(len(draft.turns) + 1),  # tool turns plus the final answer
        "n_distinct_tools": float(len({c.name for c in calls})),
        "n_writes": float(sum(c.name in writes for c in calls)),
        "max_parallel": float(max((len(t) for t in draft.turns), default=0)),
        "n_checks": float(len(draft.checks)),
        "request_words": float(len(draft.request.split())),
    }
    feats.update({f"pattern_{p}": float(p == draft.pattern) for p in PATTERNS})
    return feats


def reward_type(draft: Draft) -> str:
    """``binary`` only when the single check can only score 0 or 1; otherwise partial credit exists."""
    binary = draft.checks == ("no_call",) or (draft.checks == ("answer",) and len(draft.answer_contains) <= 1)
    return "binary" if binary else "continuous"


def draft_to_record(draft: Draft) -> dict[str, Any]:
    """The JSONL shape `tasks_io.load_tasks_jsonl` reads back."""
    rec: dict[str, Any] = {
        "id": draft.task_id,
        "pattern": draft.pattern,
        "request": draft.request,
        "turns": [[{"name": c.name, "arguments": dict(c.arguments)} for c in t] for t in draft.turns],
        "answer": draft.answer,
        "checks": list(draft.checks),
    }
    if draft.answer_contains:
        rec["answer_contains"] = list(draft.answer_contains)
    if draft.related_tools:
        rec["related_tools"] = list(draft.related_tools)
    return rec


def calls_of(ground_truth: Mapping[str, Any]) -> list[list[ToolCall]]:
    """The oracle's tool turns from a task's ground truth."""
    return [[ToolCall(c["name"], c["arguments"]) for c in turn] for turn in ground_truth.get("turns", [])]
