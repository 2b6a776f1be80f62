"""Entry point: `python train.py [experiment=<name>] [overrides]` (default experiment: `tiny_cpu`).

`train(cfg)` instantiates what the config names (DataModule, model, callbacks, loggers, trainer),
fits, and returns the run's metrics and output paths; `main` is the thin Hydra wrapper. The
DataModule and the constraint callbacks are built first, so a bad data, scheduler or quota
setting fails before the model is loaded. The `sim` experiment runs the chosen scheduler against
uniform sampling on the simulated GRPO learner instead.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

# PyG writes generated message-passing code into the temp folder and leaves it there: unless the
# caller chose a TMPDIR, keep it in the repository's scratch folder (.tmp/, ignored by git).
if "TMPDIR" not in os.environ:
    os.environ["TMPDIR"] = str(Path(__file__).resolve().parent / ".tmp")
    Path(os.environ["TMPDIR"]).mkdir(exist_ok=True)

import hydra  # noqa: E402
from hydra.utils import instantiate  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from envsched_lightning.config_errors import check_command_line, command_line_overrides  # noqa: E402
from envsched_lightning.console import RunConfigError, config_errors_exit, quiet_known_noise  # noqa: E402
from envsched_lightning.distributed import end_process_group  # noqa: E402
from envsched_lightning.run_dirs import register_resolver  # noqa: E402
from envsched_lightning.threads import set_torch_threads  # noqa: E402

register_resolver()  # hydra.run.dir: ${unique_dir:...}, a folder no other run shares
CONF = Path(__file__).resolve().parent / "conf"


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


def instantiate_each(group: DictConfig | None) -> list[Any]:
    """Every entry of a `callbacks`/`logger` group that is switched on (an entry set to null is off)."""
    return [instantiate(node) for node in (group or {}).values() if node is not None and "_target_" in node]


def output_paths(trainer: Any) -> dict[str, str | None]:
    from callbacks.scheduling_logger import SchedulingLoggerCallback

    ckpt = trainer.checkpoint_callback
    heatmaps = [cb.heatmap_path for cb in trainer.callbacks if isinstance(cb, SchedulingLoggerCallback)]
    return {
        "log_dir": trainer.log_dir,
        "checkpoint": (ckpt.last_model_path or ckpt.best_model_path or None) if ckpt is not None else None,
        "heatmap": str(heatmaps[0]) if heatmaps and heatmaps[0] else None,
    }


def check_checkpoint(path: str, datamodule: Any, without_scheduler: bool) -> tuple[int, int]:
    """(GRPO step, epoch) of a readable resume checkpoint that carries this run's scheduler state, or an error naming it.

    Without the DataModule's state the run would resume the model with a fresh scheduler history
    (every task unseen again); `resume_without_scheduler=true` does that on purpose (its step is 0).
    The state must be this scheduler's, over this task pool: another one's would fail inside fit."""
    from envsched_lightning.checkpoints import read_checkpoint, remove_stale_temporaries

    for leftover in remove_stale_temporaries(Path(path).parent):  # a resume saves into a new run folder
        log.info("removed %s, left by a save that was killed mid-write", leftover)
    ckpt = read_checkpoint(path, mmap=True)  # keys only: Lightning reads it next
    key = type(datamodule).__qualname__
    if key not in ckpt and not without_scheduler:
        raise RunConfigError(f"ckpt_path={path} has no {key} state (the scheduler's history); "
                             "set resume_without_scheduler=true to resume with a fresh scheduler")  # fmt: skip
    if without_scheduler or key not in ckpt:
        return 0, int(ckpt.get("epoch", 0))
    saved, ours = ckpt[key].get("scheduler") or {}, datamodule.scheduler.state_dict()
    if saved.get("name") != ours["name"]:
        raise RunConfigError(f"scheduler={ours['name']}: ckpt_path={path} holds the state of scheduler {saved.get('name')!r}; "
                             f"resume it with scheduler={saved.get('name')}, or set resume_without_scheduler=true to start "
                             f"{ours['name']} afresh from the checkpoint's model")  # fmt: skip
    if saved.get("fingerprint") != ours["fingerprint"]:
        raise RunConfigError(f"ckpt_path={path} was saved over another task pool (env=[...], an environment's num_tasks or "
                             "tasks_path, data.eval_per_env): resume with the run's settings (its config_resolved.yaml)")  # fmt: skip
    return int(ckpt[key].get("step", 0)), int(ckpt.get("epoch", 0))


def extend_run_length(cfg: DictConfig, path: str, step: int, epoch: int) -> None:
    """A resumed run goes on to `steps` whatever the epoch boundaries: refuse a length it has reached.

    Lightning counts epochs from the checkpoint's, and an epoch cut short by the end of the earlier
    run still counts as one, so `set_run_length`'s epoch cap would stop a short extension before its
    first step; the DataModule stops the run at `steps` (`data.total_steps`), so the cap here only
    leaves room: the checkpoint's epoch, plus one, plus the epochs the remaining steps need."""
    import math

    from omegaconf import open_dict

    if cfg.steps <= step:
        raise RunConfigError(f"steps={cfg.steps}: ckpt_path={path} is at GRPO step {step} already; set steps above "
                             f"it to continue (steps={step + cfg.data.steps_per_epoch} runs {cfg.data.steps_per_epoch} "
                             "more)")  # fmt: skip
    with open_dict(cfg):
        cfg.trainer.max_epochs = epoch + 1 + math.ceil((cfg.steps - step) / cfg.data.steps_per_epoch)
    log.info("resuming from %s at GRPO step %d: steps %d to %d", path, step, step + 1, cfg.steps)


log = logging.getLogger(__name__)


def drop_unselected_envs(cfg: DictConfig) -> None:
    """Remove option-only `env` nodes before anything reads `env` (the DataModule, the tokenizer corpus).

    An experiment may set options for worlds (``env.calendar.num_tasks``) that an override such as
    ``env=[banking,airline]`` then leaves unselected: Hydra keeps such a node without its `_target_`."""
    from omegaconf import open_dict

    envs = cfg.get("env") or {}
    loose = [k for k, node in envs.items() if not isinstance(node, DictConfig)]
    if loose:
        raise RunConfigError(f"env.{loose[0]}={envs[loose[0]]!r}: every entry of env must be one environment's options. "
                             "An environment yaml needs `# @package env.<name>` as its first line (see "
                             "conf/env/banking.yaml); without it its keys land directly under env")  # fmt: skip
    with open_dict(cfg):
        for key in [k for k, node in envs.items() if "_target_" not in node]:
            log.info("env.%s: options for an environment that is not selected (env=[...]); ignored", key)
            del cfg.env[key]


def set_run_length(cfg: DictConfig) -> None:
    """The run lasts `steps` GRPO steps: the DataModule stops the trainer there (`data.total_steps`).

    Lightning's own counters cannot say it: `trainer.max_steps` counts optimiser steps (a GRPO step
    makes ppo_epochs x num_mini_batches of them, or none when every group is zero-variance), and
    epochs are only the evaluation interval (`data.steps_per_epoch`), so both are refused here."""
    import math

    from omegaconf import open_dict

    if (cfg.trainer.get("max_steps") or -1) > 0:
        raise RunConfigError(f"trainer.max_steps={cfg.trainer.max_steps} counts optimiser steps (ppo_epochs x "
                         "num_mini_batches per GRPO step); set the run's length in GRPO steps with steps=N")  # fmt: skip
    if cfg.trainer.get("max_epochs") is not None:
        raise RunConfigError(f"trainer.max_epochs={cfg.trainer.max_epochs}: the run's length is steps=N (GRPO steps); "
                         "evaluation runs every data.steps_per_epoch steps")  # fmt: skip
    steps = cfg.get("steps")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise RunConfigError(f"steps must be a positive int (GRPO steps of the run), got {steps!r}")
    with open_dict(cfg):
        cfg.trainer.max_epochs = math.ceil(steps / cfg.data.steps_per_epoch)


def save_config(cfg: DictConfig, trainer: Any) -> None:
    """The resolved config in every logger's run config, and as a readable file next to the run and in W&B."""
    from lightning.pytorch.loggers import WandbLogger

    resolved = OmegaConf.to_container(cfg, resolve=True)
    text = OmegaConf.to_yaml(resolved)
    for lg in trainer.loggers:
        lg.log_hyperparams(resolved)
        if trainer.is_global_zero and isinstance(lg, WandbLogger):  # a file in the run, synced with it
            (Path(lg.experiment.dir) / "config_resolved.yaml").write_text(text)
    if trainer.is_global_zero and cfg.get("output_dir"):
        Path(cfg.output_dir).mkdir(parents=True, exist_ok=True)
        (Path(cfg.output_dir) / "config_resolved.yaml").write_text(text)


def train(cfg: DictConfig) -> dict[str, Any]:
    quiet_known_noise()
    set_torch_threads(cfg.get("torch_threads"))  # conf: OMP_NUM_THREADS when set, else the experiment's default
    if cfg.get("evaluate_only"):
        raise RunConfigError("this experiment is an evaluation (evaluate_only: true): run it with `python evaluate.py "
                         "experiment=<name>`")  # fmt: skip
    if "sim" in cfg:
        return run_simulation(cfg)
    import lightning as L

    from callbacks.checkpoint import SafeCheckpointIO
    from callbacks.constraint import install_constraints
    from callbacks.stop import stop_exits

    L.seed_everything(cfg.seed, workers=True)
    if cfg.get("model") is not None:  # option errors before any data or weights load
        from envsched_lightning.module import check_options

        plain = OmegaConf.to_container(OmegaConf.masked_copy(cfg.model, ["sampling", "grpo", "warm_start"]), resolve=True)
        check_options(plain.get("sampling"), plain.get("grpo"), plain.get("warm_start"))
    set_run_length(cfg)
    drop_unselected_envs(cfg)
    datamodule = instantiate(cfg.data)
    callbacks = instantiate_each(cfg.get("callbacks"))
    install_constraints(callbacks, datamodule.scheduler)  # infeasible quotas fail here, before the model loads
    if cfg.get("ckpt_path"):
        step, epoch = check_checkpoint(cfg.ckpt_path, datamodule, bool(cfg.get("resume_without_scheduler", False)))
        extend_run_length(cfg, cfg.ckpt_path, step, epoch)
    model = instantiate(cfg.model)
    trainer = instantiate(cfg.trainer, callbacks=callbacks, logger=instantiate_each(cfg.get("logger")) or False,
                          plugins=[SafeCheckpointIO()])  # atomic saves; loads never unpickle code
    save_config(cfg, trainer)
    with stop_exits(trainer):  # SIGTERM / SIGINT: the last completed step saved, how to resume, exit 128 + signal
        trainer.fit(model, datamodule=datamodule, ckpt_path=cfg.get("ckpt_path"), weights_only=True)
    paths = output_paths(trainer)
    if trainer.is_global_zero:
        print("\n".join(f"{name}: {path}" for name, path in paths.items()))
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    if trainer.world_size > 1:  # every rank finished fit(); gloo's threads must not outlive the interpreter.
        end_process_group()  # (one process: the group, if any, is the vLLM engine's, which it ends itself)
    return {"metrics": metrics, **paths, "objects": {"datamodule": datamodule, "model": model, "trainer": trainer}}


def command_line(argv: list[str]) -> list[str]:
    """The command line Hydra runs: an unknown config option or key is refused naming the ones that exist;
    a resume (ckpt_path=) takes its run's scheduler, seed, logger and env unless the line sets them."""
    from envsched_lightning.run_config import resume_overrides

    overrides = command_line_overrides(argv[1:])
    cfg = check_command_line(CONF, "train", overrides) if overrides is not None else None
    if cfg is None or not cfg.get("ckpt_path"):
        return argv
    carried, source = resume_overrides(cfg, overrides, CONF)
    if not carried:
        return argv
    print(f"resuming with the run's {' '.join(carried)} (from {source})")
    at = argv.index(overrides[0]) if overrides else len(argv)  # the overrides stay one run of arguments
    return [*argv[:at], *carried, *argv[at:]]


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from envsched_lightning.models.sizes import sizes_line

    if line := sizes_line(cfg, HydraConfig.get().runtime.choices):  # what model=pretrained took for this hardware
        print(line)
    with config_errors_exit():  # a setting the run cannot start with: its message, no traceback
        train(cfg)


if __name__ == "__main__":
    with config_errors_exit():  # Hydra composes inside main(): its mistakes are named here first
        sys.argv = command_line(sys.argv)
    main()
