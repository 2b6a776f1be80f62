"""ACEBench-en normal/special: official verdicts (quirks included) and the training rules.

Upstream's checker is not on a registry, so the official behaviour is written down here from its code
(chenchen0103/ACEBench `eval_main.py`, `model_eval/checker.py`, `model_inference/utils.py`): one
test per quirk (tags as in `envs/acebench/official.py` and `docs/benchmarks.md`). The measured agreement
with upstream's own code comes from `tests/official/acebench_diff.py`.
"""

from __future__ import annotations


import pytest

from envsched_lightning.envs import make_env
from envsched_lightning.envs.acebench.normal import CATEGORIES, NORMAL, AceBenchEnvironment, ground_truth_answer, judge, official_text
from envsched_lightning.envs.acebench.official import DecodeError, decode, outer_brackets
from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.parsing import parse_tool_calls, render_tool_call
from tests.data_roots import needs, root_with

DATA = root_with("acebench")
needs_data = needs("acebench")
MEASURED = {"records": 973, "official_passed": 944, "training_passed": 973}  # reported in docs/benchmarks.md
_MULTI_TURN_LISTS = "D2+N10: whitespace stripped from the output, a list inside a dict compared by str()"
UNPASSABLE = {  # ground truths no output passes under upstream's rules, with the quirk that stops them
    "normal_single_turn_parallel_function_42": "N9: an empty list ground truth fails the nested type check",
    "normal_preference_40": "N9: an array without `items` is taken as a list of objects",
    **{f"normal_multi_turn_user_adjust_{i}": _MULTI_TURN_LISTS for i in
       ("3_0", "4_0", "13_0", "14_0", "15_0", "15_2", "16_0", "24_0", "29_0", "38_0", "43_0", "45_0", "48_0")},
    **{f"normal_multi_turn_user_switch_{i}": _MULTI_TURN_LISTS for i in
       ("6_0", "8_0", "10_1", "11_0", "15_1", "20_0", "25_0", "31_1", "33_0", "35_0", "40_0", "43_0", "45_0", "45_1")},
}  # fmt: skip

# A hand-built record: one function with one parameter of each JSON-schema type.
DOC = {"name": "f", "description": "", "parameters": {"type": "object", "required": ["s"], "properties": {
    "s": {"type": "string"}, "i": {"type": "integer"}, "n": {"type": "number"}, "b": {"type": "boolean"},
    "a": {"type": "array", "items": {"type": "string"}}, "raw": {"type": "array"}, "o": {"type": "object"}}}}  # fmt: skip
RECORD = {"id": "hand_0_0", "question": "user: ...", "function": [DOC, {**DOC, "name": "g"}]}


def _judge(truth, calls=(), text="", category="normal_atom_list") -> dict[str, float]:
    """Reward under both rule sets; calls travel through JSON, as a model's `<tool_call>` blocks do."""
    sent = parse_tool_calls("\n".join(render_tool_call(c) for c in calls)).calls
    return {rules: judge(category, RECORD, truth, sent, text, rules).reward for rules in ("official", "training")}


def _score(env: AceBenchEnvironment, task, calls: list[ToolCall], text: str = "") -> tuple[float, str]:
    episode = env.reset(task)
    episode.step(parse_tool_calls("\n".join(render_tool_call(c) for c in calls)).calls)
    verdict = episode.verify(text)
    return verdict.reward, verdict.reason


@pytest.fixture(scope="module")
def envs() -> dict[str, list[AceBenchEnvironment]]:
    return {rules: [AceBenchEnvironment(cat, DATA, rules=rules) for cat in CATEGORIES] for rules in ("official", "training")}


@needs_data
@pytest.mark.parametrize("rules", ["official", "training"])
def test_ground_truths(envs, rules: str) -> None:
    """Official: all but the 29 unpassable ground truths pass, those fail as upstream; training: all pass."""
    failures = {}
    for env in envs[rules]:
        for task in env.tasks():
            calls, text = ground_truth_answer(env.category, task.ground_truth["record"], task.ground_truth["truth"])
            score, reason = _score(env, task, calls, text)
            if score != 1.0:
                failures[task.spec.task_id] = reason
    total = sum(len(env.tasks()) for env in envs[rules])
    assert set(failures) == (set(UNPASSABLE) if rules == "official" else set()), failures
    assert (total, total - len(failures)) == (MEASURED["records"], MEASURED[f"{rules}_passed"])


@needs_data
@pytest.mark.parametrize("rules", ["official", "training"])
def test_perturbations_score_zero(envs, rules: str) -> None:
    checked = 0
    for env in envs[rules]:
        for task in env.tasks():
            calls, text = ground_truth_answer(env.category, task.ground_truth["record"], task.ground_truth["truth"])
            if env.category not in NORMAL:
                assert _score(env, task, [], "Sure, done.")[0] == 0.0
                assert _score(env, task, [ToolCall("anything", {})], "")[0] == 0.0
                continue
            first = calls[0]

            def each(**change):  # on every call of the first name: one call may satisfy two (N3)
                return [ToolCall(c.name, {**c.arguments, **change}) if c.name == first.name else c for c in calls]

            variants = {
                "wrong_name": [ToolCall(first.name + "_zq", first.arguments), *calls[1:]],
                "extra_param": each(zq_unexpected=1),
                "extra_call": [*calls, first],
                "no_call": [],
            }
            str_param = next((k for k, v in first.arguments.items() if isinstance(v, str)), None)
            if str_param is not None:
                variants["wrong_value"] = each(**{str_param: "zq9"})
            for kind, variant in variants.items():
                score, reason = _score(env, task, variant)
                assert score == 0.0, (task.spec.task_id, kind, reason)
            checked += 1
    assert checked > 700


@needs_data
def test_official_quirks_on_real_records() -> None:
    """N8 on a real record: a wrong top-level number passes officially, not in training."""
    for rules, expected in (("official", 1.0), ("training", 0.0)):
        env = AceBenchEnvironment("normal_atom_number", DATA, rules=rules)
        task = next(t for t in env.tasks() if t.spec.task_id == "normal_atom_number_1")
        (call,), _ = ground_truth_answer(env.category, task.ground_truth["record"], task.ground_truth["truth"])
        assert _score(env, task, [ToolCall(call.name, {**call.arguments, "systemID": 2436})])[0] == expected


# --- one test per official quirk ------------------------------------------------------------------


def test_float_for_an_integer_passes_when_equal() -> None:  # N6
    assert _judge({"f": {"s": "a", "i": 2023}}, [ToolCall("f", {"s": "a", "i": 2023.0})]) == {"official": 1.0, "training": 1.0}
    assert _judge({"f": {"s": "a", "i": 2023}}, [ToolCall("f", {"s": "a", "i": 2024.0})])["official"] == 0.0
    # `number` means int upstream: a float passes only equal to an int ground truth, any float for a float one
    assert _judge({"f": {"s": "a", "n": 5}}, [ToolCall("f", {"s": "a", "n": 5.5})]) == {"official": 0.0, "training": 0.0}
    assert _judge({"f": {"s": "a", "n": 2.5}}, [ToolCall("f", {"s": "a", "n": 7.5})]) == {"official": 1.0, "training": 0.0}


def test_call_without_arguments_fails_when_the_function_has_parameters() -> None:  # N4
    no_required = {**DOC, "parameters": {**DOC["parameters"], "required": []}}
    record = {**RECORD, "function": [no_required]}
    verdicts = {r: judge("normal_atom_list", record, {"f": {}}, [ToolCall("f", {})], "", r).reward for r in ("official", "training")}
    assert verdicts == {"official": 0.0, "training": 1.0}
    assert judge("normal_atom_list", record, {"f": {"s": "a"}}, [ToolCall("f", {})], "", "training").reward == 0.0


def test_same_name_calls_are_not_consumed() -> None:  # N3
    truth = {"f_1": {"s": "Paris"}, "f_2": {"s": "Paris France"}}
    calls = [ToolCall("f", {"s": "Paris France"}), ToolCall("f", {"s": "zq9"})]
    assert _judge(truth, calls) == {"official": 1.0, "training": 0.0}


def test_top_level_numbers_and_booleans_are_only_type_checked() -> None:  # N8
    assert _judge({"f": {"s": "a", "i": 5}}, [ToolCall("f", {"s": "a", "i": 6})]) == {"official": 1.0, "training": 0.0}
    assert _judge({"f": {"s": "a", "b": True}}, [ToolCall("f", {"s": "a", "b": False})]) == {"official": 1.0, "training": 0.0}
    assert _judge({"f": {"s": "a", "b": True}}, [ToolCall("f", {"s": "a", "b": "true"})]) == {"official": 1.0, "training": 1.0}


def test_true_false_strings_are_booleans_even_for_string_params() -> None:  # N7
    assert _judge({"f": {"s": "true"}}, [ToolCall("f", {"s": "true"})]) == {"official": 0.0, "training": 1.0}


def test_empty_list_ground_truth_and_arrays_without_items() -> None:  # N9
    assert _judge({"f": {"s": "a", "a": []}}, [ToolCall("f", {"s": "a", "a": []})]) == {"official": 0.0, "training": 1.0}
    assert _judge({"f": {"s": "a", "raw": ["x"]}}, [ToolCall("f", {"s": "a", "raw": ["x"]})]) == {"official": 0.0, "training": 1.0}
    assert _judge({"f": {"s": "a", "raw": [{"k": 1}]}}, [ToolCall("f", {"s": "a", "raw": [{"k": 1}]})])["official"] == 1.0


def test_dict_leaves_are_substrings_of_str() -> None:  # N10 (and D2 in multi-turn)
    assert _judge({"f": {"s": "a", "o": {"k": 5}}}, [ToolCall("f", {"s": "a", "o": {"k": 15}})]) == {"official": 1.0, "training": 0.0}
    listed = ({"f": {"s": "a", "o": {"k": ["New York"]}}}, [ToolCall("f", {"s": "a", "o": {"k": ["New York"]}})])
    assert _judge(*listed) == {"official": 1.0, "training": 1.0}
    assert _judge(*listed, category="normal_multi_turn_user_adjust") == {"official": 0.0, "training": 1.0}
    assert _judge({"f": {"s": "a", "o": {"k": ["x"]}}}, [ToolCall("f", {"s": "a", "o": {"k": ["X"]}})])["official"] == 0.0


def test_strings_are_standardized_substrings_and_lists_equal() -> None:  # N11
    assert _judge({"f": {"s": "New York"}}, [ToolCall("f", {"s": "new-york city"})]) == {"official": 1.0, "training": 1.0}
    assert _judge({"f": {"s": "a", "a": ["x y"]}}, [ToolCall("f", {"s": "a", "a": ["X-Y"]})])["official"] == 1.0
    assert _judge({"f": {"s": "a", "a": ["x", "y"]}}, [ToolCall("f", {"s": "a", "a": ["y", "x"]})])["official"] == 0.0


def test_suffix_stripping_and_substring_doc_lookup() -> None:  # N1, N2
    docs = [{**DOC, "name": "get"}, {**DOC, "name": "get_2"}, {**DOC, "name": "get_weather"}]
    record = {**RECORD, "function": docs}
    for name, official in (("get_2", 0.0), ("get_weather", 0.0), ("get", 1.0)):
        verdicts = {r: judge("normal_atom_list", record, {name: {"s": "a"}}, [ToolCall(name, {"s": "a"})], "", r).reward for r in ("official", "training")}
        assert verdicts == {"official": official, "training": 1.0}, name


def test_upstream_crashes_score_zero() -> None:  # N12
    record = {**RECORD, "function": [{"name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string"}}}}]}
    verdict = judge("normal_atom_list", record, {"f": {"s": "a"}}, [ToolCall("f", {"s": "a"})], "", "official")
    assert verdict.reward == 0.0 and "raises KeyError" in verdict.reason
    assert judge("normal_atom_list", record, {"f": {"s": "a"}}, [ToolCall("f", {"s": "a"})], "", "training").reward == 1.0


# --- decoding ----------------------------------------------------------------------------------------


def test_text_answers_are_decoded_officially() -> None:  # T1 in training
    assert _judge({"f": {"s": "a"}}, text="Here: [f(s='a')]") == {"official": 1.0, "training": 0.0}
    assert _judge({"f": {"s": "a"}}, text="<think>maybe [g()]</think>\n[f(s='a')]")["official"] == 1.0
    assert _judge({"f": {"s": "a"}}, text="[f(s='a')] done", category="normal_multi_turn_user_adjust")["official"] == 0.0


def test_brackets_inside_strings_break_the_extraction() -> None:  # D1
    assert outer_brackets("x [f(s='a]')] y") == "[f(s='a]"
    assert _judge({"f": {"s": "a]"}}, [ToolCall("f", {"s": "a]"})]) == {"official": 0.0, "training": 1.0}
    assert outer_brackets("] [f()]") is None


def test_decoder_quirks() -> None:  # D2-D7
    assert decode("[ f ( s = 'New York' ) ]", multi_turn=True) == [("f", {"s": "NewYork"})]  # D2
    assert decode("[f('pos', s=x)]", False) == [("f", {"s": "x"})]  # D3, D4
    assert decode("[f(a=+5, b=not True, c=-2.5)]", False) == [("f", {"a": -5, "b": -1, "c": -2.5})]  # D5
    assert decode("[f(a=2*3+1, b='ab'*2)]", False) == [("f", {"a": 7, "b": "abab"})]  # D6
    assert decode("[f(a=x[0], b=(1, 2)), g()]", False) == [("f", {"a": "x[0]", "b": (1, 2)}), ("g", {})]  # D7
    with pytest.raises(DecodeError, match="cannot be written"):  # `f(from=1)` does not parse upstream
        official_text([ToolCall("f", {"from": 1})])
    for bad in ("[f(a=lambda: 1)]", "[f(a=len('a')+1)]", "[f(a=9**9**9)]", "[1]", "f(a=1)", "[f(a={**k})]"):
        with pytest.raises(DecodeError):
            decode(bad, False)


# --- special categories ------------------------------------------------------------------------------


def test_special_phrases() -> None:  # S1
    incomplete = {"f": ["s", "i"]}
    good = "Missing necessary parameters (s, i) for the api (f)"
    assert _judge(incomplete, text=good, category="special_incomplete") == {"official": 1.0, "training": 1.0}
    assert _judge(incomplete, text=good.lower(), category="special_incomplete")["official"] == 0.0
    assert _judge(incomplete, [ToolCall("f", {"s": "a"})], good, "special_incomplete") == {"official": 1.0, "training": 0.0}
    error = {"s": ["1234WrongID"]}
    assert _judge(error, text="There is incorrect value (1234WrongID) for the parameters (x)", category="special_error_param")["official"] == 1.0
    assert _judge("", text="due to the limitations of the function", category="special_irrelevant")["official"] == 1.0


# --- construction ------------------------------------------------------------------------------------


def test_rules_option_is_validated() -> None:
    with pytest.raises(ValueError, match=r"rules must be one of 'official', 'training'; got 'strict'"):
        AceBenchEnvironment("special_irrelevant", DATA, rules="strict")


@needs_data
def test_make_env_and_task_metadata() -> None:
    env = make_env("acebench_normal_single_turn_parallel_function", data_dir=DATA, rules="training")
    task = env.tasks()[0]
    assert env.name == "acebench_normal_single_turn_parallel_function" and env.rules == "training"
    assert task.spec.task_id == "normal_single_turn_parallel_function_0"
    assert task.spec.verifier == "acebench_ast" and task.spec.features["is_parallel"] == 1.0
    assert task.messages[-1]["role"] == "user" and all(t["type"] == "function" for t in task.tools)
    episode = env.reset(task)
    calls, _ = ground_truth_answer(env.category, task.ground_truth["record"], task.ground_truth["truth"])
    episode.turn("\n".join(render_tool_call(c) for c in calls))
    assert episode.verify("").reward == 1.0


def test_missing_data_dir_names_the_option() -> None:
    with pytest.raises(ValueError, match="data_dir"):
        AceBenchEnvironment("special_irrelevant", None)
