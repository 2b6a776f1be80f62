"""The figures a reader sees, drawn with real matplotlib from small real inputs and read back from
the Figure: the GRPO benchmark's learning curves (and its `--replot`) and the scheduling heatmap."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
from lightning.pytorch.loggers import CSVLogger
from matplotlib.collections import PathCollection

import callbacks.plots as plots
from benchmarks import grpo_efficiency as ge
from callbacks.scheduling_logger import SchedulingLoggerCallback, decision_rows
from envsched_lightning.scheduling import Decision, RolloutGroup, TaskSpec, build_scheduler

SETUP = ge.Setup(envs=("a", "b"), steps=20, eval_every=10, batch_size=2, group_size=2)
WARM = {"scores": {"a": 0.1, "b": 0.1}}
# held-out score at steps 10 and 20 per seed (both envs alike); warm start 0.1 at step 0
CURVES = {"random": [(0.2, 0.4), (0.2, 0.5)], "plr": [(0.5, 0.6), (0.4, 0.6)], "envsched": [(0.3, 0.5), (0.3, 0.5)]}


def run_record(name: str, seed: int, scores: tuple[float, ...]) -> dict:
    """What `run_one` returns, for a run whose held-out scores were `scores` at steps 10, 20, ..."""
    evals = [{"step": 10 * (i + 1), "scores": {"a": s, "b": s}} for i, s in enumerate(scores)]
    return {"scheduler": name, "seed": seed, "seconds": 60.0, "zero_var": [0.5], "reward": [0.2], "envs": [["a", "b"]], "evals": evals}


RESULTS = {name: [run_record(name, s, c) for s, c in enumerate(cs)] for name, cs in CURVES.items()}


def test_learning_curves_show_one_line_per_scheduler_the_target_and_steps(tmp_path):
    fig = ge.plot(RESULTS, WARM, SETUP, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 5000
    (ax,) = fig.axes
    lines = [ln for ln in ax.get_lines() if ln.get_label() in RESULTS]
    assert sorted(ln.get_label() for ln in lines) == sorted(RESULTS)  # one line each, no more
    assert len({ln.get_color() for ln in lines}) == len(RESULTS)
    for ln in lines:  # the seed mean, over GRPO steps (not rollouts)
        assert list(ln.get_xdata()) == [0, 10, 20]
        np.testing.assert_allclose(ln.get_ydata()[1:], np.mean(CURVES[ln.get_label()], axis=0))
    # the target line: random's final seed mean (0.45), drawn and labelled with its value
    (target,) = [ln for ln in ax.get_lines() if "target" in ln.get_label()]
    np.testing.assert_allclose(target.get_ydata(), [0.45, 0.45])
    assert "0.450" in target.get_label() and "steps_to_target" in target.get_label()
    assert ge.target_score(RESULTS, WARM, SETUP) == 0.45
    # where each curve meets the target is exactly the table's steps_to_target
    rows = {r["scheduler"]: r for r in ge.summarize(RESULTS, WARM, SETUP)}
    marks = sorted(float(c.get_offsets()[0][0]) for c in ax.collections if isinstance(c, PathCollection))
    np.testing.assert_allclose(marks, sorted(r["steps_to_target"] for r in rows.values()))
    assert rows["envsched"]["steps_to_target"] == 17.5 and rows["plr"]["steps_to_target"] == 10.0
    assert "step" in ax.get_xlabel().lower() and "rollout" not in ax.get_xlabel().lower()
    (top,) = ax.child_axes  # rollouts kept on the top axis, for the table's rollout columns
    assert "rollouts" in top.get_xlabel()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert set(RESULTS) <= set(legend) and any("target" in t for t in legend)
    assert "2 seeds" in ax.get_title()


def test_replot_redraws_from_the_saved_json_without_training(tmp_path):
    rows = ge.summarize(RESULTS, WARM, SETUP)
    saved = {"setup": dataclasses.asdict(SETUP), "warm": WARM, "rows": rows, "runs": RESULTS}
    (tmp_path / "grpo_efficiency.json").write_text(json.dumps(saved))
    out = tmp_path / "docs"
    assert ge.main(["--replot", str(tmp_path / "grpo_efficiency.json"), "--out", str(out)]) == rows
    assert (out / "grpo_efficiency.png").stat().st_size > 5000


def test_heatmap_is_titled_with_the_scheduler_and_the_run(tmp_path, monkeypatch):
    drawn, real = [], plots.heatmap_figure

    def spy(*args, **kw):  # keeps the Figure that `save_heatmap` draws, to read it back
        drawn.append(real(*args, **kw))
        return drawn[-1]

    monkeypatch.setattr(plots, "heatmap_figure", spy)
    specs = tuple(TaskSpec(env, f"t{i}") for env in ("banking", "calendar") for i in range(3))
    logger = CSVLogger(tmp_path, name="csv", version=3)
    run_dir = tmp_path / "2026-12-04" / "05-41-53"  # a Hydra run directory
    trainer = SimpleNamespace(datamodule=SimpleNamespace(scheduler=build_scheduler("plr", specs)),
                              default_root_dir=str(run_dir), log_dir=logger.log_dir, loggers=[logger], is_global_zero=True)  # fmt: skip
    cb = SchedulingLoggerCallback()
    cb.setup(trainer, None, "fit")
    cb.on_train_start(trainer, None)
    for step, groups in ((4, [RolloutGroup(0, (0.0, 1.0)), RolloutGroup(3, (1.0, 1.0))]), (5, [RolloutGroup(1, (0.0, 1.0, 1.0))])):
        rows = [{"index": g.index, "env": specs[g.index].env, "task_id": specs[g.index].task_id, "priority": 0.0} for g in groups]
        cb._record(step, decision_rows(Decision(step, [g.index for g in groups], rows, {}), groups, specs), groups, specs)
    cb.on_train_end(trainer, None)
    assert cb.heatmap_path.is_file() and cb.heatmap_path.parent == tmp_path / "csv" / "version_3"
    ax = drawn[-1].axes[0]
    assert "plr" in ax.get_title() and "2026-12-04/05-41-53" in ax.get_title() and "csv/version_3" in ax.get_title()
    assert "step" in ax.get_xlabel() and ax.get_ylabel() == "environment"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["banking", "calendar"]
    assert ax.images[0].get_array().tolist() == [[2, 3], [2, 0]]  # [env, step]
    assert drawn[-1].axes[1].get_ylabel() == "rollouts"  # the colour bar


def test_env_effects_heatmap_marks_what_the_scheduler_acts_on(tmp_path):
    effect = np.array([[0.01, -0.02, np.nan], [0.0, 0.01, np.nan], [0.003, 0.001, np.nan]])
    t = np.array([[3.0, -4.0, np.nan], [0.1, 2.0, np.nan], [1.0, 0.5, np.nan]])  # env c: too few re-picks
    fig = plots.env_effects_figure(effect, t, ["a", "b", "c"], critical_t=2.6, scheduler="envsched", step=40)
    ax = fig.axes[0]
    assert [x.get_text() for x in ax.texts] == ["3.0", "-4.0", "0.1", "2.0", "1.0", "0.5"]  # unknown cells blank
    outlined = [(p.get_x() + 0.5, p.get_y() + 0.5) for p in ax.patches]
    assert outlined == [(1.0, 0.0)]  # a -> b only: the diagonal is an environment's own gain, not an effect
    assert ax.images[0].get_clim() == (-0.02, 0.02)  # centred at 0
    assert "envsched" in ax.get_title() and "step 40" in ax.get_title()
    path = plots.save_env_effects(effect, t, ["a", "b", "c"], 2.6, tmp_path / "e.png")
    assert path.stat().st_size > 2000
