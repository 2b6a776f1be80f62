"""Rule-based verifiers for tool worlds: compare an episode's final state, calls and answer with the
ground truth. Each check scores in [0, 1]; the reward is the mean of the checks a task names, so a
fully correct episode scores exactly 1.0 and a partly correct one earns partial credit.

- ``state``: over every row that the expected run or the actual run changed (across all tables, so
  side effects elsewhere count), the fraction whose final value equals the expected one. No change
  expected and none made scores 1.0.
- ``calls``: expected calls (name and arguments, order-free, as a multiset) matched among the valid
  calls made, divided by the larger of the two counts, so missing and extra calls both cost.
- ``answer``: the fraction of expected substrings found in the final answer (case-insensitive).
- ``no_call``: 1.0 when the model made no tool call at all (asking for a missing argument).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .base import ToolCall, Verdict

CHECKS = ("state", "calls", "answer", "no_call")
VERIFIER_NAMES = {"state": "state_match", "calls": "call_match", "answer": "answer_match", "no_call": "no_call"}
Table = Mapping[str, Any]  # row id -> row
Changes = dict[str, dict[str, Any]]  # table -> row id -> new row (None = deleted)
_DELETED = "<deleted>"


def verifier_name(checks: Sequence[str]) -> str:
    """The `TaskSpec.verifier` string: the checks' names joined by ``+`` (``state_match+answer_match``)."""
    return "+".join(VERIFIER_NAMES[c] for c in checks)


def diff_state(before: Mapping[str, Table], after: Mapping[str, Table]) -> Changes:
    """Rows added, changed or deleted between two states (tables are ``row id -> row`` mappings)."""
    changes: Changes = {}
    for table in sorted(set(before) | set(after)):
        old, new = before.get(table, {}), after.get(table, {})
        rows = {k: new.get(k) for k in set(old) | set(new) if old.get(k, _DELETED) != new.get(k, _DELETED)}
        if rows:
            changes[table] = rows
    return changes


def state_score(initial: Mapping[str, Table], final: Mapping[str, Table], expected: Changes) -> tuple[float, str]:
    actual = diff_state(initial, final)
    keys = {(t, k) for t, rows in actual.items() for k in rows} | {(t, k) for t, rows in expected.items() for k in rows}
    if not keys:
        return 1.0, "state unchanged as expected"

    def want(t: str, k: str) -> Any:
        return expected[t][k] if k in expected.get(t, {}) else initial.get(t, {}).get(k)

    good = sum(final.get(t, {}).get(k) == want(t, k) for t, k in keys)
    return good / len(keys), f"state {good}/{len(keys)} rows"


def _canon(call: ToolCall | Mapping[str, Any]) -> str:
    name, args = (call.name, call.arguments) if isinstance(call, ToolCall) else (call["name"], call["arguments"])
    return json.dumps([name, args], sort_keys=True, default=str)


def call_score(made: Sequence[ToolCall], expected: Sequence[Mapping[str, Any]]) -> tuple[float, str]:
    if not made and not expected:
        return 1.0, "no calls as expected"
    pool = [_canon(c) for c in made]
    good = 0
    for want in map(_canon, expected):
        if want in pool:
            pool.remove(want)
            good += 1
    return good / max(len(made), len(expected)), f"calls {good}/{len(expected)} matched, {len(made)} made"


def answer_score(answer: str, contains: Sequence[str]) -> tuple[float, str]:
    if not contains:
        return 1.0, "no answer check"
    text = answer.lower()
    good = sum(s.lower() in text for s in contains)
    return good / len(contains), f"answer {good}/{len(contains)} substrings"


def score_episode(
    ground_truth: Mapping[str, Any],
    initial: Mapping[str, Table],
    final: Mapping[str, Table],
    made: Sequence[ToolCall],
    answer: str,
    n_attempted: int,
) -> Verdict:
    """Mean of the checks named in ``ground_truth["checks"]``; the reason lists each check's result.

    `made` holds the calls that passed validation; `n_attempted` counts every call the model tried
    (valid or not), which is what ``no_call`` looks at.
    """
    parts: list[tuple[float, str]] = []
    for check in ground_truth["checks"]:
        if check == "state":
            parts.append(state_score(initial, final, ground_truth.get("expected_changes", {})))
        elif check == "calls":
            expected = [c for turn in ground_truth.get("turns", []) for c in turn]
            parts.append(call_score(made, expected))
        elif check == "answer":
            parts.append(answer_score(answer, ground_truth.get("answer_contains", [])))
        elif check == "no_call":
            parts.append((float(n_attempted == 0), f"{n_attempted} calls attempted, none expected"))
        else:
            raise ValueError(f"unknown check {check!r}; valid: {', '.join(CHECKS)}")
    reward = sum(s for s, _ in parts) / len(parts) if parts else 0.0
    return Verdict(reward=min(1.0, max(0.0, reward)), reason="; ".join(r for _, r in parts))
