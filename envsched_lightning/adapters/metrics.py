"""What the scheduler did and how it fared, as flat ``sched/`` metrics for a host trainer's own logs.

One framework-free function, so every adapter reports the same names the Lightning app logs
(`callbacks/scheduling_logger.py`, `env_quota.py`, `similarity_penalty.py`): TRL appends them to
`GRPOTrainer._metrics`, verl can merge them into its step ``metrics`` dict.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from envsched_lightning.scheduling import Decision, RolloutGroup, TaskSpec
from envsched_lightning.scheduling.decision import decision_summary


def informativeness(group: RolloutGroup) -> float:
    """What envsched predicts for a group: ``min(1, 2 x reward std)`` (a binary group's std peaks at 0.5)."""
    return min(1.0, 2.0 * group.std)


def _pearson(x: list[float], y: list[float]) -> float | None:
    """Correlation, or None when there are fewer than 2 points or either side is constant."""
    n = len(x)
    if n < 2:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx < 1e-24 or syy < 1e-24:
        return None
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / math.sqrt(sxx * syy)


def scheduler_metrics(decision: Decision | None, groups: Sequence[RolloutGroup], specs: Sequence[TaskSpec],
                      env_names: Sequence[str] | None = None) -> dict[str, float]:  # fmt: skip
    """``sched/`` metrics of one select + update round.

    - ``sched/env_count/<env>``: tasks chosen per environment, for every name in `env_names`
      (0 when none was chosen; default: the environments of the choice);
    - ``sched/zero_var_frac`` and ``sched/zero_var_frac/<env>``: share of reported groups whose
      rewards were all equal (std < 1e-6), overall and per environment that had a group;
    - ``sched/pred_mean``, ``sched/realised_mean``, ``sched/pred_abs_err``, ``sched/pred_corr``:
      the scheduler's predicted informativeness of the chosen tasks against what their groups
      realised (``min(1, 2 x std)``), when the decision carries predictions (``envsched`` does);
      ``pred_corr`` only when both sides vary;
    - ``sched/quota_relaxations``, ``sched/penalty_mean``: quota relaxations this choice needed and
      the mean similarity penalty paid, when there is a decision; ``sched/copy_repeat_frac``: the
      share of the choice that repeats a near-copy group already in it, when the penalty has groups;
      ``sched/learnability_mean``, ``sched/cost_factor_mean``, ``sched/env_factor_mean``: how much
      the choice was discounted, for each discount the scheduler applies (`decision_summary`).

    `decision` is `Scheduler.last_decision()` of the select whose `groups` these are (None when the
    scheduler records none); `specs` the scheduler's specs (``specs[g.index]``), read only at the
    groups' indices.
    """
    metrics: dict[str, float] = {}
    if decision is not None:
        counts = decision.env_counts
    else:
        counts = defaultdict(int)
        for g in groups:
            counts[specs[g.index].env] += 1
    for env in env_names if env_names is not None else counts:
        metrics[f"sched/env_count/{env}"] = float(counts.get(env, 0))

    if groups:
        by_env: dict[str, list[bool]] = defaultdict(list)
        for g in groups:
            by_env[specs[g.index].env].append(not g.informative)
        metrics["sched/zero_var_frac"] = sum(sum(z) for z in by_env.values()) / len(groups)
        metrics |= {f"sched/zero_var_frac/{env}": sum(z) / len(z) for env, z in by_env.items()}

    if decision is not None:
        metrics["sched/quota_relaxations"] = float(len(decision.relaxations))
        if decision.rows:
            metrics["sched/penalty_mean"] = sum(r.get("penalty", 0.0) for r in decision.rows) / len(decision.rows)
            metrics |= {f"sched/{k}": v for k, v in decision_summary(decision.rows).items()}
        realised = {g.index: informativeness(g) for g in groups}
        pairs = [(r["predicted"], realised[r["index"]]) for r in decision.rows
                 if "predicted" in r and r["index"] in realised]  # fmt: skip
        if pairs:
            pred, real = [p for p, _ in pairs], [q for _, q in pairs]
            metrics["sched/pred_mean"] = sum(pred) / len(pred)
            metrics["sched/realised_mean"] = sum(real) / len(real)
            metrics["sched/pred_abs_err"] = sum(abs(p - q) for p, q in pairs) / len(pairs)
            corr = _pearson(pred, real)
            if corr is not None:
                metrics["sched/pred_corr"] = corr
    return metrics
