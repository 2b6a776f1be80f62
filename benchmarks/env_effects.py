"""Can a run tell, from its own rollouts, which environments' training lowers others? (not at G = 8)

    python -m benchmarks.env_effects [--worlds 8] [--steps 120] [--scheduler envsched] [--figure PATH]

On drawn clustered worlds (`simulation/clustered.py`: 10-40% of the environments lower one or two
others' private skills by 0.1-0.8 of their own gain), a scheduler runs as it would and the estimator
envsched carries (`scheduling/env_effects.py`) is fed beside it: every re-picked task's change in
group mean since its last group, regressed per observed environment on the informative groups
trained per environment in between (controls: its last group's mean and std, the step). `auc` ranks
the pairs that truly interfere (the world's interference below -0.05) against every other pair by
-t (0.5 = chance), per world; `found` / `false` count pairs at t < -2 that do / do not truly
interfere; `flagged_*` the same beyond the Bonferroni level envsched acts on (`env_effects=true`),
`min_factor` the lowest environment factor it would apply.

What it shows (docs/results/simulator_mechanisms.md): no better than chance, under envsched and under
uniform sampling alike (`--scheduler random`, also at 400 steps). The estimator itself is unbiased
and finds an effect where one is large against the noise (tests/scheduling/test_env_effects.py:
groups of 64, a loss of 0.5 in pass rate over 120 steps); a re-pick's change in group mean for a
group of 8 (sampling noise about 0.25) carries too little of the simulated interference, and a
steady mix makes an environment's harm look like drift.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from callbacks.plots import save_env_effects
from envsched_lightning.scheduling import build_scheduler
from envsched_lightning.scheduling.env_effects import EnvEffects
from envsched_lightning.simulation.family import build_world, make_world_family
from envsched_lightning.simulation.learner import SimLearner
from envsched_lightning.simulation.report import format_table


def estimate(world, steps: int, seed: int, scheduler: str = "envsched", **options) -> tuple[np.ndarray, EnvEffects]:
    """(t float[E, E], the estimator) after `steps` steps of `scheduler` on `world`; the estimator is
    the one envsched carries (`scheduling/env_effects.py`), fed here beside any scheduler."""
    learner = SimLearner(world, seed=seed)
    sched = build_scheduler(scheduler, world.specs, seed=seed, **options)
    effects = EnvEffects(sched.env_ids, len(world.env_names))
    for _ in range(steps):
        groups = learner.rollout(sched.select(32))
        learner.learn(groups)
        effects.observe(groups, sched.history)
        sched.update(groups)
    return effects.effects()[1], effects


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worlds", type=int, default=8)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--family-seed", type=int, default=0)
    p.add_argument("--scheduler", default="envsched", help="who picks the batches (random: a mix nobody chose)")
    p.add_argument("--figure", type=Path, default=None, help="draw the first world's estimate here (PNG), as a run's "
                   "logger draws it, with the world's true interference printed beside")  # fmt: skip
    a = p.parse_args(argv)
    rows = []
    for k, cfg in enumerate(make_world_family(a.worlds, a.family_seed, mechanism="clustered")):
        world = build_world(cfg)
        n_env = len(world.env_names)
        t, effects = estimate(world, a.steps, seed=0, scheduler=a.scheduler)
        crit = effects.critical_t()
        if a.figure is not None and k == 0:
            effect, _ = effects.effects()
            save_env_effects(effect, t, world.env_names, crit, a.figure, scheduler=a.scheduler, step=effects.steps,
                             run=f"clustered world k00 of family {a.family_seed}")  # fmt: skip
            print(f"{a.figure}: true interference [trained, observed] of k00 (below -0.05 counts as harm):")
            print(np.array2string(world.interference, precision=2, suppress_small=True))
        known = ~np.isnan(t) & ~np.eye(n_env, dtype=bool)
        harmful = world.interference < -0.05
        pos, neg = -t[known & harmful], -t[known & ~harmful]
        auc = float(np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])) if pos.size and neg.size else float("nan")
        rows.append({"world": f"k{k:02d}", "envs": n_env, "harmful_pairs": int(harmful.sum()), "auc": auc,
                     "found": int((known & harmful & (t < -2)).sum()), "false": int((known & ~harmful & (t < -2)).sum()),
                     "flagged_true": int((known & harmful & (t < -crit)).sum()),
                     "flagged_false": int((known & ~harmful & (t < -crit)).sum()),
                     "min_factor": float(effects.env_factor().min())})  # fmt: skip
    print(format_table(rows, f"Environment effects from re-picks, {a.steps} steps of {a.scheduler} per world"))
    print(f"median auc {np.nanmedian([r['auc'] for r in rows]):.2f}")
    return rows


if __name__ == "__main__":
    main()
