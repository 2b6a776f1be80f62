"""`SchedulingLoggerCallback`: why each task was picked, and what its rollouts then earned.

Per step: `sched/env_count/<env>` (tasks per environment), `sched/<discount>_mean` for each priority
discount the scheduler applied (learnability, cost_factor, env_factor) and `sched/pred_corr` (Pearson
correlation, over the batch, of the scheduler's predicted score and the realised group reward
std: is the scheduler's notion of "informative" right?), plus one JSON line per step in
`sched_decisions.jsonl`. With a W&B logger also a `sched/decisions` table every `table_every`
steps. Every `plot_every` steps and at the end: the environment-by-step heatmap of rollouts, saved
as `sched_heatmap.png` in the run directory (and logged to W&B), and a W&B predicted-vs-realised
scatter; with a scheduler that estimates environment effects (envsched), the environment x environment
effect heatmap `sched_env_effects.png` (W&B `sched/env_effects`) and its numbers in
`sched_env_effects.json`. It only reads the DataModule's decision and groups; it never changes the schedule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.loggers import WandbLogger
from typing_extensions import override

from envsched_lightning.scheduling import Decision, RolloutGroup, TaskSpec
from envsched_lightning.scheduling.decision import decision_summary

from .constraint import datamodule_of
from .plots import save_env_effects, save_heatmap

COLUMNS = ["step", "env", "task_id", "priority", "predicted", "coverage", "penalty", "reward_mean", "reward_std"]


def decision_rows(decision: Decision, groups: list[RolloutGroup], specs: tuple[TaskSpec, ...],
                  step: int | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """One row per scheduled task: the decision's components joined with the realised rewards.

    The `COLUMNS` come first (`coverage` is None for a scheduler without one); every other score
    component the scheduler's `_priorities` returned follows under its own name. `step` replaces
    the decision's own (a refill round's decision belongs to the step it refills)."""
    by_index = {g.index: g for g in groups}
    rows = decision.rows or [{"index": i, "env": specs[i].env, "task_id": specs[i].task_id, "priority": 0.0} for i in decision.indices]
    out = []
    for row in rows:
        g = by_index.get(row["index"])
        fixed = {
            "step": decision.step if step is None else step, "env": row["env"], "task_id": row["task_id"], "priority": row["priority"],
            "predicted": row.get("predicted", row["priority"]), "coverage": row.get("coverage"),
            "penalty": row.get("penalty", 0.0),
            "reward_mean": float("nan") if g is None else g.mean, "reward_std": float("nan") if g is None else g.std,
        }  # fmt: skip
        out.append(fixed | {k: v for k, v in row.items() if k not in fixed and k != "index"})
    return out


def pearson(x: list[float], y: list[float]) -> float | None:
    """Correlation, or None when either side is constant (then it says nothing)."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size < 2 or a.std() < 1e-12 or b.std() < 1e-12:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def _nulls(a: np.ndarray) -> list:
    """A matrix as JSON-ready lists, NaN (not estimated) as null."""
    return [[None if not np.isfinite(v) else float(v) for v in row] for row in a]


def run_name(trainer: Trainer) -> str:
    """The run as a reader finds it: the run directory's tail (Hydra's `<date>/<time>`) and the first
    logger's name/version. Reads no broadcast value (`trainer.log_dir` is one), so any rank may call it."""
    parts = ["/".join(Path(trainer.default_root_dir).parts[-2:])]
    for lg in trainer.loggers[:1]:
        version = f"version_{lg.version}" if isinstance(lg.version, int) else lg.version
        parts.append("/".join(str(p) for p in (lg.name, version) if p))
    return ", ".join(parts)


class SchedulingLoggerCallback(Callback):
    def __init__(self, plot_every: int = 10, table_every: int = 1, out_dir: str | None = None, max_points: int = 5000) -> None:
        for name, v in (("plot_every", plot_every), ("table_every", table_every), ("max_points", max_points)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"callbacks.scheduling_logger.{name} must be a positive int, got {v!r}")
        self.plot_every, self.table_every, self.max_points = plot_every, table_every, max_points
        self.out_dir = out_dir
        self.env_names: list[str] = []
        self.rollouts: list[list[int]] = []  # [step][env] rollouts spent
        self.first_step = 0
        self.points: list[tuple[float, float]] = []  # (predicted, realised std) for the scatter
        self.heatmap_path: Path | None = None
        self._run_dir: Path | None = None
        self.scheduler_name: str | None = None  # both only title the heatmap
        self.run_label: str | None = None

    def run_dir(self, trainer: Trainer) -> Path:
        """Set in `on_train_start` on every rank: under DDP `trainer.log_dir` is a broadcast all
        ranks must join, so rank 0 alone must never be the one to ask."""
        return self._run_dir or Path(self.out_dir or trainer.log_dir or trainer.default_root_dir)

    @override
    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        scheduler = datamodule_of(trainer).scheduler
        self.env_names = self.env_names or list(scheduler.env_names)
        self.scheduler_name = getattr(scheduler, "name", type(scheduler).__name__)

    @override
    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._run_dir = Path(self.out_dir or trainer.log_dir or trainer.default_root_dir)
        self.run_label = run_name(trainer)

    @override
    def on_train_batch_end(self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int) -> None:
        dm = datamodule_of(trainer)
        decision, groups = dm.last_decision, dm.last_groups
        if decision is None or not groups:
            return
        rounds = getattr(dm, "step_rounds", None) or [(decision, groups)]  # more than one with dynamic sampling
        # the GRPO step just run, 1-based as in metrics.csv and on the console (the scheduler's decisions count from 0)
        step = dm.step if isinstance(getattr(dm, "step", None), int) else decision.step + 1
        rows, env_counts = [], dict.fromkeys(self.env_names, 0)
        for k, (round_decision, round_groups) in enumerate(rounds):
            tag = {"round": k} if len(rounds) > 1 else {}
            rows += [row | tag for row in decision_rows(round_decision, round_groups, dm.specs, step=step)]
            for env, count in round_decision.env_counts.items():
                env_counts[env] = env_counts.get(env, 0) + count
        metrics = {f"sched/env_count/{e}": float(env_counts.get(e, 0)) for e in self.env_names}
        # how much the choice was discounted (learning progress, cost, environment effects), when it was
        summary = decision_summary(rows)
        metrics |= {f"sched/{k}": v for k, v in summary.items() if k != "copy_repeat_frac"}  # the penalty's own
        corr = pearson([r["predicted"] for r in rows], [r["reward_std"] for r in rows])
        if corr is not None:
            metrics["sched/pred_corr"] = corr
        pl_module.log_dict(metrics, on_step=True, on_epoch=False, batch_size=len(rows))
        self._record(step, rows, groups, dm.specs)
        if trainer.is_global_zero:
            relaxations = [r for round_decision, _ in rounds for r in round_decision.relaxations]
            self._write(trainer, step, rows, env_counts, relaxations)

    def _record(self, step: int, rows: list[dict[str, Any]], groups: list[RolloutGroup], specs: tuple[TaskSpec, ...]) -> None:
        if not self.rollouts:
            self.first_step = step
        spent = dict.fromkeys(self.env_names, 0)
        for g in groups:
            spent[specs[g.index].env] += len(g.rewards)
        self.rollouts.append([spent[e] for e in self.env_names])
        self.points = (self.points + [(r["predicted"], r["reward_std"]) for r in rows])[-self.max_points :]

    def _write(self, trainer: Trainer, step: int, rows: list[dict[str, Any]], env_counts: dict[str, int],
               relaxations: list[str]) -> None:  # fmt: skip
        out = self.run_dir(trainer)
        out.mkdir(parents=True, exist_ok=True)
        record = {"step": step, "env_counts": env_counts, "relaxations": relaxations, "rows": rows}
        with (out / "sched_decisions.jsonl").open("a") as f:
            f.write(json.dumps(record) + "\n")
        wandb = [lg for lg in trainer.loggers if isinstance(lg, WandbLogger)]
        if step % self.table_every == 0:
            for lg in wandb:
                columns = list(dict.fromkeys(c for r in rows for c in r))  # COLUMNS, then the scheduler's own
                lg.log_table("sched/decisions", columns=columns, data=[[r.get(c) for c in columns] for r in rows])
        if step % self.plot_every == 0:
            self._plot(trainer, wandb)

    def _plot(self, trainer: Trainer, wandb: list[WandbLogger]) -> None:
        counts = np.asarray(self.rollouts, dtype=np.float64).T  # [E, steps]
        self.heatmap_path = save_heatmap(counts, self.env_names, self.run_dir(trainer) / "sched_heatmap.png", self.first_step,
                                         scheduler=self.scheduler_name, run=self.run_label)  # fmt: skip
        effects = self._env_effects(trainer)
        for lg in wandb:
            import wandb as wb

            lg.log_image("sched/heatmap", images=[str(self.heatmap_path)])
            if effects is not None:
                lg.log_image("sched/env_effects", images=[str(effects)])
            table = wb.Table(columns=["predicted", "realised_std"], data=[list(p) for p in self.points])
            lg.experiment.log({"sched/pred_vs_realised": wb.plot.scatter(table, "predicted", "realised_std")})

    def _env_effects(self, trainer: Trainer) -> Path | None:
        """The scheduler's environment x environment effect estimate as PNG + JSON, if it keeps one."""
        scheduler = datamodule_of(trainer).scheduler
        estimator = getattr(scheduler, "env_effects", None)
        if estimator is None:
            return None
        effect, t = estimator.effects()
        crit = estimator.critical_t()
        out = self.run_dir(trainer)
        step = int(estimator.steps)
        names = list(scheduler.env_names)
        record = {"step": step, "env_names": names, "critical_t": crit, "effect": _nulls(effect), "t": _nulls(t),
                  "re_picks": estimator.n.tolist(), "env_factor": estimator.env_factor().tolist()}  # fmt: skip
        (out / "sched_env_effects.json").write_text(json.dumps(record, indent=1) + "\n")
        return save_env_effects(effect, t, names, crit, out / "sched_env_effects.png",
                                scheduler=self.scheduler_name, run=self.run_label, step=step)  # fmt: skip

    @override
    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if trainer.is_global_zero and self.rollouts:
            self._plot(trainer, [lg for lg in trainer.loggers if isinstance(lg, WandbLogger)])

    @override
    def state_dict(self) -> dict[str, Any]:
        return {"env_names": self.env_names, "rollouts": self.rollouts, "first_step": self.first_step, "points": self.points}

    @override
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.env_names = list(state_dict["env_names"])
        self.rollouts = [list(r) for r in state_dict["rollouts"]]
        self.first_step = int(state_dict["first_step"])
        self.points = [tuple(p) for p in state_dict["points"]]
