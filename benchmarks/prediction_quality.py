"""Where envsched's ranking falls short: rank AUC of its predictions against the truth, per step.

    python -m benchmarks.prediction_quality [--world default] [--seeds 3] [--checkpoints 10 20 40 80] [--gnn]

For tasks never tried and tasks tried, at each checkpoint step: the share that is truly
informative (p(1 - p) > 0.1), and the rank AUC (0.5 = no better than chance) of envsched's
prediction, of its closed form (and, with `--gnn`, of its learned GNN) separately, of the mean last-observed informativeness of the
task's classmates (same visible signature; computable from the same rollouts), and of the
classmates' true current p(1 - p) (the ceiling of any prediction from siblings; no scheduler sees
it). Means over seeds.
"""

from __future__ import annotations

import argparse

import numpy as np

from envsched_lightning.simulation import WORLD_PRESETS, make_world
from envsched_lightning.simulation.diagnostics import prediction_quality
from envsched_lightning.simulation.report import format_table
from envsched_lightning.threads import set_torch_threads, threads_setting


def summarize(per_seed: list[list[dict]]) -> list[dict]:
    """Average every numeric column over seeds, row by row (rows line up across seeds)."""
    out = []
    for rows in zip(*per_seed):
        first = rows[0]
        out.append({k: (v if isinstance(v, str) or k == "step" else float(np.nanmean([r[k] for r in rows])))
                    for k, v in first.items()})
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", default="default", choices=sorted(WORLD_PRESETS))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--checkpoints", type=int, nargs="+", default=[10, 20, 40, 80])
    p.add_argument("--gnn", action="store_true", help="envsched with its learned GNN on (use_gnn=true): adds a gnn column")
    a = p.parse_args(argv)
    set_torch_threads(threads_setting(1))  # small graph ops: one thread unless OMP_NUM_THREADS says otherwise
    world = make_world(a.world)
    rows = summarize([prediction_quality(world, s, a.checkpoints, use_gnn=a.gnn) for s in range(a.seeds)])
    print(format_table(rows, f"Prediction rank AUC, simulated world `{a.world}` ({a.seeds} seeds)"))
    return rows


if __name__ == "__main__":
    main()
