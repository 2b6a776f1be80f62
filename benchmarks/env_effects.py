"""Can a run tell, from its own rollouts, which environments' training lowers others? (not yet)

    python -m benchmarks.env_effects [--worlds 8] [--steps 120] [--scheduler envsched]

On drawn clustered worlds (`simulation/clustered.py`: 10-40% of the environments lower one or two
others' private skills by 0.1-0.8 of their own gain), envsched runs as it would, and every re-picked
task gives one observation: its change in group mean since its last group, against the informative
groups trained per environment in between, with the gap in steps, its last group mean and std and
the step as controls (what regression to the mean and drift depend on). A least-squares fit per
observed environment gives an effect [trained environment, observed environment] and its t
statistic. `auc` ranks the pairs that truly interfere (the world's interference below -0.05) against
every other pair by -t (0.5 = chance), per world; `found` counts pairs with t < -2 that truly
interfere, `false` those that do not.

What it shows (docs/results/simulator_mechanisms.md): no better than chance, under envsched and under
uniform sampling alike (`--scheduler random`, also at 400 steps). Under envsched the mix is chosen
from the same outcomes (confounded); under uniform sampling every environment's trained mass grows
with the gap in nearly fixed proportions, so the regressors barely vary apart. A re-pick's change
in group mean (sampling noise about 0.17 for a group of 8) carries too little of an interference
effect for either.
"""

from __future__ import annotations

import argparse

import numpy as np

from envsched_lightning.scheduling import build_scheduler
from envsched_lightning.scheduling.types import ZERO_STD_EPS, group_stats
from envsched_lightning.simulation.family import build_world, make_world_family
from envsched_lightning.simulation.learner import SimLearner
from envsched_lightning.simulation.report import format_table


def observations(world, steps: int, seed: int, scheduler: str = "envsched") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x [M, E + 4], change in group mean [M], observed environment [M]) of every re-pick."""
    learner = SimLearner(world, seed=seed)
    sched = build_scheduler(scheduler, world.specs, seed=seed)
    n_env = len(world.env_names)
    mass = [np.zeros(n_env)]  # informative groups trained per environment, cumulative per update
    xs, ys, envs = [], [], []
    for _ in range(steps):
        picked = sched.select(32)
        groups = learner.rollout(picked)
        learner.learn(groups)
        h = sched.history
        index, mean, std, _ = group_stats(groups)
        now = mass[h.step]
        for i, m in zip(index, mean):
            if h.count[i] > 0:
                last = h.last_step[i]
                xs.append(np.concatenate([now - mass[last - 1], [h.step - last + 1, h.last_mean[i], h.last_std[i], h.step]]))
                ys.append(m - h.last_mean[i])
                envs.append(sched.env_ids[i])
        mass.append(now + np.bincount(sched.env_ids[index[std >= ZERO_STD_EPS]], minlength=n_env))
        sched.update(groups)
    return np.array(xs), np.array(ys), np.array(envs)


def effect_t(x: np.ndarray, y: np.ndarray, env: np.ndarray, n_env: int, min_obs: int = 40) -> np.ndarray:
    """float[E, E]: t statistic of each [trained, observed] effect (NaN where too few re-picks)."""
    t = np.full((n_env, n_env), np.nan)
    for f in range(n_env):
        rows = env == f
        if rows.sum() < min_obs:
            continue
        a = np.column_stack([x[rows], np.ones(rows.sum())])
        ridge = np.eye(a.shape[1])
        ridge[-1, -1] = 1e-6
        inv = np.linalg.inv(a.T @ a + ridge)
        b = inv @ a.T @ y[rows]
        resid = y[rows] - a @ b
        s2 = resid @ resid / max(rows.sum() - a.shape[1], 1)
        t[:, f] = b[:n_env] / np.sqrt(np.diag(inv)[:n_env] * s2)
    return t


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worlds", type=int, default=8)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--family-seed", type=int, default=0)
    p.add_argument("--scheduler", default="envsched", help="who picks the batches (random: a mix nobody chose)")
    a = p.parse_args(argv)
    rows = []
    for k, cfg in enumerate(make_world_family(a.worlds, a.family_seed, mechanism="clustered")):
        world = build_world(cfg)
        n_env = len(world.env_names)
        t = effect_t(*observations(world, a.steps, seed=0, scheduler=a.scheduler), n_env)
        known = ~np.isnan(t) & ~np.eye(n_env, dtype=bool)
        harmful = world.interference < -0.05
        pos, neg = -t[known & harmful], -t[known & ~harmful]
        auc = float(np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])) if pos.size and neg.size else float("nan")
        rows.append({"world": f"k{k:02d}", "envs": n_env, "harmful_pairs": int(harmful.sum()), "auc": auc,
                     "found": int((known & harmful & (t < -2)).sum()), "false": int((known & ~harmful & (t < -2)).sum())})  # fmt: skip
    print(format_table(rows, f"Environment effects from re-picks, {a.steps} steps of {a.scheduler} per world"))
    print(f"median auc {np.nanmedian([r['auc'] for r in rows]):.2f}")
    return rows


if __name__ == "__main__":
    main()
