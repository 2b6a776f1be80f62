"""Where a training run's held-out evaluations are kept, so that `compare` reads what the console printed.

Steps are GRPO steps, 1-based: step k is the k-th GRPO step of the whole run (a resumed run goes on
counting), and step 0 is "before training" (the warm start's numbers and a whole-set sanity check).
Each evaluation's per-task rewards go, one JSON line per evaluation, to `EVAL_TASKS` in the
logger's directory (beside `metrics.csv`): the paired before/after change (`paired_change`, what the
console summary and `compare` both print) needs the rewards task by task, and the means in
`metrics.csv` cannot give it.

Nothing heavy is imported (no torch, transformers or Lightning): `compare` reads runs without a training stack.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

EVAL_TASKS = "eval_tasks.jsonl"


class EvalRecord(NamedTuple):
    step: int  # GRPO steps done when evaluated (0: before training)
    rewards: dict[str, float]  # task key -> greedy reward


def grpo_step(trainer: Any) -> int | None:
    """GRPO steps done so far in the whole run (the DataModule's `step`), or None when it keeps no count."""
    step = getattr(getattr(trainer, "datamodule", None), "step", None)
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def scores_every_task(trainer: Any) -> bool:
    """A sanity check over the whole held-out set (`num_sanity_val_steps=-1`): the score before training."""
    return bool(trainer.sanity_checking) and trainer.num_sanity_val_steps == float("inf")


def append_eval(folder: str | Path, step: int, rewards: Mapping[str, float]) -> Path:
    path = Path(folder) / EVAL_TASKS
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps({"step": int(step), "rewards": {k: float(v) for k, v in rewards.items()}}) + "\n")
    return path


def read_evals(path: str | Path) -> list[EvalRecord]:
    """The evaluations of `path` in step order; a line that is not a record is an error naming the file and line."""
    records = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            records.append(EvalRecord(int(raw["step"]), {str(k): float(v) for k, v in raw["rewards"].items()}))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"{path}:{n}: not an evaluation record ({err})") from None
    return sorted(records, key=lambda r: r.step)


class PairedChange(NamedTuple):
    """The change of a score between two evaluations of the same tasks, with its uncertainty."""

    mean: float  # mean per-task change (after - before)
    stderr: float  # standard error of that mean over tasks (0 with one task)
    tasks: int  # tasks scored both times

    @property
    def within_noise(self) -> bool:
        """Inside two standard errors of zero: another draw of held-out tasks could flip its sign."""
        return abs(self.mean) <= 2 * self.stderr

    def describe(self) -> str:
        verdict = "within noise" if self.within_noise else "beyond noise"
        return f"change {self.mean:+.3f} +- {2 * self.stderr:.3f} (2 s.e. over {self.tasks} tasks: {verdict})"


def paired_change(before: Mapping[str, float], after: Mapping[str, float]) -> PairedChange | None:
    """Per-task differences over the tasks both evaluations scored (task key -> reward); None if none.

    Paired by task, so the spread of task difficulty cancels and what is left is how much the
    scores moved, and how evenly: the standard error says how far the mean change would move
    with another draw of held-out tasks of the same size."""
    keys = sorted(before.keys() & after.keys())
    if not keys:
        return None
    diffs = [float(after[k]) - float(before[k]) for k in keys]
    mean = sum(diffs) / len(diffs)
    var = sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1) if len(diffs) > 1 else 0.0
    return PairedChange(mean, (var / len(diffs)) ** 0.5, len(diffs))
