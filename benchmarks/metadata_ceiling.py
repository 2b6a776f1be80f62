"""How much of a task's difficulty its metadata can tell: the additive model's ceiling per world mechanism.

    python -m benchmarks.metadata_ceiling [--worlds 20] [--family-seed 0]

For each drawn world of each mechanism, the additive model (`scheduling.additive`, the candidate
`envsched additive=true` adds to the relation gate) is fitted on the *true* success logits of a
random half of the training tasks at the start of training (no sampling noise, no selection by a
scheduler: more than any run can see) and scored on the other half: R^2 of the logit, and the
correlation of the predicted group informativeness with the true one. Where even this stays near
zero, no model over those tokens can rank never-tried tasks, however it is fitted.
"""

from __future__ import annotations

import argparse

import numpy as np

from envsched_lightning.scheduling.additive import AdditiveModel
from envsched_lightning.simulation import SimLearner
from envsched_lightning.simulation.family import MECHANISMS, build_world, make_world_family
from envsched_lightning.simulation.report import format_table

GROUP = 8


def world_ceiling(cfg, seed: int = 0) -> dict[str, float]:
    """Held-out R^2 of the success logit and correlation of informativeness, for one drawn world."""
    world = build_world(cfg)
    learner = SimLearner(world, seed=seed, group_size=GROUP)
    p = np.clip(learner.pass_rate(world.train_idx), 1e-3, 1 - 1e-3)
    logit = np.log(p / (1 - p))
    fit_on = np.random.default_rng(seed).random(p.size) < 0.5
    model = AdditiveModel(world.specs, ridge=1.0, sweeps=400)
    model.fit(fit_on, logit)
    held = ~fit_on
    r2 = 1.0 - np.mean((model.logits()[held] - logit[held]) ** 2) / np.var(logit[held])
    spread = learner.informativeness_at(p)
    corr = np.corrcoef(model.informativeness(GROUP)[held], spread[held])[0, 1]
    return {"tasks": float(p.size), "tokens": float(model.num_tokens), "logit_r2": float(r2), "spread_corr": float(corr)}


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worlds", type=int, default=20)
    p.add_argument("--family-seed", type=int, default=0)
    a = p.parse_args(argv)
    rows = []
    for mechanism in MECHANISMS:
        per_world = [world_ceiling(cfg) for cfg in make_world_family(a.worlds, a.family_seed, mechanism=mechanism)]
        row: dict[str, object] = {"mechanism": mechanism, "worlds": len(per_world)}
        for key in ("logit_r2", "spread_corr"):
            values = np.array([w[key] for w in per_world])
            row |= {f"{key}_q25": float(np.quantile(values, 0.25)), f"{key}_median": float(np.median(values)),
                    f"{key}_q75": float(np.quantile(values, 0.75))}  # fmt: skip
        row["tokens_median"] = float(np.median([w["tokens"] for w in per_world]))
        rows.append(row)
    print(format_table(rows, "The additive model fitted on true logits of half the tasks, scored on the other half"))
    return rows


if __name__ == "__main__":
    main()
