"""Compare training runs from their folders: one figure of their curves and a table.

    python -m envsched_lightning.compare outputs/2026-12-05/10-00-00 outputs/2026-12-05/10-20-00 [--out compare]

Each folder is what `python train.py` wrote with the CSV logger (the CPU default): its newest
`csv/version_*/metrics.csv`, and `config_resolved.yaml` for the run's scheduler and seed. The figure
has three panels over GRPO steps: the training batch reward (`rollout/reward_mean`), the share of
zero-variance groups (`rollout/zero_var_frac`) and the held-out score (`eval/score`); the table gives
per run its steps, the last held-out score and the change from the first, the mean zero-variance
share and the mean reward. Written as `<out>.png` and `<out>.md`, and the table is printed.
"""

from __future__ import annotations

import argparse
import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

SERIES = {"reward": "rollout/reward_mean", "zero_var": "rollout/zero_var_frac", "held_out": "eval/score"}


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


def table(runs: Sequence[RunCurves]) -> str:
    """Markdown: one row per run."""
    def fmt(x: float) -> str:
        return "-" if math.isnan(x) else f"{x:.3f}"

    lines = ["| run | scheduler | seed | steps | held-out (last) | held-out change | zero-variance share | batch reward |",
             "|---|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in runs:
        held = r.curves.get("held_out") or []
        change = held[-1][1] - held[0][1] if len(held) > 1 else math.nan
        lines.append(f"| {r.name} | {r.scheduler} | {r.seed} | {len(r.curves['reward'])} | {fmt(r.last('held_out'))} "
                     f"| {fmt(change)} | {fmt(r.mean('zero_var'))} | {fmt(r.mean('reward'))} |")  # fmt: skip
    return "\n".join(lines)


def plot(runs: Sequence[RunCurves], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    titles = {"reward": "training batch reward", "zero_var": "zero-variance groups (share)", "held_out": "held-out score"}
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, (key, title) in zip(axes, titles.items()):
        for r in runs:
            points = r.curves.get(key) or []
            if points:
                ax.plot([s for s, _ in points], [v for _, v in points], marker="o" if key == "held_out" else None,
                        markersize=3, label=f"{r.scheduler} s{r.seed}: {Path(r.name).name or r.name}")  # fmt: skip
        ax.set_title(title)
        ax.set_xlabel("GRPO step")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run folders (where train.py wrote config_resolved.yaml and csv/)")
    parser.add_argument("--out", default="compare", help="writes <out>.png and <out>.md")
    args = parser.parse_args(argv)
    runs = [read_run(folder) for folder in args.runs]
    text = table(runs)
    out = Path(args.out)
    png = plot(runs, out.with_suffix(".png"))
    out.with_suffix(".md").write_text(text + "\n")
    print(f"{text}\n\nfigure: {png}; table: {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
