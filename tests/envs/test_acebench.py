"""ACEBench-en normal/special: the ground truth scores 1.0 on every record; perturbations score 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from envsched_lightning.envs.acebench import CATEGORIES, NORMAL, AceBenchEnvironment, ground_truth_answer
from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.parsing import parse_tool_calls, render_tool_call

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "acebench").is_dir(), reason=f"benchmark data not found at {DATA}")
MEASURED = {"records": 973, "passed": 973}  # reported in docs/benchmarks.md


def _score(env: AceBenchEnvironment, task, calls: list[ToolCall], text: str = "") -> tuple[float, str]:
    decoded = parse_tool_calls("\n".join(render_tool_call(c) for c in calls)).calls  # as the model's text
    episode = env.reset(task)
    episode.step(decoded)
    verdict = episode.verify(text)
    return verdict.reward, verdict.reason


@pytest.fixture(scope="module")
def envs() -> list[AceBenchEnvironment]:
    return [AceBenchEnvironment(cat, DATA) for cat in CATEGORIES]


@needs_data
def test_ground_truth_scores_one_everywhere(envs) -> None:
    total, failures = 0, {}
    for env in envs:
        for task in env.tasks():
            total += 1
            calls, text = ground_truth_answer(env.category, task.ground_truth["record"], task.ground_truth["truth"])
            score, reason = _score(env, task, calls, text)
            if score != 1.0:
                failures[task.spec.task_id] = reason
    assert not failures, failures
    assert (total, total - len(failures)) == (MEASURED["records"], MEASURED["passed"])


@needs_data
def test_perturbations_score_zero(envs) -> None:
    checked = 0
    for env in envs:
        for task in env.tasks():
            calls, text = ground_truth_answer(env.category, task.ground_truth["record"], task.ground_truth["truth"])
            if env.category not in NORMAL:
                assert _score(env, task, [], "Sure, done.")[0] == 0.0
                assert _score(env, task, [ToolCall("anything", {})], text)[0] == 0.0
                continue
            first = calls[0]
            variants = {
                "wrong_name": [ToolCall(first.name + "_zq", first.arguments), *calls[1:]],
                "extra_param": [ToolCall(first.name, {**first.arguments, "zq_unexpected": 1}), *calls[1:]],
                "extra_call": [*calls, first],
            }
            str_param = next((k for k, v in first.arguments.items() if isinstance(v, str)), None)
            if str_param is not None:
                variants["wrong_value"] = [ToolCall(first.name, {**first.arguments, str_param: "zq9"}), *calls[1:]]
            for kind, variant in variants.items():
                score, reason = _score(env, task, variant)
                assert score == 0.0, (task.spec.task_id, kind, reason)
            checked += 1
    assert checked > 700


@needs_data
def test_task_metadata() -> None:
    env = AceBenchEnvironment("normal_single_turn_parallel_function", DATA)
    task = env.tasks()[0]
    assert env.name == "acebench_normal_single_turn_parallel_function"
    assert task.spec.verifier == "acebench_ast" and task.spec.features["is_parallel"] == 1.0
    assert task.messages[-1]["role"] == "user" and all(t["type"] == "function" for t in task.tools)


def test_missing_data_dir_names_the_option() -> None:
    with pytest.raises(ValueError, match="data_dir"):
        AceBenchEnvironment("special_irrelevant", None)
