"""User task files: a round trip through JSONL, and errors that name the file and the line."""

from __future__ import annotations

import json

import pytest

from envsched_lightning.envs import load_tasks_jsonl, make_env, oracle_turns, run_scripted, save_tasks_jsonl

GOOD = {"id": "t1", "pattern": "single", "request": "Deposit 5 into A1.", "answer": "Done.", "checks": ["state"],
        "turns": [[{"name": "deposit", "arguments": {"account_id": "A1", "amount": 5}}]]}


def _write(tmp_path, lines):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_generated_tasks_round_trip_through_a_file(tmp_path):
    env = make_env("banking", num_tasks=30)
    path = tmp_path / "bank.jsonl"
    save_tasks_jsonl(path, env.tasks())
    save_tasks_jsonl(tmp_path / "again.jsonl", load_tasks_jsonl(path))
    assert (tmp_path / "again.jsonl").read_text() == path.read_text()
    user = make_env("banking", tasks_path=str(path))
    assert [t.spec for t in user.tasks()] == [t.spec for t in env.tasks()]  # num_tasks null: the whole file
    assert [t.spec for t in make_env("banking", tasks_path=str(path), num_tasks=12).tasks()] == [
        t.spec for t in env.tasks()[:12]]  # fmt: skip
    with pytest.raises(ValueError, match=r"bank.jsonl holds 30 tasks, num_tasks=31 asks for more"):
        make_env("banking", tasks_path=str(path), num_tasks=31).tasks()
    for task in user.tasks():
        assert run_scripted(user, task, oracle_turns(task))[0].reward == 1.0


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ("{not json", "Expecting"),
        ("[1, 2]", "expected a JSON object"),
        ({k: v for k, v in GOOD.items() if k != "request"}, "missing key 'request'"),
        ({**GOOD, "pattern": "teleport"}, "unknown pattern"),
        ({**GOOD, "checks": ["vibes"]}, "checks must be"),
        ({**GOOD, "turns": [{"name": "x"}]}, "turns[0] must be a list"),
        ({**GOOD, "turns": [[{"arguments": {}}]]}, "turns[0][0]"),
        ({**GOOD, "colour": "red"}, "unexpected keys"),
        ({**GOOD, "answer_contains": [1]}, "list of strings"),
        (GOOD, "duplicate id"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, bad, needle):
    path = _write(tmp_path, [GOOD, "", bad])
    with pytest.raises(ValueError) as err:
        load_tasks_jsonl(path)
    assert f"{path}:3: " in str(err.value) and needle in str(err.value)


def test_world_level_errors_name_file_and_line(tmp_path):
    account = sorted(make_env("banking", num_tasks=1).initial_state()["accounts"])[0]
    good = {**GOOD, "turns": [[{"name": "deposit", "arguments": {"account_id": account, "amount": 5}}]]}
    bad_tool = {**GOOD, "id": "t2", "turns": [[{"name": "launch_rocket", "arguments": {}}]]}
    path = _write(tmp_path, [good, bad_tool])
    with pytest.raises(ValueError, match=rf"{path}:2: unknown tools \['launch_rocket'\]"):
        make_env("banking", tasks_path=str(path)).tasks()
    failing = {**GOOD, "id": "t3", "turns": [[{"name": "deposit", "arguments": {"account_id": "NOPE", "amount": 5}}]]}
    path = _write(tmp_path, [failing])
    with pytest.raises(ValueError, match=rf"{path}:1: ground-truth call deposit fails: no account NOPE"):
        make_env("banking", tasks_path=str(path)).tasks()


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.jsonl"):
        load_tasks_jsonl(tmp_path / "nowhere.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(ValueError, match="no tasks"):
        load_tasks_jsonl(tmp_path / "empty.jsonl")
