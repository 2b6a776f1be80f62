"""Parser, validator and renderer: hand-written cases plus hypothesis fuzzing."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.parsing import (
    CLOSE,
    OPEN,
    parse_tool_calls,
    render_assistant_turn,
    render_tool_call,
    validate_call,
)

DOC = {
    "type": "function",
    "function": {
        "name": "transfer",
        "description": "Move money.",
        "parameters": {
            "type": "object",
            "properties": {
                "to": {"type": "string"},
                "amount": {"type": "number"},
                "count": {"type": "integer"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "memo": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "flag": {"type": "boolean"},
            },
            "required": ["to", "amount"],
        },
    },
}


def test_single_block_matches_qwen3_layout():
    text = 'Sure.\n<tool_call>\n{"name": "transfer", "arguments": {"to": "a", "amount": 5}}\n</tool_call>'
    turn = parse_tool_calls(text)
    assert turn.content == "Sure."
    assert turn.calls == [ToolCall("transfer", {"to": "a", "amount": 5})]
    assert turn.errors == []
    assert render_assistant_turn("Sure.", turn.calls) == text


def test_parallel_blocks_keep_order():
    calls = [ToolCall("a", {"x": 1}), ToolCall("b", {}), ToolCall("a", {"x": 2})]
    turn = parse_tool_calls(render_assistant_turn("", calls))
    assert turn.calls == calls and turn.errors == [] and turn.content == ""


def test_arguments_as_json_string_are_decoded():
    turn = parse_tool_calls('<tool_call>{"name": "f", "arguments": "{\\"k\\": [1, 2]}"}</tool_call>')
    assert turn.calls == [ToolCall("f", {"k": [1, 2]})]


def test_close_tag_inside_a_string_value_does_not_cut_the_block():
    call = ToolCall("note", {"text": f"ends with {CLOSE} and {OPEN}"})
    assert parse_tool_calls(render_tool_call(call)).calls == [call]


def test_malformed_blocks_become_errors():
    cases = {
        "<tool_call>{not json}</tool_call>": "not valid JSON",
        '<tool_call>{"arguments": {}}</tool_call>': "no 'name'",
        '<tool_call>{"name": "f", "arguments": [1]}</tool_call>': "must be an object",
        '<tool_call>{"name": "f", "arguments": "nope"}</tool_call>': "arguments string is not JSON",
        '<tool_call>[1, 2]</tool_call>': "JSON object",
        '<tool_call>{"name": "f", "arguments": {}}': "unclosed",
        "text </tool_call>": "stray",
    }
    for text, needle in cases.items():
        turn = parse_tool_calls(text)
        assert turn.calls == [] and len(turn.errors) == 1, text
        assert needle in turn.errors[0], (text, turn.errors)


def test_unclosed_block_before_a_good_one_keeps_the_good_one():
    good = render_tool_call(ToolCall("g", {"a": 1}))
    turn = parse_tool_calls(f"{OPEN} oops {good}")
    assert turn.calls == [ToolCall("g", {"a": 1})]
    assert len(turn.errors) == 1 and "unclosed" in turn.errors[0]


def test_deep_nesting_is_an_error_not_a_crash():
    turn = parse_tool_calls(OPEN + "[" * 100_000 + "]" * 100_000 + CLOSE)
    assert turn.calls == [] and turn.errors


def test_validate_accepts_good_calls():
    ok = {"to": "a", "amount": 5, "count": 2, "mode": "fast", "memo": {"text": "hi"}, "tags": ["x"], "flag": False}
    assert validate_call(ToolCall("transfer", ok), DOC) is None
    assert validate_call(ToolCall("transfer", {"to": "a", "amount": 2.5}), [DOC]) is None


def test_validate_rejects_bad_calls():
    base = {"to": "a", "amount": 5}
    cases = [
        (ToolCall("nope", base), "unknown tool"),
        (ToolCall("transfer", {"to": "a"}), "missing required amount"),
        (ToolCall("transfer", {**base, "zzz": 1}), "unexpected zzz"),
        (ToolCall("transfer", {**base, "amount": "5"}), "amount must be number"),
        (ToolCall("transfer", {**base, "amount": True}), "amount must be number"),
        (ToolCall("transfer", {**base, "count": True}), "count must be integer"),
        (ToolCall("transfer", {**base, "count": 1.5}), "count must be integer"),
        (ToolCall("transfer", {**base, "mode": "warp"}), "one of"),
        (ToolCall("transfer", {**base, "memo": {}}), "memo is missing required text"),
        (ToolCall("transfer", {**base, "memo": {"text": 1}}), "memo.text must be string"),
        (ToolCall("transfer", {**base, "memo": {"text": "a", "x": 1}}), "unexpected x"),
        (ToolCall("transfer", {**base, "tags": ["a", 3]}), "tags[1] must be string"),
        (ToolCall("transfer", {**base, "tags": "a"}), "tags must be array"),
    ]
    for call, needle in cases:
        reason = validate_call(call, DOC)
        assert reason is not None and needle in reason, (call, reason)


# --- fuzzing -----------------------------------------------------------------------------------

_FRAGMENTS = st.sampled_from([OPEN, CLOSE, "{", "}", "[", "]", '"name"', '"arguments"', ":", ",", '"f"',
                              '"', "\\", "\n", " ", "null", "1e999", "NaN", '{"name": "f", "arguments": {}}'])
_JUNK = st.lists(st.one_of(_FRAGMENTS, st.text(max_size=5)), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(), _JUNK))
def test_fuzz_parser_never_raises(text):
    turn = parse_tool_calls(text)
    assert isinstance(turn.content, str)
    assert all(isinstance(c, ToolCall) and isinstance(c.arguments, dict) for c in turn.calls)
    assert all(isinstance(e, str) for e in turn.errors)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**100), 10**100)
    | st.floats(-1e100, 1e100, allow_nan=False, allow_infinity=False) | st.text(),  # the parser's number bound
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)
_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,20}", fullmatch=True)
_CALLS = st.builds(ToolCall, name=_NAMES, arguments=st.dictionaries(st.text(), _JSON, max_size=4))


@settings(max_examples=300, deadline=None)
@given(st.lists(_CALLS, max_size=4), st.text().filter(lambda s: OPEN not in s and CLOSE not in s))
def test_fuzz_render_parse_round_trip(calls, prose):
    turn = parse_tool_calls(render_assistant_turn(prose, calls))
    assert turn.errors == []
    assert turn.calls == calls
    assert turn.content == prose.strip()
    for c in calls:  # the rendered body is plain JSON the chat template would also produce
        body = render_tool_call(c)[len(OPEN) + 1 : -len(CLOSE) - 1]
        assert json.loads(body) == {"name": c.name, "arguments": c.arguments}


def test_a_flood_of_tool_call_tags_is_cut_at_the_block_limit():
    from envsched_lightning.envs.parsing import MAX_BLOCKS

    for text in ("<tool_call>" * 100_000, "<tool_call>x" * 100_000 + "</tool_call>"):
        parsed = parse_tool_calls(text)
        assert len(parsed.errors) == MAX_BLOCKS + 1 and "the rest is ignored" in parsed.errors[-1]
        assert parsed.calls == []
    many = "".join(f'<tool_call>{{"name": "f{i}", "arguments": {{}}}}</tool_call>' for i in range(MAX_BLOCKS + 5))
    parsed = parse_tool_calls(many)
    assert len(parsed.calls) == MAX_BLOCKS and len(parsed.errors) == 1
