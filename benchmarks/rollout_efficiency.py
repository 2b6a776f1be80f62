"""Rollout efficiency of every registered scheduler on the simulated GRPO learner.

    python -m benchmarks.rollout_efficiency [--world default] [--seeds 5] [--ablations]

Prints a Markdown table: held-out score at steps 40 and 120, steps for the seed-averaged curve to
reach uniform's 120-step score, the ratio 120 / that, per-seed wins (steps-to-target under 120
against that seed's uniform run), rollouts spent, zero-variance share, the mean within-group
reward std of the groups trained on (the signal a step gets: the simulated learner's progress
scales with it, so a batch of barely-mixed groups teaches little even when none is flat) and
scheduler time per step.
DAPO-style dynamic sampling is a reference row: it trains only on informative groups but pays
for every discarded rollout, so compare its rollouts, not its steps. The oracle row is the
ceiling: it reads the learner's true pass rates, which no scheduler can see. The informed rows
are envsched told what only the simulator knows (`simulation.run_informed`): the true current
class average of every never-tried task, a tried task's true pass rate at its last group (its
outcome without the noise of G rollouts) or its true current value (also what training changed
since), alone or together: how far each kind of knowledge would take it. The last two also
weigh every prediction by the task's true held-out gain per unit of group std
(`SimLearner.heldout_gain`): which skills the held-out tasks are limited by, the one thing the
oracle's own ranking leaves out.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from envsched_lightning.scheduling import scheduler_names
from envsched_lightning.simulation import (WORLD_PRESETS, make_world, run_dynamic_sampling, run_informed, run_oracle,
                                          run_scheduler)
from envsched_lightning.simulation.report import format_table, summarize
from envsched_lightning.threads import set_torch_threads, threads_setting

INFORMED = {  # row label -> what envsched is told (`run_informed`)
    "envsched told untried tasks' true class mean (reference)": {"untried": "class"},
    "envsched told tried tasks' true current value (reference)": {"untried": None, "tried": "now"},
    "envsched told both, tried at their last group (reference)": {"untried": "class", "tried": "last"},
    "envsched told both, tried now (reference)": {"untried": "class", "tried": "now"},
    "envsched told each task's held-out gain per unit of std (reference)": {"untried": None, "gain": True},
    "envsched told both (now) and the held-out gain (reference)": {"untried": "class", "tried": "now", "gain": True},
}
ABLATIONS = {
    "envsched -cross_edges": {"cross_edges": False},
    "envsched +gnn (learned correction on)": {"use_gnn": True},
    "envsched -relation gate (fixed mix)": {"gate": False},
    "envsched -own-outcome calibration": {"calibrate": False},
    "envsched -coverage": {"coverage": 0.0},
    "envsched -sibling-aware coverage": {"sibling_halflife": 0.0},
    "envsched -quotas": {"quota": False},
    "envsched -similarity_penalty": {"penalty": 0.0},
}


def run(world: str = "default", seeds: int = 5, steps: int = 120, batch_size: int = 32, group_size: int = 8,
        schedulers: list[str] | None = None, ablations: bool = False, references: bool = True) -> dict[str, list]:
    w = make_world(world)
    names = schedulers or scheduler_names()
    names = ["random"] + [n for n in names if n != "random"]
    plan = [(n, n, {}) for n in names]
    if ablations and "envsched" in names:
        plan += [(label, "envsched", opts) for label, opts in ABLATIONS.items()]
    runs: dict[str, list] = {}
    for label, name, opts in plan:
        t0 = time.perf_counter()
        runs[label] = [run_scheduler(w, name, s, steps, batch_size, group_size, label=label, **opts) for s in range(seeds)]
        print(f"  {label:34s} {time.perf_counter() - t0:6.1f}s", flush=True)
    if references:
        runs["dapo_dynamic_sampling (reference)"] = [run_dynamic_sampling(w, s, steps, batch_size, group_size) for s in range(seeds)]
        for label, told in INFORMED.items():
            runs[label] = [run_informed(w, s, steps, batch_size, group_size, label=label, **told) for s in range(seeds)]
        runs["oracle: true top reward variance (ceiling)"] = [run_oracle(w, s, steps, batch_size, group_size) for s in range(seeds)]
    return runs


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", default="default", choices=sorted(WORLD_PRESETS))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--schedulers", nargs="*", default=None)
    p.add_argument("--ablations", action="store_true")
    p.add_argument("--json", type=Path, default=None, help="also write the rows here")
    a = p.parse_args(argv)
    set_torch_threads(threads_setting(1))  # small graph ops: one thread unless OMP_NUM_THREADS says otherwise
    w = make_world(a.world)
    print(f"world={a.world}: {len(w.specs)} tasks in {w.config.num_envs} envs, seeds={a.seeds}, "
          f"steps={a.steps}, batch={a.batch_size} x G={a.group_size}")
    runs = run(a.world, a.seeds, a.steps, a.batch_size, a.group_size, a.schedulers, a.ablations)
    rows = summarize(runs, horizon=a.steps)
    print(format_table(rows, f"Rollout efficiency, simulated world `{a.world}` ({a.seeds} seeds)"))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))
    return rows


if __name__ == "__main__":
    main()
