"""Entry point: `python train.py experiment=<name> [overrides]`.

`train(cfg)` instantiates what the config names and returns the run's metrics; `main` is the thin
Hydra wrapper. The `sim` experiment runs the chosen scheduler against uniform sampling on the
simulated GRPO learner.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf


def run_simulation(cfg: DictConfig) -> dict[str, Any]:
    from envsched_lightning.simulation import make_world, run_scheduler
    from envsched_lightning.simulation.report import format_table, summarize

    sim = cfg.sim
    world = make_world(sim.world)
    sched_cfg = OmegaConf.to_container(cfg.scheduler, resolve=True)
    name = sched_cfg.pop("name")
    for key in ("_target_", "_partial_"):
        sched_cfg.pop(key, None)
    runs = {}
    for label, sname, opts in (("random", "random", {}), (name, name, sched_cfg)):
        runs[label] = [run_scheduler(world, sname, cfg.seed + s, sim.steps, sim.batch_size, sim.group_size, label=label, **opts)
                       for s in range(sim.seeds)]
    rows = summarize(runs, horizon=sim.steps)
    print(format_table(rows, f"{name} vs uniform, simulated world `{sim.world}`"))
    out = Path(cfg.output_dir) / "sim_results.json"
    out.write_text(json.dumps(rows, indent=2))
    print(f"results: {out}")
    return {"rows": rows, "results_path": str(out)}


def train(cfg: DictConfig) -> dict[str, Any]:
    if "sim" in cfg:
        return run_simulation(cfg)
    raise ValueError("config has no `sim` section; choose an experiment, e.g. experiment=sim")


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> None:
    train(cfg)


if __name__ == "__main__":
    main()
