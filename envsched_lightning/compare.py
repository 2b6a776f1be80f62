"""Compare training runs from their folders: one figure of their curves and a table.

    python -m envsched_lightning.compare outputs/2026-12-05/10-00-00 outputs/2026-12-05/10-20-00 [--out compare] [--smooth 5]

Each folder is what `python train.py` wrote with the CSV logger (the CPU default): its newest
`csv/version_*/metrics.csv` (with `eval_tasks.jsonl` beside it), and `config_resolved.yaml` for the
run's scheduler and seed. Steps are GRPO steps as the console counts them: step k is the k-th GRPO
step and step 0 is before training (the held-out score of a whole-set sanity check,
`num_sanity_val_steps=-1` as in the CPU default). The figure has three panels over GRPO steps: the
training batch reward (`rollout/reward_mean`), the share of zero-variance groups
(`rollout/zero_var_frac`) and the held-out score (`eval/score`, a marker per evaluation and a marker
shape per run, runs set slightly apart on the step axis so none hides another); `--smooth K` draws
the two training curves as a trailing mean over K steps over the raw ones, faint. The table gives
per run its steps, the first and last held-out scores, the change between them with its two standard
errors, the mean zero-variance share and the mean reward; under it a line per run says the change
in the words of the run's console summary. Written as `<out>.png` and `<out>.md`, and printed.

The held-out change is the console's: from the first evaluation (before training, when the run
evaluated then) to the last, paired by task from `eval_tasks.jsonl` (the mean per-task change and
two standard errors over the tasks both evaluations scored). A run folder without that file gives
the change of the means in `metrics.csv` and no standard error, and says so.

`--wandb PROJECT` also logs the comparison as a W&B run (`job_type=compare`): one line panel per
curve with a line per run, the table and the figure. With `WANDB_MODE=offline` it lands under
`<out>_wandb/wandb/offline-run-*` for `wandb sync`. (Runs trained with `logger=wandb` are grouped by
scheduler in their project's workspace; they keep the CSV log this command reads.)
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from envsched_lightning.eval_log import EVAL_TASKS, EvalRecord, PairedChange, paired_change, read_evals
from envsched_lightning.run_config import read_run_config

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SERIES = {"reward": "rollout/reward_mean", "zero_var": "rollout/zero_var_frac", "held_out": "eval/score"}
TITLES = {"reward": "training batch reward", "zero_var": "zero-variance groups (share)", "held_out": "held-out score"}
COLUMNS = ["run", "scheduler", "seed", "steps", "held-out (first)", "held-out (last)", "held-out change", "2 s.e.",
           "zero-variance share", "batch reward"]  # fmt: skip
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")  # one per run in the held-out panel


class HeldOutChange(NamedTuple):
    """A run's held-out change from its first evaluation to its last, as the console summary gives it."""

    first_step: int
    last_step: int
    first: float
    last: float
    paired: PairedChange | None  # per task, with its standard error; None: only the means were logged

    @property
    def mean(self) -> float:
        return self.paired.mean if self.paired is not None else self.last - self.first

    def describe(self) -> str:
        """The console summary's words: `held-out score A -> B (change ...)`, then where the numbers come from."""
        if self.paired is not None:
            change, source = self.paired.describe(), f"paired by task from {EVAL_TASKS}"
        else:
            change, source = f"change {self.mean:+.3f}", f"means from metrics.csv: no {EVAL_TASKS}, so no 2 s.e."
        return (f"held-out score {self.first:.3f} -> {self.last:.3f} ({change}); "
                f"step {self.first_step} -> {self.last_step}, {source}")  # fmt: skip


@dataclass
class RunCurves:
    """One run's curves: metric -> [(step, value)] in step order; `evals`: its per-task held-out results."""

    name: str
    folder: Path
    scheduler: str = "?"
    seed: str = "?"
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    evals: list[EvalRecord] = field(default_factory=list)

    def last(self, key: str) -> float:
        points = self.curves.get(key) or []
        return points[-1][1] if points else math.nan

    def mean(self, key: str) -> float:
        points = self.curves.get(key) or []
        return sum(v for _, v in points) / len(points) if points else math.nan

    def held_out_change(self) -> HeldOutChange | None:
        """First -> last evaluation, paired by task when the per-task results were logged; None with fewer than two."""
        held = self.curves.get("held_out") or []
        if len(self.evals) > 1:
            first, last = self.evals[0], self.evals[-1]
            paired = paired_change(first.rewards, last.rewards)
            if paired is not None:
                logged = dict(held)  # eval/score as logged (and printed); else the task-weighted mean again
                score = {r.step: logged.get(r.step, sum(r.rewards.values()) / len(r.rewards)) for r in (first, last)}
                return HeldOutChange(first.step, last.step, score[first.step], score[last.step], paired)
        if len(held) < 2:
            return None
        return HeldOutChange(held[0][0], held[-1][0], held[0][1], held[-1][1], None)

    @property
    def label(self) -> str:
        return f"{self.scheduler} s{self.seed}: {Path(self.name).name or self.name}"


MAX_LOG_BYTES = 256 * 2**20
"""A run's metrics.csv or eval_tasks.jsonl is KBs to MBs; a bigger file (or /dev/zero behind a link) is not read."""


def metrics_file(folder: Path) -> Path:
    """The newest CSV log of a run folder, or an error saying what the folder lacks."""
    found = [p for p in folder.glob("csv/version_*/metrics.csv") if p.parent.name.split("_")[-1].isdigit()]
    found.sort(key=lambda p: int(p.parent.name.split("_")[-1]))
    if not found:
        raise FileNotFoundError(f"{folder}: no csv/version_*/metrics.csv (run train.py with logger=csv, the CPU default)")
    return found[-1]


def checked_log(path: Path) -> Path:
    """`path` if it is a regular file under MAX_LOG_BYTES (a FIFO or a device would block or never end), else an error."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{path}: not a regular file")
    if info.st_size > MAX_LOG_BYTES:
        raise ValueError(f"{path}: {info.st_size:,} bytes, more than the {MAX_LOG_BYTES:,} a run's log holds")
    return path


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _plain_name(value: object) -> str:
    """A scheduler name or seed from a run's config as short plain text (the file may come from anywhere)."""
    return str(value)[:40] if isinstance(value, (str, int)) and not isinstance(value, bool) else "?"


def read_run(folder: str | Path) -> RunCurves:
    """A run folder's curves; an error naming the file for anything unreadable (compare then skips the folder)."""
    folder = Path(folder)
    run = RunCurves(name=str(folder), folder=folder)
    config = folder / "config_resolved.yaml"
    if config.exists():
        cfg = read_run_config(config)  # plain data: nothing in it is resolved or expanded
        scheduler = cfg.get("scheduler")
        run.scheduler = _plain_name(scheduler.get("name") if isinstance(scheduler, dict) else None)
        run.seed = _plain_name(cfg.get("seed"))
    metrics = checked_log(metrics_file(folder))
    with metrics.open(newline="", encoding="utf-8", errors="replace") as f:
        for row in csv.DictReader(f):
            step = _number(row.get("step"))
            if step is None or step < 0 or step != int(step):  # nan, inf, negative or fractional: not a step
                continue
            for name, column in SERIES.items():
                value = _number(row.get(column))
                if value is not None:
                    run.curves.setdefault(name, []).append((int(step), value))
    for points in run.curves.values():
        points.sort(key=lambda p: p[0])
    if not run.curves.get("reward"):
        raise ValueError(f"{folder}: its metrics.csv has no {SERIES['reward']} rows (no GRPO step was logged)")
    if (metrics.parent / EVAL_TASKS).exists():
        run.evals = read_evals(checked_log(metrics.parent / EVAL_TASKS))
    return run


def rows(runs: Sequence[RunCurves]) -> list[list]:
    """One row per run, in COLUMNS order (NaN where a run has no such value)."""
    out = []
    for r in runs:
        change = r.held_out_change()
        first, mean = (change.first, change.mean) if change else (math.nan, math.nan)
        two_se = 2 * change.paired.stderr if change and change.paired else math.nan
        out.append([r.name, r.scheduler, r.seed, len(r.curves["reward"]), first, r.last("held_out"), mean, two_se,
                    r.mean("zero_var"), r.mean("reward")])  # fmt: skip
    return out


def table(runs: Sequence[RunCurves]) -> str:
    """Markdown: one row per run, then each run's held-out change in the console summary's words."""
    def fmt(x: object, column: str) -> str:
        if not isinstance(x, float):
            return str(x)
        return "-" if math.isnan(x) else f"{x:+.3f}" if column == "held-out change" else f"{x:.3f}"

    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|" + "---:|" * (len(COLUMNS) - 3)]
    lines += ["| " + " | ".join(_cell(fmt(x, c)) for x, c in zip(row, COLUMNS)) + " |" for row in rows(runs)]
    changes = [(r, r.held_out_change()) for r in runs]
    lines += [""] + [f"- {r.label}: " + (c.describe() if c else "fewer than two held-out evaluations") for r, c in changes]
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Table text from a folder name or config: one line, and a `|` in it cannot open another column."""
    return " ".join(text.split()).replace("|", "\\|")


def _drawn(label: str) -> str:
    """A label matplotlib draws as written: `$...$` in a folder name would be parsed as mathtext (and may fail)."""
    return label.replace("$", "\\$")


def smoothed(values: Sequence[float], k: int) -> list[float]:
    """Trailing mean over the last `k` values (fewer at the start): what the curve did lately, not one step's noise."""
    return [sum(values[max(0, i - k + 1) : i + 1]) / len(values[max(0, i - k + 1) : i + 1]) for i in range(len(values))]


def figure(runs: Sequence[RunCurves], smooth: int = 1) -> Figure:
    """The three panels; `smooth` > 1 draws the training curves as `smoothed` lines over the raw ones, faint.

    Held-out: a line with a marker per evaluation, a marker shape per run, hollow, and each run set
    apart on the step axis by a fraction of the evaluation interval, so equal scores stay visible."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    if smooth < 1:
        raise ValueError(f"--smooth must be >= 1 (1: no smoothing), got {smooth}")
    fig = Figure(figsize=(15, 4.2))
    axes = fig.subplots(1, 3)
    colors = [f"C{i % 10}" for i in range(len(runs))]
    for ax, (key, title) in zip(axes, TITLES.items()):
        for i, (r, color) in enumerate(zip(runs, colors)):
            points = r.curves.get(key) or []
            if not points:
                continue
            steps, values = [s for s, _ in points], [v for _, v in points]
            if key == "held_out":
                gaps = [b - a for a, b in itertools.pairwise(steps) if b > a]
                shift = (i - (len(runs) - 1) / 2) * 0.25 * min(gaps, default=1) / max(len(runs) - 1, 1)
                ax.plot([s + shift for s in steps], values, color=color, marker=MARKERS[i % len(MARKERS)],
                        markersize=7, markerfacecolor="none", markeredgewidth=1.5, label=_drawn(r.label))  # fmt: skip
            elif smooth > 1:
                ax.plot(steps, values, color=color, alpha=0.25, linewidth=1)
                ax.plot(steps, smoothed(values, smooth), color=color, label=_drawn(r.label))
            else:
                ax.plot(steps, values, color=color, label=_drawn(r.label))
        more = f" (mean of the last {smooth} steps; raw faint)" if smooth > 1 and key != "held_out" else ""
        ax.set_title(title + more, fontsize=10)
        ax.set_xlabel("GRPO step (0: before training)" if key == "held_out" else "GRPO step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot(runs: Sequence[RunCurves], path: Path, smooth: int = 1) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure(runs, smooth).savefig(path, dpi=120)
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
    parser.add_argument("--smooth", type=int, default=1, metavar="K",
                        help="draw the training curves as a trailing mean over K steps, raw faint (default 1: raw)")  # fmt: skip
    parser.add_argument("--wandb", metavar="PROJECT", help="also log the comparison as a W&B run in PROJECT")
    args = parser.parse_args(argv)
    if args.smooth < 1:
        parser.error(f"--smooth must be >= 1 (1: no smoothing), got {args.smooth}")
    runs = []
    for folder in args.runs:  # one bad folder is skipped with the reason; the others are compared
        try:
            runs.append(read_run(folder))
        except (OSError, ValueError) as err:
            print(f"skipped {folder}: {str(err)[:300]}", file=sys.stderr)
    if not runs:
        parser.exit(2, "compare: no readable run folder\n")
    text = table(runs)
    out = Path(args.out)
    png = plot(runs, out.with_suffix(".png"), args.smooth)
    out.with_suffix(".md").write_text(text + "\n")
    print(f"{text}\n\nfigure: {png}; table: {out.with_suffix('.md')}")
    if args.wandb:
        print(f"W&B run: {log_to_wandb(runs, png, args.wandb, out.parent / f'{out.name}_wandb')}")


if __name__ == "__main__":
    main()
