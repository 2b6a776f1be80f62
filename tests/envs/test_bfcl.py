"""BFCL-v3 single-turn: the AST checker agrees with every shipped possible answer and rejects perturbations.

The official verdict's quirks are pinned here on real records (no bfcl-eval needed); the output-by-output
comparison with the official code is tests_bfcl/test_single_turn_agreement.py (scripts/bfcl_check.sh).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.bfcl import (
    CATEGORIES,
    NO_ANSWER_CATEGORIES,
    BfclEnvironment,
    check_bfcl,
    check_call,
    ground_truth_calls,
    read_jsonl,
    standardize_string,
)
from envsched_lightning.envs.parsing import parse_tool_calls, render_tool_call
from envsched_lightning.envs.registry import make_env

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "bfcl_v3").is_dir(), reason=f"benchmark data not found at {DATA}")

# Records whose possible answer no call can satisfy under the official rules (data defects upstream):
# a required parameter whose allowed list is empty or only "", or an answer naming an unoffered parameter.
UNSATISFIABLE = {
    "live_simple_106-63-0": "missing_required",  # required auto_loan_payment_start/bank_hours_start allow []
    "live_simple_112-68-0": "missing_required",  # five required params allow []
    "live_multiple_507-149-4": "missing_required",  # required origin_airport allows only ""
    "live_multiple_862-181-3": "unexpected_param",  # answer uses journey_start_time, not in the doc
    "live_multiple_964-207-0": "missing_required",  # answer uses 'question', doc requires 'statement'
}
# The official greedy matcher lets an early, permissive expected call consume a later one's match:
# parallel_178 allows company_name "Microsoft" or "Apple" in its first call, so reversed output fails.
GREEDY_ORDER_SENSITIVE = {"parallel_178"}
MEASURED = {"records": 2351, "passed": 2346}  # reported in docs/benchmarks.md


def _text(calls: list[ToolCall]) -> str:
    return "\n".join(render_tool_call(c) for c in calls)


@pytest.fixture(scope="module")
def records() -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    return [pair for cat in CATEGORIES for pair in BfclEnvironment(cat, DATA).records]


def _perturb_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 7919
    if isinstance(value, str):
        return value + " zq9"
    if isinstance(value, list):
        return [*value, "zq9"]
    if isinstance(value, dict):
        return {**value, "zq9": 1}
    return "zq9"


def _with_args(call: ToolCall, args: dict[str, Any]) -> ToolCall:
    return ToolCall(call.name, args)


@needs_data
def test_ground_truth_scores_one_on_every_answered_record(records) -> None:
    answered = [(q, a) for q, a in records if a is not None]
    failures = {}
    for question, answer in answered:
        score, reason = check_bfcl(question, answer, _text(ground_truth_calls(question, answer)))
        if score != 1.0:
            failures[question["id"]] = reason
    assert failures.keys() == UNSATISFIABLE.keys(), failures
    for rid, kind in UNSATISFIABLE.items():
        assert kind in failures[rid]
    assert len(answered) == MEASURED["records"]
    assert len(answered) - len(failures) == MEASURED["passed"]


@needs_data
def test_perturbations_score_zero(records) -> None:
    counts = dict.fromkeys(["wrong_value", "missing_required", "extra_param", "wrong_name", "two_calls", "dropped"], 0)
    for question, answer in records:
        if answer is None or question["id"] in UNSATISFIABLE:
            continue
        calls = ground_truth_calls(question, answer)
        rid = question["id"]
        docs = {d["name"]: d for d in question["function"]}
        first = calls[0]
        variants: dict[str, list[ToolCall]] = {
            "extra_param": [_with_args(first, {**first.arguments, "zq_unexpected": 1}), *calls[1:]],
            "wrong_name": [ToolCall(first.name + "_zq", first.arguments), *calls[1:]],
        }
        if first.arguments:
            param = next(iter(first.arguments))
            variants["wrong_value"] = [_with_args(first, {**first.arguments, param: _perturb_value(first.arguments[param])}), *calls[1:]]
        required = [p for p in docs.get(first.name, {}).get("parameters", {}).get("required", []) if p in first.arguments]
        if required:
            variants["missing_required"] = [_with_args(first, {k: v for k, v in first.arguments.items() if k != required[0]}), *calls[1:]]
        if "parallel" in rid:
            variants["dropped"] = calls[:-1]
            reversed_score = check_bfcl(question, answer, _text(calls[::-1]))[0]
            assert reversed_score == float(rid not in GREEDY_ORDER_SENSITIVE), rid  # order-free, greedily
        else:
            variants["two_calls"] = [first, first]
        for kind, variant in variants.items():
            score, reason = check_bfcl(question, answer, _text(variant))
            assert score == 0.0, (rid, kind, reason)
            counts[kind] += 1
    assert all(n > 0 for n in counts.values()), counts


@needs_data
def test_irrelevance_and_relevance(records) -> None:
    no_answer = [q for q, a in records if a is None]
    assert len(no_answer) == 240 + 882 + 18
    some_call = _text([ToolCall("anything", {})])
    for question in no_answer:
        wants_call = "irrelevance" not in question["id"]
        assert check_bfcl(question, None, "I cannot help with that.")[0] == float(not wants_call)
        assert check_bfcl(question, None, some_call)[0] == float(wants_call)


def test_rules_on_a_hand_built_doc() -> None:
    doc = {
        "name": "geo.area",
        "parameters": {
            "type": "dict",
            "properties": {
                "base": {"type": "float"},
                "when": {"type": "string"},
                "flag": {"type": "boolean"},
                "sides": {"type": "array", "items": {"type": "integer"}},
            },
            "required": ["base"],
        },
    }
    expected = {"base": [10.0], "when": ["April 1, 2024", ""], "flag": ["", True], "sides": [[1, 2]]}
    assert check_call(doc, ToolCall("geo.area", {"base": 10, "sides": [1, 2]}), expected) is None  # int for float
    assert "wrong_func_name" in check_call(doc, ToolCall("geo_area", {"base": 10.0, "sides": [1, 2]}), expected)  # exact name
    assert check_call(doc, ToolCall("geo.area", {"base": 10.0, "when": "april12024", "sides": [1, 2]}), expected) is None
    assert "missing_optional" in check_call(doc, ToolCall("geo.area", {"base": 10.0}), expected)
    assert "type_error" in check_call(doc, ToolCall("geo.area", {"base": 10.0, "flag": 1, "sides": [1, 2]}), expected)
    assert "value_error" in check_call(doc, ToolCall("geo.area", {"base": 10.0, "sides": [2, 1]}), expected)  # order matters
    assert "type_error:nested" in check_call(doc, ToolCall("geo.area", {"base": 10.0, "sides": [1.0, 2]}), expected)
    # QUIRK: an allowed value that is not a list ("" of an optional array) skips the item type check
    assert check_call(doc, ToolCall("geo.area", {"base": 10.0, "sides": [1.0, 2.0]}), {**expected, "sides": [[1, 2], ""]}) is None
    doc["parameters"]["properties"]["sides"]["items"]["type"] = "float"
    no_promotion = check_call(doc, ToolCall("geo.area", {"base": 10.0, "sides": [1, 2]}), {**expected, "sides": [[1.0, 2.0]]})
    assert "type_error:nested" in no_promotion  # no int -> float for array items
    assert standardize_string("It's A-B_c, d./e*f^g") == 'it"sabcdefg'


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "BFCL_v3_simple.json"
    path.write_text('{"id": "a"}\n{"id": oops}\n')
    with pytest.raises(ValueError, match=r"BFCL_v3_simple\.json:2"):
        read_jsonl(path)


def test_missing_data_dir_names_the_option() -> None:
    with pytest.raises(ValueError, match="data_dir"):
        BfclEnvironment("simple", None)


@needs_data
def test_environment_tasks_and_episode() -> None:
    env = BfclEnvironment("parallel_multiple", DATA)
    tasks = env.tasks()
    assert len(tasks) == 200 and env.name == "bfcl_parallel_multiple"
    task = tasks[0]
    assert task.spec.verifier == "bfcl_ast" and task.spec.features["is_parallel"] == 1.0
    assert task.spec.features["n_functions_offered"] == len(task.tools) == len(task.spec.tools)
    assert all(t["type"] == "function" and t["function"]["parameters"]["type"] == "object" for t in env.tools_for(task))
    episode = env.reset(task)
    q, a = task.ground_truth["question"], task.ground_truth["possible_answer"]
    episode.step(ground_truth_calls(q, a))
    assert episode.verify("done").reward == 1.0
    assert env.reset(task).verify("no calls").reward == 0.0
    assert set(NO_ANSWER_CATEGORIES) < set(CATEGORIES)


# ---------------------------------------------------------------- official quirks and the training rules
def _record(rid: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    category = rid.rsplit("_", 1)[0]
    return next(pair for pair in BfclEnvironment(category, DATA).records if pair[0]["id"] == rid)


def _gold(rid: str) -> tuple[dict[str, Any], dict[str, Any], list[ToolCall]]:
    question, answer = _record(rid)
    return question, answer, ground_truth_calls(question, answer)


def _both(question: dict[str, Any], answer: dict[str, Any] | None, text: str) -> tuple[float, float]:
    return check_bfcl(question, answer, text)[0], check_bfcl(question, answer, text, rules="training")[0]


@needs_data
def test_decoder_accepts_only_the_exact_qwen_block_layout() -> None:
    question, answer, calls = _gold("simple_0")
    (call,) = calls
    body = json.dumps({"name": call.name, "arguments": dict(call.arguments)})
    assert _both(question, answer, f"<tool_call>\n{body}\n</tool_call>") == (1.0, 1.0)
    assert _both(question, answer, f"Let me compute.\n<tool_call>\n{body}\n</tool_call>") == (1.0, 1.0)
    assert _both(question, answer, f"<think>\nthe base is 10\n</think>\n\n<tool_call>\n{body}\n</tool_call>") == (1.0, 1.0)
    as_string = json.dumps({"name": call.name, "arguments": json.dumps(dict(call.arguments))})
    for text in (
        f"<tool_call>{body}</tool_call>",  # no newlines inside the tags
        f"<tool_call>\n{body}</tool_call>",
        f"<tool_call>\n{as_string}\n</tool_call>",  # arguments as a JSON string
        f"<tool_call>\n{json.dumps({'name': call.name})}\n</tool_call>",  # no arguments
        f"<tool_call>\n{json.dumps([{'name': call.name, 'arguments': dict(call.arguments)}])}\n</tool_call>",
        f"<think>\n<tool_call>\n{body}\n</tool_call>\n</think>\n\nDone.",  # only text after </think> counts
    ):
        assert _both(question, answer, text) == (0.0, 0.0), text
    # the agent loop's lenient parser still reads these layouts (so the episode gets a tool result)
    for lenient in (f"<tool_call>{body}</tool_call>", f"<tool_call>\n{as_string}\n</tool_call>"):
        assert parse_tool_calls(lenient).calls == [call]
    # QUIRK: a block whose JSON does not parse is dropped silently upstream; training fails it
    assert _both(question, answer, f"<tool_call>\n{{oops}}\n</tool_call>\n<tool_call>\n{body}\n</tool_call>") == (1.0, 0.0)


@needs_data
def test_dotted_names_must_be_exact() -> None:
    question, answer, calls = _gold("parallel_0")
    assert all("." in c.name for c in calls)  # spotify.play
    assert _both(question, answer, _text(calls)) == (1.0, 1.0)
    underscored = [ToolCall(c.name.replace(".", "_"), c.arguments) for c in calls]
    assert _both(question, answer, _text(underscored)) == (0.0, 0.0)


@needs_data
@pytest.mark.parametrize("rid, param", [("simple_178", "additional_details"), ("simple_353", "ingredients"), ("simple_335", "deck")])
def test_empty_list_passes_for_an_optional_array(rid: str, param: str) -> None:
    question, answer, (call,) = _gold(rid)
    assert "" in answer["ground_truth"][0][call.name][param]
    assert _both(question, answer, _text([ToolCall(call.name, {**call.arguments, param: []})])) == (1.0, 1.0)
    assert _both(question, answer, _text([ToolCall(call.name, {**call.arguments, param: ["zq"]})])) == (0.0, 0.0)


@needs_data
def test_irrelevance_counts_a_failed_decode_as_no_call_but_training_does_not() -> None:
    question, _ = _record("irrelevance_0")
    name = question["function"][0]["name"]
    assert _both(question, None, "No function here computes that.") == (1.0, 1.0)
    assert _both(question, None, _text([ToolCall(name, {})])) == (0.0, 0.0)
    for malformed in (
        f"<tool_call>{json.dumps({'name': name, 'arguments': {}})}</tool_call>",
        f"<tool_call>\n{json.dumps({'name': name, 'arguments': '{}'})}\n</tool_call>",
        f"<tool_call>\n{json.dumps({'name': name})}\n</tool_call>",
        "<tool_call>\nnot json\n</tool_call>",
    ):
        assert _both(question, None, malformed) == (1.0, 0.0), malformed
    relevance, _ = _record("live_relevance_0-0-0")
    assert _both(relevance, None, _text([ToolCall("anything", {})])) == (1.0, 1.0)
    assert _both(relevance, None, f"<tool_call>\n{json.dumps({'name': 'anything'})}\n</tool_call>") == (0.0, 0.0)


@needs_data
def test_training_matches_parallel_calls_in_any_order() -> None:
    question, answer, calls = _gold("parallel_178")
    assert _both(question, answer, _text(calls)) == (1.0, 1.0)
    assert _both(question, answer, _text(calls[::-1])) == (0.0, 1.0)  # QUIRK: official greedy matching


@needs_data
def test_episode_judges_the_raw_text_of_its_turn() -> None:
    for rules, expected in (("official", 0.0), ("training", 0.0)):
        env = make_env("bfcl_simple", data_dir=str(DATA), rules=rules)
        task = next(t for t in env.tasks() if t.spec.task_id == "simple_0")
        (call,) = ground_truth_calls(task.ground_truth["question"], task.ground_truth["possible_answer"])
        episode = env.reset(task)
        parsed, results = episode.turn(f"<tool_call>{json.dumps({'name': call.name, 'arguments': dict(call.arguments)})}</tool_call>")
        assert parsed.calls and len(results) == 1  # our parser reads it, the official decoder does not
        assert episode.verify(parsed.content).reward == expected
        episode = env.reset(task)
        episode.turn(_text([call]))
        assert episode.verify("").reward == 1.0
    env = make_env("bfcl_irrelevance", data_dir=str(DATA), rules="training")
    task = env.tasks()[0]
    episode = env.reset(task)
    episode.turn("<tool_call>\n{broken\n</tool_call>")
    verdict = episode.verify("")
    assert verdict.reward == 0.0 and verdict.reason.startswith("[rules=training]")


def test_rules_option_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"`rules` must be one of 'official', 'training'; got 'lenient'"):
        BfclEnvironment("simple", tmp_path, rules="lenient")
    with pytest.raises(ValueError, match="rules"):
        check_bfcl({"id": "irrelevance_0", "function": []}, None, "", rules="Official")


def test_configs_pin_official_rules_and_accept_training() -> None:
    configs = sorted(p for p in (ROOT / "conf" / "env").glob("bfcl_*.yaml") if p.stem != "bfcl_multi_turn_base")
    assert len(configs) == len(CATEGORIES)
    for path in configs:
        cfg = OmegaConf.load(path)
        assert cfg.rules == "official", path
        if DATA.is_dir():
            env = instantiate(OmegaConf.merge(cfg, {"data_dir": str(DATA), "rules": "training"}))
            assert env.rules == "training"
