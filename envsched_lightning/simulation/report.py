"""Summaries of simulated runs: the rollout-efficiency table and its per-seed wins."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .loop import RunResult

CHECKPOINTS = (40, 120)


def summarize(runs: dict[str, list[RunResult]], baseline: str = "random", horizon: int = 120) -> list[dict]:
    """One row per label: scores at checkpoints, steps/rollouts to the baseline's `horizon` score."""
    base = runs[baseline]
    # read off the baseline's own mean curve: a mean of its final scores taken in another order
    # can differ in the last bit and leave the baseline "never" reaching its own score
    target = float(np.mean([r.scores for r in base], 0)[horizon])
    end = min(120, horizon)  # the run's last checkpoint: a 10-step run's columns say @10
    rows = []
    for label, rs in runs.items():
        curve = np.mean([r.scores for r in rs], 0)
        hit = np.flatnonzero(curve >= target)
        steps = float(hit[0]) if hit.size else float("inf")
        per_seed_target = {r.seed: r.scores[horizon] for r in base}
        wins = sum(r.steps_to(per_seed_target[r.seed]) < horizon for r in rs if r.seed in per_seed_target)
        spent = np.mean([[0] + r.rollouts for r in rs], 0)  # mean cumulative rollouts, index = step
        row = {
            "scheduler": label,
            **{f"score@{c}": float(np.mean([r.scores[c] for r in rs])) for c in CHECKPOINTS if c <= horizon},
            f"score_std@{end}": float(np.std([r.scores[end] for r in rs])),
            "steps_to_target": steps,
            "ratio": horizon / steps if steps > 0 else float("inf"),
            "seed_wins": f"{wins}/{len(rs)}",
            "rollouts_to_target": float(spent[int(steps)]) if np.isfinite(steps) else float("inf"),
            f"rollouts@{end}": float(np.mean([r.rollouts[end - 1] for r in rs])),
            "zero_var_frac": float(np.mean([np.mean(r.zero_var) for r in rs])),
            "group_std": float(np.mean([np.mean(r.group_std) for r in rs])),
            "sched_ms_per_step": 1000 * float(np.mean([np.mean(r.sched_seconds) for r in rs])),
        }
        rows.append(row)
    return rows


def format_table(rows: Sequence[dict], title: str) -> str:
    """A Markdown table (paste-able into the README)."""
    if not rows:
        return ""
    cols = list(rows[0])

    def fmt(v) -> str:
        if isinstance(v, float):
            if not np.isfinite(v):
                return "never"
            return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
        return str(v)

    lines = [f"**{title}**", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)
