"""`python -m envsched_lightning.envs.score`: offline scoring of raw model outputs per task id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envsched_lightning.envs.bfcl.single_turn import ground_truth_calls
from envsched_lightning.envs.oracle import oracle_turns
from envsched_lightning.envs.parsing import render_assistant_turn
from envsched_lightning.envs.registry import make_env
from envsched_lightning.envs.score import main, score_file
from tests.data_roots import data_root

N = 25  # BFCL simple tasks scored (each one is a few milliseconds)


def write_lines(path: Path, lines: list[object]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def qwen3_text(calls) -> str:
    """The ground truth as Qwen3 writes it: `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>` blocks."""
    return render_assistant_turn("", calls)


def test_bfcl_simple_ground_truth_scores_one_garbage_zero_bad_lines_named(tmp_path, capsys):
    root = data_root("bfcl_v3")
    env = make_env("bfcl_simple", data_dir=root)
    tasks = env.tasks()[:N]
    good = [{"id": t.spec.task_id, "output": qwen3_text(ground_truth_calls(t.ground_truth["question"], t.ground_truth["possible_answer"]))}
            for t in tasks[:-1]]  # fmt: skip
    assert good[0]["output"].startswith('<tool_call>\n{"name": ') and good[0]["output"].endswith("}\n</tool_call>")
    garbage = {"id": tasks[-1].spec.task_id, "output": "I would call calculate_triangle_area, probably."}
    outputs = write_lines(tmp_path / "out.jsonl", [
        *good[:3], "{not json", {"output": "no id"}, {"id": "simple_999999", "output": "x"}, {"id": good[0]["id"], "output": ""},
        {"id": "simple_100", "output": 7}, *good[3:], garbage,
    ])  # fmt: skip
    verdicts_path = tmp_path / "verdicts.jsonl"
    assert main(["--env", "bfcl_simple", "--outputs", str(outputs), "--data", str(root), "--out", str(verdicts_path)]) == 0
    out, err = capsys.readouterr()
    verdicts = [json.loads(line) for line in verdicts_path.read_text().splitlines()]
    assert [v["id"] for v in verdicts] == [t.spec.task_id for t in tasks]
    assert all(v["reward"] == 1.0 for v in verdicts[:-1]), [v for v in verdicts if v["reward"] != 1.0]
    assert verdicts[-1]["reward"] == 0.0 and verdicts[-1]["reason"]
    assert f"bfcl_simple (rules=official): {(N - 1) / N:.3f} over {N} scored tasks" in out
    assert f"missing ids ({400 - N}): " in out and "unknown ids (1): simple_999999" in out and "bad lines: 5" in out
    for lineno, why in ((4, "not JSON"), (5, "expected an object with an 'id' field"), (6, "unknown id 'simple_999999'"),
                        (7, "duplicate id 'simple_0' (first on line 1)"), (8, "id 'simple_100': 'output' must be a string")):  # fmt: skip
        assert f"{outputs}:{lineno}: {why}" in err
    assert main(["--env", "bfcl_simple", "--outputs", str(outputs), "--data", str(root), "--out", str(verdicts_path),
                 "--strict"]) == 1  # fmt: skip


def test_multi_turn_and_stateful_envs_take_turn_lists(tmp_path):
    env = make_env("banking", num_tasks=12)
    tasks = env.tasks()
    lines = [{"id": t.spec.task_id, "turns": oracle_turns(t)} for t in tasks[:6]]
    lines.append({"id": tasks[6].spec.task_id, "turns": ["Done, all settled."]})  # claims success without acting
    scored, verdicts = score_file(env, write_lines(tmp_path / "out.jsonl", lines))
    assert [v["reward"] for v in verdicts[:6]] == [1.0] * 6 and verdicts[6]["reward"] < 1.0
    assert scored.missing == [t.spec.task_id for t in tasks[7:]] and not scored.problems
    assert [v["turns_played"] for v in verdicts[:6]] == [len(x["turns"]) for x in lines[:6]]


def test_bfcl_multi_turn_plays_every_user_turn(tmp_path):
    env = make_env("bfcl_multi_turn_base", data_dir=data_root("bfcl_v3"))
    tasks = env.tasks()[:3]
    lines = [{"id": t.spec.task_id, "turns": env.oracle_turns(t)} for t in tasks]
    lines.append({"id": tasks[0].spec.task_id, "turns": ["Done."]})  # duplicate: reported, not scored
    scored, verdicts = score_file(env, write_lines(tmp_path / "out.jsonl", lines))
    assert [v["reward"] for v in verdicts] == [1.0] * 3, [v["reason"] for v in verdicts]
    assert all(v["turns_played"] == v["turns_given"] > 1 for v in verdicts) and len(scored.problems) == 1
    # stopping after the first user turn fails the conversation
    _, cut = score_file(env, write_lines(tmp_path / "cut.jsonl", [{"id": tasks[0].spec.task_id, "turns": lines[0]["turns"][:1]}]))
    assert cut[0]["reward"] == 0.0


def test_unreadable_inputs_exit_2(tmp_path, capsys):
    assert main(["--env", "banking", "--outputs", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot score" in capsys.readouterr().err
    assert main(["--env", "bfcl_simple", "--outputs", str(tmp_path / "x.jsonl"), "--data", ""]) == 2
    assert "data_dir" in capsys.readouterr().err
