"""`python -m envsched_lightning.compare RUN RUN` on two real runs of the CPU default (envsched and
random, small settings): their metrics.csv, the numbers the console printed, the figure and the W&B run."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # train.py is a script at the repository root, not a package module
from train import train  # noqa: E402

from envsched_lightning.compare import COLUMNS, figure, read_run, smoothed  # noqa: E402
from envsched_lightning.compare import main as compare  # noqa: E402
from envsched_lightning.eval_log import EVAL_TASKS  # noqa: E402
from tests.run_configs import tiny_cfg  # noqa: E402

SCHEDULERS = ("envsched", "random")
# evaluated before training (a whole-set sanity check, as tiny_cpu does) and after steps 2 and 4; a real
# warm start and 12 held-out tasks, so the scores are not all zero
SMALL = ("steps=4", "data.steps_per_epoch=2", "model.warm_start.steps=60", "model.sampling.max_new_tokens=32",
         "env.banking.num_tasks=12", "env.calendar.num_tasks=12", "env.messaging.num_tasks=12", "data.eval_per_env=4",
         "model.optimizer.lr=2e-3", "trainer.num_sanity_val_steps=-1", "~callbacks.scheduling_logger", "logger=csv")  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """Scheduler -> (run folder, what the run printed)."""
    out = {}
    for scheduler in SCHEDULERS:
        folder = tmp_path_factory.mktemp(scheduler)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            train(tiny_cfg(folder, f"scheduler={scheduler}", *SMALL))
        out[scheduler] = (folder, printed.getvalue())
    return out


def metrics_rows(folder: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(next(folder.glob("csv/version_*/metrics.csv")).open()))


def test_metrics_csv_holds_the_score_before_training_at_step_0_and_grpo_steps_from_1(runs):
    for folder, printed in runs.values():
        rows = metrics_rows(folder)
        assert [int(r["step"]) for r in rows if r.get("rollout/reward_mean")] == [1, 2, 3, 4]
        evals = {int(r["step"]): float(r["eval/score"]) for r in rows if r.get("eval/score")}
        assert sorted(evals) == [0, 2, 4]
        before = float(printed.split("eval before training: held-out score ")[1].split()[0])
        assert f"{evals[0]:.3f}" == f"{before:.3f}"  # what the console printed before step 1
        assert all(r.get(f"eval/score/{env}") for r in rows if r.get("eval/score") for env in ("banking", "calendar"))
        per_task = [json.loads(line) for line in (folder / "csv" / "version_0" / EVAL_TASKS).read_text().splitlines()]
        assert [r["step"] for r in per_task] == [0, 2, 4] and all(len(r["rewards"]) == 12 for r in per_task)


def test_compare_gives_the_held_out_change_the_console_summary_gave(runs, tmp_path, capsys):
    compare([*(str(folder) for folder, _ in runs.values()), "--out", str(tmp_path / "cmp")])
    text = capsys.readouterr().out
    for scheduler, (folder, printed) in runs.items():
        summary = printed.split("\ndone: ")[1].splitlines()[0]
        said = "held-out score " + summary.split("; held-out score ")[1]  # "held-out score A -> B (change ... noise))"
        line = next(ln for ln in text.splitlines() if ln.startswith(f"- {read_run(folder).label}: "))
        assert f": {said}; step 0 -> 4, paired by task from {EVAL_TASKS}" in line, (line, said)
        assert f"| {scheduler} |" in text
    assert (tmp_path / "cmp.md").read_text().strip() in text
    # without the per-task file only the change of the means is known, and the line says so
    folder = runs["random"][0]
    (folder / "csv" / "version_0" / EVAL_TASKS).rename(tmp_path / "aside.jsonl")
    try:
        change = read_run(folder).held_out_change()
    finally:
        (tmp_path / "aside.jsonl").rename(folder / "csv" / "version_0" / EVAL_TASKS)
    assert change.paired is None and (change.first_step, change.last_step) == (0, 4)
    assert f"no {EVAL_TASKS}, so no 2 s.e." in change.describe() and "+-" not in change.describe()


def test_the_figure_shows_every_run_held_out_and_smooths_only_on_request(runs):
    curves = [read_run(folder) for folder, _ in runs.values()]
    reward, _, held_out = figure(curves).axes
    drawn = [ln for ln in held_out.get_lines() if ln.get_label() in {r.label for r in curves}]
    assert len(drawn) == len(curves) and len({ln.get_marker() for ln in drawn}) == len(curves)  # one artist per run
    xs = [list(ln.get_xdata()) for ln in drawn]
    assert all(len(x) == 3 for x in xs) and xs[0] != xs[1]  # equal scores still side by side
    assert [round(x) for x in xs[0]] == [0, 2, 4]
    assert [list(ln.get_xdata()) for ln in reward.get_lines()] == [[1, 2, 3, 4]] * len(curves)  # 1-based, raw
    reward, _, _ = figure(curves, smooth=3).axes
    lines = reward.get_lines()
    assert [ln.get_alpha() for ln in lines] == [0.25, None] * len(curves)  # per run: raw, faint, then smoothed
    raw = [v for _, v in curves[0].curves["reward"]]
    assert list(lines[1].get_ydata()) == pytest.approx(smoothed(raw, 3))
    assert smoothed([0.0, 1.0, 2.0, 3.0], 2) == [0.0, 0.5, 1.5, 2.5]


def test_compare_logs_the_comparison_as_a_wandb_run(runs, tmp_path, capsys, monkeypatch):
    folders = [folder for folder, _ in runs.values()]
    monkeypatch.setenv("WANDB_MODE", "offline")
    compare([*map(str, folders), "--out", str(tmp_path / "cmp"), "--wandb", "envsched-compare", "--smooth", "2"])
    text = capsys.readouterr().out
    assert (tmp_path / "cmp.png").stat().st_size > 10_000
    (run,) = (tmp_path / "cmp_wandb" / "wandb").glob("offline-run-*")  # the same comparison as a W&B run
    assert f"W&B run: {run}" in text
    media = run / "files" / "media"
    (logged,) = (media / "table" / "compare").glob("table_*.table.json")
    assert [row[1] for row in json.loads(logged.read_text())["data"]] == list(SCHEDULERS)
    for key in ("reward", "zero_var", "held_out"):  # a line panel per curve, a line per run
        (panel,) = (media / "table" / "compare").glob(f"{key}_table_*.table.json")
        assert {row[1] for row in json.loads(panel.read_text())["data"]} == {r.label for r in map(read_run, folders)}
    assert list((media / "images" / "compare").glob("figure_*.png"))
    with pytest.raises(FileNotFoundError, match="no csv/version_\\*/metrics.csv"):
        read_run(tmp_path / "nothing-here")
    with pytest.raises(SystemExit):
        compare([str(folders[0]), "--smooth", "0"])
    assert "--smooth must be >= 1" in capsys.readouterr().err


def _copy(runs, tmp_path: Path, name: str) -> Path:
    source, _ = runs["envsched"]
    target = tmp_path / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.png", "checkpoints"))
    return target


def test_a_hostile_run_folder_is_skipped_with_a_message_and_the_others_compared(runs, tmp_path, capsys, monkeypatch):
    """Nothing in a run folder resolves, blocks, floods or breaks the table and figure (it may come from anywhere)."""
    monkeypatch.setenv("ENVSCHED_TEST_SECRET", "s3cr3t-value")
    good = _copy(runs, tmp_path, "good")
    secret = _copy(runs, tmp_path, "secret")
    config = secret / "config_resolved.yaml"
    config.write_text(config.read_text().replace("name: envsched", "name: ${oc.env:ENVSCHED_TEST_SECRET}", 1))
    fifo = _copy(runs, tmp_path, "fifo")
    (metrics := next(fifo.glob("csv/version_*/metrics.csv"))).unlink()
    os.mkfifo(metrics)  # reading it would block forever
    zero = _copy(runs, tmp_path, "zero")
    (metrics := next(zero.glob("csv/version_*/metrics.csv"))).unlink()
    metrics.symlink_to("/dev/zero")  # reading it would never end
    nan = _copy(runs, tmp_path, "nan")
    metrics = next(nan.glob("csv/version_*/metrics.csv"))
    rows = metrics.read_text().splitlines()
    header, last = rows[0].split(","), rows[-1].split(",")
    last[header.index("step")] = "nan"  # a row whose step is not a number: skipped, not a crash
    metrics.write_text("\n".join([*rows, ",".join(last)]) + "\n")
    named = _copy(runs, tmp_path, "x$\\frac{1}{0$ | injected |")  # mathtext that fails, and table pipes
    aliases = _copy(runs, tmp_path, "aliases")
    (aliases / "config_resolved.yaml").write_text("a: &a [1, 1, 1]\nb: [*a, *a, *a]\n")
    folders = [good, secret, fifo, zero, nan, named, aliases]
    compare([*map(str, folders), "--out", str(tmp_path / "cmp")])
    out, err = capsys.readouterr()
    assert "s3cr3t" not in out + err
    assert f"skipped {fifo}" in err and "not a regular file" in err
    assert f"skipped {zero}" in err and f"skipped {aliases}" in err and "anchors and aliases" in err
    table_rows = [line for line in out.splitlines() if line.startswith("| ") and "run |" not in line]
    assert len(table_rows) == 4  # good, secret (its name left as text), nan (that row skipped), named
    assert all(line.count(" | ") == len(COLUMNS) - 1 for line in table_rows)  # no injected column
    assert (tmp_path / "cmp.png").stat().st_size > 10_000
