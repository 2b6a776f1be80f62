"""Each family's tool-call syntax parses into the same calls, never raises, and round-trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.parsing import render_assistant_turn
from envsched_lightning.envs.tool_formats import TOOL_FORMATS, Llama3JsonFormat, tool_format, translate

LLAMA = Llama3JsonFormat()
CALLS = [ToolCall("get_balance", {"account": "A-1"}), ToolCall("transfer", {"to": "B", "amount": 2.5, "memo": None})]


@pytest.mark.parametrize("name", sorted(TOOL_FORMATS))
@pytest.mark.parametrize("calls", [CALLS[:1], CALLS, []], ids=["one", "parallel", "none"])
def test_render_then_parse_gives_back_the_calls(name, calls):
    fmt = TOOL_FORMATS[name]
    parsed = fmt.parse(fmt.render("" if calls else "The balance is 3.", calls))
    assert parsed.calls == calls and parsed.errors == []
    assert parsed.content == ("" if calls else "The balance is 3.")


def test_llama3_json_reads_what_llama_templates_write():
    written = '{"name": "get_balance", "parameters": {"account": "A-1"}}'
    assert LLAMA.parse(written).calls == CALLS[:1]
    assert LLAMA.parse("<|python_tag|>" + written).calls == CALLS[:1]  # the built-in-tool prefix
    assert LLAMA.parse('{"name": "get_balance", "arguments": {"account": "A-1"}}').calls == CALLS[:1]
    assert LLAMA.parse(f"{written};\n{written}").calls == CALLS[:1] * 2  # several calls, vLLM's separator
    assert LLAMA.parse(f"[{written}, {written}]").calls == CALLS[:1] * 2  # or a JSON list


@pytest.mark.parametrize("text, error", [
    ('{"name": "f", "parameters": {"a": 1}', "not valid JSON"),
    ('{"parameters": {}}', "no 'name'"),
    ('{"name": "f", "parameters": [1]}', "must be an object"),
    ('{"name": "f", "parameters": {}} and some prose', "not valid JSON"),
])  # fmt: skip
def test_llama3_json_malformed_calls_are_errors_not_exceptions(text, error):
    parsed = LLAMA.parse(text)
    assert parsed.errors and error in parsed.errors[-1]


def test_llama3_json_prose_is_an_answer():
    assert LLAMA.parse("  The transfer is done.  ") == ("The transfer is done.", [], [])


def test_translate_rewrites_scripted_turns_and_keeps_deliberate_mistakes():
    hermes = render_assistant_turn("", CALLS)
    assert LLAMA.parse(translate(hermes, LLAMA)).calls == CALLS
    assert translate(hermes, TOOL_FORMATS["hermes"]) == hermes
    broken = "<tool_call>{not json</tool_call>"
    assert translate(broken, LLAMA) == broken


def test_unknown_format_names_the_known_ones():
    with pytest.raises(ValueError, match="hermes, llama3_json"):
        tool_format("mistral_v3")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list('{}[]":;, namepartsx0<|>_') + ["<|python_tag|>", '"name"', '"parameters"'])))
def test_llama3_json_never_raises(pieces):
    parsed = LLAMA.parse("".join(pieces))
    assert isinstance(parsed.calls, list) and isinstance(parsed.errors, list)


def test_the_trl_reward_reads_the_policys_format():
    """`EnvReward(items, tool_format=...)`: a Llama-3 policy's completion is scored on its calls."""
    from envsched_lightning.adapters.tasks import EnvReward
    from envsched_lightning.envs import make_env
    from envsched_lightning.envs.oracle import oracle_turns

    env = make_env("banking", num_tasks=4)
    task = env.tasks()[0]
    call_turn = oracle_turns(task)[0]  # a one-call task whose verifier checks the final state
    llama = translate(call_turn, LLAMA)
    key = dict(env=[task.spec.env], task_id=[task.spec.task_id])
    assert EnvReward([(task, env)])([call_turn], **key) == [1.0]
    assert EnvReward([(task, env)], tool_format="llama3_json")([llama], **key) == [1.0]
    assert EnvReward([(task, env)])([llama], **key) == [0.0]  # read as hermes, the JSON is prose: no call made
    with pytest.raises(ValueError, match="unknown tool-call format"):
        EnvReward([(task, env)], tool_format="nope")
