"""How well envsched ranks tasks by informativeness, next to what the world lets anyone know.

The oracle row of the efficiency table says how many steps a perfect ranking would save; this
says where envsched's ranking falls short. At chosen steps of a run it scores every task's
prediction against the truth (is the task's current p(1 - p) above `INFORMATIVE`?) as a rank AUC,
separately for tasks never tried and tasks tried, and sets two references beside it:

- ``observed_classmates``: the mean informativeness last observed on the task's classmates (tasks
  with the same visible signature: environment, state keys, verifier, feature names). A
  scheduler could compute it from the same rollouts, so it is the bar propagation must clear.
- ``true_classmates``: the classmates' *current true* p(1 - p). No scheduler can see it; it is the
  ceiling of any prediction made from a task's siblings, since their rollouts are only a noisy,
  aging view of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from envsched_lightning.scheduling import TaskSpec, build_scheduler

from .learner import SimLearner
from .world import SimWorld

INFORMATIVE = 0.1  # true p(1 - p) above this (0.13 < p < 0.87): a group of 8 is mostly mixed


def rank_auc(score: np.ndarray, label: np.ndarray) -> float:
    """P(score of a random positive > score of a random negative), ties counted half (nan if a
    class is empty): the Mann-Whitney statistic with average ranks."""
    score, label = np.asarray(score, dtype=np.float64), np.asarray(label, dtype=bool)
    n1, n0 = int(label.sum()), int((~label).sum())
    if n1 == 0 or n0 == 0:
        return float("nan")
    order = np.argsort(score, kind="stable")
    sorted_scores = score[order]
    ranks = np.empty(score.shape[0])
    # average rank over each run of equal scores
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    stops = np.r_[starts[1:], score.shape[0]]
    ranks[order] = np.repeat((starts + stops + 1) / 2.0, stops - starts)
    return float((ranks[label].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def spec_classes(specs: Sequence[TaskSpec]) -> np.ndarray:
    """int64[N]: one id per visible signature (tools aside, which may include decoys)."""
    ids: dict[tuple, int] = {}
    return np.array([ids.setdefault((s.env, s.state_keys, s.verifier, tuple(sorted(s.features))), len(ids))
                     for s in specs], dtype=np.int64)


def classmate_mean(values: np.ndarray, classes: np.ndarray, members: np.ndarray, fallback: float) -> np.ndarray:
    """float[N]: mean of `values` over each task's classmates in `members` (the task itself left
    out); `fallback` where no classmate is a member."""
    c = classes.max() + 1
    total = np.bincount(classes[members], weights=values[members], minlength=c)[classes] - np.where(members, values, 0.0)
    count = np.bincount(classes[members], minlength=c)[classes] - members.astype(np.int64)
    return np.where(count > 0, total / np.maximum(count, 1), fallback)


def prediction_quality(world: SimWorld, seed: int, checkpoints: Sequence[int] = (10, 20, 40, 80),
                       batch_size: int = 32, group_size: int = 8, **options) -> list[dict]:
    """Run envsched and, before the batch of each checkpoint step, one row per task group
    ("untried", "tried") with the rank AUC of each predictor."""
    learner = SimLearner(world, seed=seed, group_size=group_size)
    sched = build_scheduler("envsched", world.specs, seed=seed, **options)
    classes = spec_classes(world.specs)
    rows = []
    for step in range(max(checkpoints) + 1):
        if step in checkpoints:
            p = learner.pass_rate(world.train_idx)
            value = p * (1 - p)
            h = sched.history
            seen_value = np.minimum(1.0, 2.0 * h.last_std.astype(np.float64))
            fallback = float(seen_value[h.observed].mean()) if h.observed.any() else 0.5
            predictors = {
                "envsched": sched.predict(),
                "closed_form": sched.predict_ppr(),
                **({"gnn": sched.predict_gnn()} if sched.gnn is not None else {}),  # with use_gnn=True
                "observed_classmates": classmate_mean(seen_value, classes, h.observed, fallback),
                "true_classmates (ceiling)": classmate_mean(value, classes, np.ones_like(h.observed), 0.0),
            }
            for group, mask in (("untried", ~h.observed), ("tried", h.observed)):
                row = {"step": step, "group": group, "tasks": int(mask.sum()),
                       "informative_share": float(np.mean(value[mask] > INFORMATIVE)) if mask.any() else float("nan")}
                for name, score in predictors.items():
                    row[name] = rank_auc(score[mask], value[mask] > INFORMATIVE)
                rows.append(row)
        groups = learner.rollout(sched.select(batch_size))
        learner.learn(groups)
        sched.update(groups)
    return rows
