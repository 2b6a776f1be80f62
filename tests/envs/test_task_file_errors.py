"""A bad task file fails at load with its path and line: bad bytes, duplicate ids, missing or mistyped fields."""

from __future__ import annotations

import json

import pytest

from envsched_lightning.envs import make_env
from envsched_lightning.envs.benchmark_files import field_types, read_jsonl
from tests.data_roots import data_root

GOOD = {"id": "simple_0", "question": [[{"role": "user", "content": "hi"}]],
        "function": [{"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {}, "required": []}}]}  # fmt: skip


def write(path, *lines: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        ((json.dumps(GOOD).encode(), b"\xff\xfe{}"), r":2: not UTF-8 text"),
        ((json.dumps(GOOD).encode(), json.dumps(GOOD).encode()), r":2: duplicate id 'simple_0' \(first on line 1\)"),
        ((json.dumps({**GOOD, "question": "hi"}).encode(),), r":1: record 'simple_0': 'question' must be list, got str"),
        ((json.dumps({k: v for k, v in GOOD.items() if k != "function"}).encode(),), r":1: record 'simple_0' has no 'function'"),
        ((b"{" * 5000,), r":1: malformed JSON"),
    ],
    ids=["bytes", "duplicate", "type", "missing", "deep"],
)
def test_read_jsonl_names_file_and_line(tmp_path, lines, match):
    path = tmp_path / "tasks.json"
    write(path, *lines)
    with pytest.raises(ValueError, match=f"{path}{match}"):
        read_jsonl(path, check=field_types(question=list, function=list))


def test_a_bfcl_question_file_with_a_string_question_fails_at_load_naming_it(tmp_path):
    root = tmp_path / "bfcl_v3"
    write(root / "BFCL_v3_simple.json", json.dumps({**GOOD, "question": "hi"}).encode())
    write(root / "possible_answer" / "BFCL_v3_simple.json", json.dumps({"id": "simple_0", "ground_truth": []}).encode())
    with pytest.raises(ValueError, match=r"BFCL_v3_simple.json:1: record 'simple_0': 'question' must be list"):
        make_env("bfcl_simple", data_dir=str(tmp_path)).tasks()


def test_a_tau_task_whose_ground_truth_fails_is_refused_at_load_by_id(tmp_path):
    path = tmp_path / "tasks.jsonl"
    bad = {"task_id": "t_bad", "instruction": "x", "actions": [{"name": "get_user_details", "kwargs": {"user_id": 5}}],
           "outputs": []}  # fmt: skip
    write(path, json.dumps(bad).encode())
    env = make_env("tau_retail", data_dir=str(data_root("tau_bench")), tasks_path=str(path))
    with pytest.raises(ValueError, match=r"tau_retail task 't_bad': ground-truth action 0 \(get_user_details\) fails"):
        env.tasks()


def test_every_task_reader_names_path_and_line_for_bytes_that_are_not_utf8(tmp_path):
    from envsched_lightning.envs.benchmark_files import read_utf8
    from envsched_lightning.envs.tasks_io import load_tasks_jsonl
    from envsched_lightning.envs.tau.official_tasks import read_task_module

    world_tasks = tmp_path / "world.jsonl"
    write(world_tasks, b"", b"\xff\xfe")  # a blank first line, then bytes that are not UTF-8
    with pytest.raises(ValueError, match=f"{world_tasks}:2: not UTF-8 text"):
        load_tasks_jsonl(world_tasks)
    tau_module = tmp_path / "tasks_test.py"
    write(tau_module, b"TASKS = [", b"    'caf\xe9',", b"]")
    with pytest.raises(ValueError, match=f"{tau_module}:2: not UTF-8 text"):
        read_task_module(tau_module, "test")
    with pytest.raises(ValueError, match=f"{tau_module}:2: not UTF-8 text"):
        read_utf8(tau_module)
