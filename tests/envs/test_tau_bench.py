"""tau-bench retail/airline: shipped tasks replay to reward 1; doing nothing or a wrong action scores 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from envsched_lightning.envs.backends.tau_common import ToolError, safe_arithmetic
from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.tau_bench import READ_ONLY, TauEnvironment, load_task_file

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "tau_bench").is_dir(), reason=f"benchmark data not found at {DATA}")


@pytest.fixture(scope="module", params=["retail", "airline"])
def env(request) -> TauEnvironment:
    return TauEnvironment(request.param, DATA)


def _calls(task) -> list[ToolCall]:
    return [ToolCall(a["name"], a["kwargs"]) for a in task.ground_truth["actions"]]


@needs_data
def test_ground_truth_scores_one_and_shortcuts_fail(env) -> None:
    tasks = env.tasks()
    assert len(tasks) >= 30
    for task in tasks:
        outputs = task.ground_truth["outputs"]
        answer = "Done. " + " ".join(outputs)
        episode = env.reset(task)
        results = episode.step(_calls(task))
        assert all(r.error is None for r in results), (task.spec.task_id, results)
        assert episode.verify(answer).reward == 1.0, task.spec.task_id
        writes = [c for c in _calls(task) if c.name not in READ_ONLY]
        if writes:  # doing nothing leaves the database unchanged
            assert env.reset(task).verify(answer).reward == 0.0
        else:  # a read-only task is judged by its outputs
            assert outputs and env.reset(task).verify("I am not sure.").reward == 0.0


@needs_data
def test_a_wrong_write_fails(env) -> None:
    write_tasks = [t for t in env.tasks() if t.spec.features["n_write_calls"] > 0]
    for task, other in zip(write_tasks, write_tasks[1:] + write_tasks[:1]):
        if _calls(task)[-1] == _calls(other)[-1]:
            continue
        episode = env.reset(task)
        episode.step(_calls(other))  # someone else's write
        assert episode.verify("Done.").reward == 0.0, (task.spec.task_id, other.spec.task_id)


@needs_data
def test_episodes_do_not_share_state(env) -> None:
    task = next(t for t in env.tasks() if t.spec.features["n_write_calls"] > 0)
    first = env.reset(task)
    first.step(_calls(task))
    assert env.reset(task).tools.hash() != first.tools.hash()
    refused = env.reset(task).step([ToolCall(_calls(task)[-1].name, {"bogus": 1})])
    assert refused[0].error and refused[0].content.startswith("Error:")


def test_calculate_never_evaluates_code() -> None:
    assert safe_arithmetic("(2 + 3) * 4 / 2") == 10
    for bad in ["__import__('os')", "2 ** 100", "a + 1", "1/0"]:
        with pytest.raises(ToolError):
            safe_arithmetic(bad)


def test_bad_task_file_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"task_id": "a", "instruction": "x", "actions": [], "outputs": []}\n{"task_id": "b", "instruction": 3}\n')
    with pytest.raises(ValueError, match=r"tasks\.jsonl:2"):
        load_task_file(path)


def test_missing_data_dir_names_the_option() -> None:
    with pytest.raises(ValueError, match="data_dir"):
        TauEnvironment("retail", None)
