"""BFCL-v3 multi_turn_base: ground truth replays cleanly on our backends and wrong calls fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from envsched_lightning.envs.backends.file_system import GorillaFileSystem
from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.bfcl_multi_turn import BACKENDS, MultiTurnEnvironment, World, check_turns, parse_call_string

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "bfcl_v3").is_dir(), reason=f"benchmark data not found at {DATA}")
MEASURED = {"supported": 45, "excluded": 155}  # reported in docs/benchmarks.md


@pytest.fixture(scope="module")
def env() -> MultiTurnEnvironment:
    return MultiTurnEnvironment(DATA)


@needs_data
def test_ground_truth_replays_without_errors_and_passes(env) -> None:
    tasks = env.tasks()
    assert (len(tasks), len(env.excluded)) == (MEASURED["supported"], MEASURED["excluded"])
    for task in tasks:
        record, truth = task.ground_truth["record"], task.ground_truth["calls"]
        world = World(record["involved_classes"], record["initial_config"])
        errors = [(c, out) for turn in truth for c in turn if "error" in (out := world.execute(c))]
        assert not errors, (record["id"], errors)
        assert check_turns(record, truth, truth).reward == 1.0, record["id"]
        assert set(record["involved_classes"]) <= BACKENDS.keys()


def _corrupt(call: ToolCall) -> ToolCall | None:
    """The same call with its first string argument changed, or None if it has none."""
    key = next((k for k, v in call.arguments.items() if isinstance(v, str)), None)
    return None if key is None else ToolCall(call.name, {**call.arguments, key: call.arguments[key] + "_zq9"})


@needs_data
def test_wrong_calls_fail(env) -> None:
    corrupted = 0
    for task in env.tasks():
        record, truth = task.ground_truth["record"], task.ground_truth["calls"]
        first = next(t for t, turn in enumerate(truth) if turn)
        skipped = [list(turn) if t != first else [] for t, turn in enumerate(truth)]
        assert "empty turn" in check_turns(record, truth, skipped).reason
        # Corrupt the last call of the first non-empty turn that has a string argument.
        for t, turn in enumerate(truth):
            bad = _corrupt(turn[-1]) if turn else None
            if bad is not None:
                model = [list(x) for x in truth]
                model[t][-1] = bad
                verdict = check_turns(record, truth, model)
                assert verdict.reward == 0.0, (record["id"], bad)
                corrupted += 1
                break
    assert corrupted == MEASURED["supported"]


@needs_data
def test_episode_runs_turn_by_turn(env) -> None:
    task = env.tasks()[0]
    truth = task.ground_truth["calls"]
    episode = env.reset(task)
    for t, turn in enumerate(truth):
        results = episode.step(turn)
        assert all(r.error is None for r in results)
        nxt = episode.end_turn()
        assert (nxt is None) == (t == len(truth) - 1)
    assert episode.verify("done").reward == 1.0
    assert env.reset(task).verify("").reward == 0.0
    assert task.spec.state_keys == tuple(task.ground_truth["record"]["involved_classes"])


def test_call_strings_are_literals_only() -> None:
    docs = {"mv": {"parameters": {"properties": {"source": {}, "destination": {}}}}}
    assert parse_call_string("mv('a', destination='b')", docs) == ToolCall("mv", {"source": "a", "destination": "b"})
    for bad in ["mv(source=open('x'))", "__import__('os')", "mv(1, 2, 3)", "rm(file_name='x')", "mv(("]:
        with pytest.raises(ValueError):
            parse_call_string(bad, docs)


def test_file_system_basics() -> None:
    fs = GorillaFileSystem()
    fs.load({"root": {"ws": {"type": "directory", "contents": {"a.txt": {"type": "file", "content": "b\na"}}}}})
    assert fs.execute("mkdir", {"dir_name": "d"}) == {}
    assert "result" in fs.execute("mv", {"source": "a.txt", "destination": "d"})
    assert fs.execute("cd", {"folder": "d"})["current_working_directory"] == "/ws/d"
    assert fs.execute("sort", {"file_name": "a.txt"}) == {"sorted_content": "a\nb"}
    assert "error" in fs.execute("cd", {"folder": "nope"})
    assert "error" in fs.execute("_file", {"name": "a.txt"})  # private helpers are not tools
    assert set(fs.public_state()) == {"root"}


@needs_data
def test_arguments_are_checked_against_the_docs_before_a_backend_runs(env) -> None:
    task = next(t for t in env.tasks() if "GorillaFileSystem" in t.ground_truth["record"]["involved_classes"])
    episode = env.reset(task)
    before = episode._world.state()
    (result,) = episode.step([ToolCall("cd", {"folder": 123})])
    assert result.error and "folder" in result.error
    (result,) = episode.step([ToolCall("mkdir", {"dir_name": "new", "unexpected": 1})])
    assert result.error and "unexpected" in result.error
    assert episode._world.state() == before
