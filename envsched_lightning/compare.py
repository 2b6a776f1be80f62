"""Compare training runs from their folders: one figure of their curves and a table.

    python -m envsched_lightning.compare outputs/2026-12-05/10-00-00 outputs/2026-12-05/10-20-00 [--out compare]

Each folder is what `python train.py` wrote with the CSV logger (the CPU default): its newest
`csv/version_*/metrics.csv`, and `config_resolved.yaml` for the run's scheduler and seed. The figure
has three panels over GRPO steps: the training batch reward (`rollout/reward_mean`), the share of
zero-variance groups (`rollout/zero_var_frac`) and the held-out score (`eval/score`); the table gives
per run its steps, the last held-out score and the change from the first, the mean zero-variance
share and the mean reward. Written as `<out>.png` and `<out>.md`, and the table is printed.

`--wandb PROJECT` also logs the comparison as a W&B run (`job_type=compare`): one line panel per
curve with a line per run, the table and the figure. With `WANDB_MODE=offline` it lands under
`<out>_wandb/wandb/offline-run-*` for `wandb sync`. (Runs trained with `logger=wandb` are grouped by
scheduler in their project's workspace; they keep the CSV log this command reads.)
"""

from __future__ import annotations

import argparse
import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

SERIES = {"reward": "rollout/reward_mean", "zero_var": "rollout/zero_var_frac", "held_out": "eval/score"}
TITLES = {"reward": "training batch reward", "zero_var": "zero-variance groups (share)", "held_out": "held-out score"}
COLUMNS = ["run", "scheduler", "seed", "steps", "held-out (last)", "held-out change", "zero-variance share",
           "batch reward"]  # fmt: skip


@dataclass
class RunCurves:
    """One run's curves: metric -> [(step, value)] in step order."""

    name: str
    folder: Path
    scheduler: str = "?"
    seed: str = "?"
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)

    def last(self, key: str) -> float:
        points = self.curves.get(key) or []
        return points[-1][1] if points else math.nan

    def mean(self, key: str) -> float:
        points = self.curves.get(key) or []
        return sum(v for _, v in points) / len(points) if points else math.nan

    @property
    def label(self) -> str:
        return f"{self.scheduler} s{self.seed}: {Path(self.name).name or self.name}"


def metrics_file(folder: Path) -> Path:
    """The newest CSV log of a run folder, or an error saying what the folder lacks."""
    found = sorted(folder.glob("csv/version_*/metrics.csv"), key=lambda p: int(p.parent.name.split("_")[-1]))
    if not found:
        raise FileNotFoundError(f"{folder}: no csv/version_*/metrics.csv (run train.py with logger=csv, the CPU default)")
    return found[-1]


def read_run(folder: str | Path) -> RunCurves:
    folder = Path(folder)
    run = RunCurves(name=str(folder), folder=folder)
    config = folder / "config_resolved.yaml"
    if config.is_file():
        from omegaconf import OmegaConf

        cfg = OmegaConf.load(config)
        run.scheduler = str(OmegaConf.select(cfg, "scheduler.name", default="?"))
        run.seed = str(OmegaConf.select(cfg, "seed", default="?"))
    with metrics_file(folder).open() as f:
        for row in csv.DictReader(f):
            for name, column in SERIES.items():
                value = row.get(column)
                if value not in (None, "") and row.get("step") not in (None, ""):
                    run.curves.setdefault(name, []).append((int(float(row["step"])), float(value)))
    for points in run.curves.values():
        points.sort(key=lambda p: p[0])
    if not run.curves.get("reward"):
        raise ValueError(f"{folder}: its metrics.csv has no {SERIES['reward']} rows (no GRPO step was logged)")
    return run


def rows(runs: Sequence[RunCurves]) -> list[list]:
    """One row per run, in COLUMNS order (NaN where a run has no such curve)."""
    out = []
    for r in runs:
        held = r.curves.get("held_out") or []
        change = held[-1][1] - held[0][1] if len(held) > 1 else math.nan
        out.append([r.name, r.scheduler, r.seed, len(r.curves["reward"]), r.last("held_out"), change,
                    r.mean("zero_var"), r.mean("reward")])  # fmt: skip
    return out


def table(runs: Sequence[RunCurves]) -> str:
    """Markdown: one row per run."""
    def fmt(x: object) -> str:
        return ("-" if math.isnan(x) else f"{x:.3f}") if isinstance(x, float) else str(x)

    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|---:|---:|---:|---:|---:|"]
    lines += ["| " + " | ".join(map(fmt, row)) + " |" for row in rows(runs)]
    return "\n".join(lines)


def plot(runs: Sequence[RunCurves], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, (key, title) in zip(axes, TITLES.items()):
        for r in runs:
            points = r.curves.get(key) or []
            if points:
                ax.plot([s for s, _ in points], [v for _, v in points], marker="o" if key == "held_out" else None,
                        markersize=3, label=r.label)  # fmt: skip
        ax.set_title(title)
        ax.set_xlabel("GRPO step")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def log_to_wandb(runs: Sequence[RunCurves], figure: Path, project: str, out_dir: Path) -> Path:
    """The comparison as one W&B run: a line panel per curve (a line per run), the table and the figure.
    Returns the run's local folder (offline: what `wandb sync` uploads)."""
    import wandb

    out_dir.mkdir(parents=True, exist_ok=True)
    run = wandb.init(project=project, job_type="compare", dir=str(out_dir),
                     config={"runs": [r.name for r in runs], "schedulers": [r.scheduler for r in runs]})  # fmt: skip
    panels = {}
    for key, title in TITLES.items():
        drawn = [r for r in runs if r.curves.get(key)]
        if drawn:
            panels[f"compare/{key}"] = wandb.plot.line_series(
                xs=[[s for s, _ in r.curves[key]] for r in drawn], ys=[[v for _, v in r.curves[key]] for r in drawn],
                keys=[r.label for r in drawn], title=title, xname="GRPO step")  # fmt: skip
    data = [[None if isinstance(x, float) and math.isnan(x) else x for x in row] for row in rows(runs)]
    run.log({**panels, "compare/table": wandb.Table(columns=COLUMNS, data=data), "compare/figure": wandb.Image(str(figure))})
    folder = Path(run.dir).parent
    run.finish()
    return folder


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run folders (where train.py wrote config_resolved.yaml and csv/)")
    parser.add_argument("--out", default="compare", help="writes <out>.png and <out>.md")
    parser.add_argument("--wandb", metavar="PROJECT", help="also log the comparison as a W&B run in PROJECT")
    args = parser.parse_args(argv)
    runs = [read_run(folder) for folder in args.runs]
    text = table(runs)
    out = Path(args.out)
    png = plot(runs, out.with_suffix(".png"))
    out.with_suffix(".md").write_text(text + "\n")
    print(f"{text}\n\nfigure: {png}; table: {out.with_suffix('.md')}")
    if args.wandb:
        print(f"W&B run: {log_to_wandb(runs, png, args.wandb, out.parent / f'{out.name}_wandb')}")


if __name__ == "__main__":
    main()
