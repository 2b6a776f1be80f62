"""Verifier checks on hand-built states: exact credit for correct episodes, partial credit otherwise."""

from __future__ import annotations

from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.verify import answer_score, call_score, diff_state, score_episode, state_score

INITIAL = {"t": {"a": {"v": 1}, "b": {"v": 2}, "c": {"v": 3}}}


def test_diff_state_sees_adds_changes_and_deletes():
    after = {"t": {"a": {"v": 9}, "c": {"v": 3}, "d": {"v": 4}}}
    assert diff_state(INITIAL, after) == {"t": {"a": {"v": 9}, "b": None, "d": {"v": 4}}}
    assert diff_state(INITIAL, INITIAL) == {}


def test_state_score_counts_rows_touched_by_either_run():
    expected = {"t": {"a": {"v": 9}, "b": None}}
    right = {"t": {"a": {"v": 9}, "c": {"v": 3}}}
    assert state_score(INITIAL, right, expected)[0] == 1.0
    half = {"t": {"a": {"v": 9}, "b": {"v": 2}, "c": {"v": 3}}}  # forgot the delete
    assert state_score(INITIAL, half, expected)[0] == 0.5
    side = {"t": {"a": {"v": 9}, "c": {"v": 0}}}  # right writes plus a side effect
    assert state_score(INITIAL, side, expected)[0] == 2 / 3
    assert state_score(INITIAL, INITIAL, {})[0] == 1.0


def test_call_score_is_order_free_and_charges_extras():
    want = [{"name": "f", "arguments": {"x": 1}}, {"name": "g", "arguments": {}}]
    assert call_score([ToolCall("g", {}), ToolCall("f", {"x": 1})], want)[0] == 1.0
    assert call_score([ToolCall("f", {"x": 1})], want)[0] == 0.5
    assert call_score([ToolCall("f", {"x": 1}), ToolCall("g", {}), ToolCall("g", {}), ToolCall("h", {})], want)[0] == 0.5
    assert call_score([ToolCall("f", {"x": 1.5}), ToolCall("g", {})], want)[0] == 0.5


def test_answer_score_is_case_insensitive_fraction():
    assert answer_score("Ana has 120 and Ben 80.", ["ana", "120", "300"])[0] == 2 / 3
    assert answer_score("anything", [])[0] == 1.0


def test_score_episode_averages_named_checks():
    gt = {"checks": ["state", "answer"], "expected_changes": {"t": {"a": {"v": 9}}}, "answer_contains": ["done"]}
    final = {"t": {**INITIAL["t"], "a": {"v": 9}}}
    assert score_episode(gt, INITIAL, final, [], "Done.", 1).reward == 1.0
    assert score_episode(gt, INITIAL, final, [], "Hmm.", 1).reward == 0.5
    ask = {"checks": ["no_call", "answer"], "answer_contains": ["amount"]}
    assert score_episode(ask, INITIAL, INITIAL, [], "What amount?", 0).reward == 1.0
    assert score_episode(ask, INITIAL, INITIAL, [], "What amount?", 1).reward == 0.5  # even an invalid attempt
