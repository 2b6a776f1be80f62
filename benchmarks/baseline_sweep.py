"""Each baseline's main knobs swept over a tuning family, and its best setting by median ratio.

    python -m benchmarks.baseline_sweep                  # 52 settings x 20 worlds (family seed 1) x 3 seeds
    python -m benchmarks.baseline_sweep --workers 2 --json sweep.json

The tuning family is drawn with another family seed (1) than the one the results tables report
(0), so a baseline's best setting is chosen on worlds it is not scored on. Prints the family table
of every setting (`benchmarks.world_family`) and then, per baseline, its paper default and the
setting with the highest median ratio: the labels to pass to `world_family --labels`.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

from benchmarks import world_family

GRID: dict[str, dict[str, tuple]] = {
    "mopps": {"decay": (0.3, 0.5, 0.7, 0.9, 0.97), "decay_mode": ("step", "observation"), "pool_factor": (8, 0)},
    "plr": {"beta": (0.03, 0.1, 0.3, 1.0, 2.0, 5.0), "rho": (0.0, 0.1, 0.3)},
    "greso": {"target": (0.02, 0.04, 0.083, 0.2), "step_size": (0.01, 0.05, 0.1)},
    "sec": {"lr": (0.1, 0.25, 0.5, 1.0), "tau": (0.01, 0.03, 0.1, 0.3)},
}


def labels(grid: dict[str, dict[str, tuple]] = GRID) -> list[str]:
    """One `world_family` label per point of every baseline's grid (greso's `target` sets both skip targets)."""
    out = []
    for name, knobs in grid.items():
        for values in itertools.product(*knobs.values()):
            pairs = []
            for key, value in zip(knobs, values):
                pairs += [f"target_easy={value}", f"target_hard={value}"] if key == "target" else [f"{key}={value}"]
            out.append(" ".join([name, *pairs]))
    return out


def best(table: list[dict]) -> dict[str, str]:
    """Per baseline, the label with the highest median ratio in a `world_family` family table."""
    rows = {r["scheduler"]: r for r in table}
    return {name: max((x for x in rows if x.split()[0] == name), key=lambda x: rows[x]["ratio_median"]) for name in GRID}


def main(argv: list[str] | None = None) -> dict[str, str]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worlds", type=int, default=20)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--family-seed", type=int, default=1, help="the tuning family (the results tables use 0)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--json", type=Path, default=None)
    a = p.parse_args(argv)
    out = world_family.main(["--worlds", str(a.worlds), "--seeds", str(a.seeds), "--steps", str(a.steps),
                             "--family-seed", str(a.family_seed), "--workers", str(a.workers), "--no-named",
                             "--labels", "random", *world_family.BASELINES, *labels()])  # fmt: skip
    chosen = best(out["family"])
    ratio = {r["scheduler"]: r["ratio_median"] for r in out["family"]}
    print("\nbest setting per baseline (median ratio on the tuning family):")
    for name, label in chosen.items():
        print(f"  {name:<6} default {ratio[name]:.3f}   best {ratio[label]:.3f}: {label!r}")
    if a.json:
        a.json.write_text(json.dumps({"family": out["family"], "best": chosen}, indent=1))
    return chosen


if __name__ == "__main__":
    main()
