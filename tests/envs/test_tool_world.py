"""The bad-call policy and the shared episode mechanism, on a four-tool world built in the test."""

from __future__ import annotations

import random

import pytest

from envsched_lightning.envs import Draft, ToolCall, ToolError, ToolWorld, oracle_turns, run_scripted, tool
from envsched_lightning.envs.patterns import call
from envsched_lightning.envs.tool_world import State


class CounterWorld(ToolWorld):
    """Named counters; `bump` adds, `crash` is a tool with a bug."""

    name = "counter_test"
    patterns = ("single",)

    def build_state(self, rng: random.Random) -> State:
        return {"counters": {"a": {"value": 0}, "b": {"value": 5}}}

    @tool("Read a counter.", {"key": "string"}, reads=("counters",))
    def get(self, state: State, key: str) -> dict:
        return state["counters"][key]

    @tool("Add to a counter.", {"key": {"type": "string", "enum": ["a", "b"]}, "by": "integer"}, writes=("counters",))
    def bump(self, state: State, key: str, by: int) -> dict:
        state["counters"][key]["value"] += by
        if state["counters"][key]["value"] > 100:
            raise ToolError("counter overflow")
        return state["counters"][key]

    @tool("Reset all counters.", writes=("counters",))
    def reset_all(self, state: State) -> str:
        for row in state["counters"].values():
            row["value"] = 0
        return "ok"

    @tool("A broken tool.", {"x": "number"}, optional=("x",), writes=("counters",))
    def crash(self, state: State, x: float = 1.0) -> None:
        state["counters"]["a"]["value"] = -1
        raise RuntimeError("bug")

    def draft_single(self, rng: random.Random, state: State) -> Draft:
        by = rng.randint(1, 9)
        return Draft("single", f"Add {by} to a.", ((call("bump", key="a", by=by),),), "Done.", ("state",))


@pytest.fixture
def world() -> CounterWorld:
    return CounterWorld(num_tasks=5, offer="all")


def test_schema_comes_from_the_decorator(world):
    docs = {d["function"]["name"]: d["function"] for d in world.tool_schemas()}
    assert list(docs) == ["get", "bump", "reset_all", "crash"]
    assert docs["bump"]["parameters"]["required"] == ["key", "by"]
    assert docs["crash"]["parameters"]["required"] == []
    assert docs["reset_all"]["parameters"] == {"type": "object", "properties": {}, "required": []}


def test_invalid_calls_continue_with_an_error_result_and_are_counted(world):
    task = world.tasks()[0]
    ep = world.reset(task)
    results = ep.step([ToolCall("nope", {}), ToolCall("bump", {"key": "a"}), ToolCall("bump", {"key": "z", "by": 1}),
                       ToolCall("bump", {"key": "a", "by": "1"})])
    assert [r.error is not None for r in results] == [True] * 4
    assert "unknown tool" in results[0].error and "missing required by" in results[1].error
    assert results[2].content.startswith("Error: ")
    assert ep.n_invalid == 4 and ep.calls == []
    assert ep.state == world.initial_state()


def test_a_raising_tool_is_an_error_result_and_rolls_back(world):
    ep = world.reset(world.tasks()[0])
    bug, overflow = ep.step([ToolCall("crash", {}), ToolCall("bump", {"key": "b", "by": 99})])
    assert "RuntimeError" in bug.error and overflow.error == "counter overflow"
    assert ep.state == world.initial_state() and ep.n_tool_errors == 2


def test_parse_errors_become_error_results_via_turn(world):
    task = world.tasks()[0]
    ep = world.reset(task)
    parsed, results = ep.turn('<tool_call>{"name": "bump", "arguments": {"key": "a", "by": 2}}</tool_call>'
                              "<tool_call>{broken</tool_call>")
    assert len(parsed.calls) == 1 and len(parsed.errors) == 1
    assert results[0].error is None and results[1].error and results[1].name == "invalid_tool_call"
    assert ep.stats() == {"n_calls": 2.0, "n_invalid": 1.0, "n_tool_errors": 0.0, "n_turns": 1.0}


def test_bad_calls_do_not_cost_reward_by_themselves(world):
    task = world.tasks()[0]
    turns = oracle_turns(task)
    noisy = ["<tool_call>{oops</tool_call>", '<tool_call>{"name": "bump", "arguments": {}}</tool_call>', *turns]
    verdict, _ = run_scripted(world, task, noisy)
    assert verdict.reward == 1.0 and "2 invalid calls" in verdict.reason


def test_partial_credit_counts_rows(world):
    task = world.tasks()[0]
    by = task.ground_truth["turns"][0][0]["arguments"]["by"]
    extra = f'<tool_call>{{"name": "bump", "arguments": {{"key": "b", "by": {by}}}}}</tool_call>'
    verdict, _ = run_scripted(world, task, [oracle_turns(task)[0] + extra, "Done."])
    assert verdict.reward == 0.5 and "state 1/2 rows" in verdict.reason  # a right write plus a side effect


def test_offered_tools_are_the_only_callable_ones():
    world = CounterWorld(num_tasks=3, offer="task")
    task = world.tasks()[0]
    offered = {d["function"]["name"] for d in world.tools_for(task)}
    assert "bump" in offered and len(offered) == 2  # the task's tool plus one distractor
    hidden = next(n for n in ("get", "reset_all", "crash") if n not in offered)
    (result,) = world.reset(task).step([ToolCall(hidden, {"key": "a"} if hidden == "get" else {})])
    assert "unknown tool" in result.error


def test_ground_truth_that_fails_is_rejected_at_build_time():
    class Broken(CounterWorld):
        def draft_single(self, rng, state):
            return Draft("single", "Add to z.", ((call("bump", key="z", by=1),),), "Done.", ("state",))

    with pytest.raises(ValueError, match="ground-truth call bump fails"):
        Broken(num_tasks=1).tasks()


def test_a_draft_with_an_unknown_check_names_it_and_the_valid_ones():
    class Misnamed(CounterWorld):
        def draft_single(self, rng, state):
            return Draft("single", "Add 1 to a.", ((call("bump", key="a", by=1),),), "Done.", ("state_match",))

    with pytest.raises(ValueError, match=r"unknown check 'state_match' \('state_match' is the verifier; its check is "
                                         r"'state'\); valid: state, calls, answer, no_call"):  # fmt: skip
        Misnamed(num_tasks=1).tasks()


def test_constructor_checks_its_options():
    with pytest.raises(ValueError, match="num_tasks"):
        CounterWorld(num_tasks=0)
    with pytest.raises(ValueError, match="offer"):
        CounterWorld(offer="some")

    class NoDrafts(CounterWorld):
        patterns = ("single", "refuse")

    with pytest.raises(TypeError, match="refuse"):
        NoDrafts()
