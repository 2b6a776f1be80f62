"""A finished run's config (`<run>/config_resolved.yaml`, beside its `checkpoints/`), read as data only.

The file lies next to a checkpoint that may come from anywhere: nothing in it is instantiated as it
stands, and no interpolation in it is resolved. `check_plain` refuses, by key, whatever is not plain
data; a resume (`resume_overrides`) takes only named plain values (the scheduler's and logger's
group names, the seed, the environments' names), each checked against this repository's conf/.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from .console import RunConfigError

RUN_CONFIG = "config_resolved.yaml"  # train.py's save_config writes it into the run folder
PLAIN = (str, int, float, bool, type(None))
CARRIED = ("scheduler", "seed", "logger", "env")  # what a resume takes from its run unless the command line sets it


def run_config_path(ckpt_path: str) -> Path:
    """`<run>/config_resolved.yaml` for a checkpoint at `<run>/checkpoints/<name>.ckpt`."""
    return Path(ckpt_path).resolve().parent.parent / RUN_CONFIG


def check_plain(value: Any, key: str, source: str, target_ok: Callable[[str, Any], bool], allowed: str) -> None:
    """Refuse, by key, any value of a run's config file but plain data and the `_target_`s `target_ok`
    accepts (`target_ok(key of the mapping, target)`); `allowed` says which those are."""
    if isinstance(value, dict):
        for k, v in value.items():
            where = f"{key}.{k}"
            if str(k).startswith("_") and k != "_target_":
                raise RunConfigError(f"{source}: {where}: Hydra instantiation keys are refused in a run's config")
            if k == "_target_" and not target_ok(key, v):
                raise RunConfigError(f"{source}: {where}={v!r}: {allowed}; refused")
            check_plain(v, where, source, target_ok, allowed)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_plain(v, f"{key}[{i}]", source, target_ok, allowed)
    elif not isinstance(value, PLAIN):
        raise RunConfigError(f"{source}: {key}: a {type(value).__name__} is not a plain value; refused")
    elif isinstance(value, str) and "${" in value:
        raise RunConfigError(f"{source}: {key}={value!r}: interpolations are refused in a run's resolved config")


def read_run_config(source: Path) -> dict[str, Any]:
    """The file as plain containers, interpolations left unresolved (a forged `${oc.env:...}` reads nothing)."""
    try:
        run = OmegaConf.to_container(OmegaConf.load(source), resolve=False)
    except Exception as err:  # noqa: BLE001 - any unreadable file gets the same message
        raise RunConfigError(f"{source}: not a readable run config ({type(err).__name__}: {str(err)[:200]})") from None
    if not isinstance(run, dict):
        raise RunConfigError(f"{source}: not a run config (a mapping of keys)")
    return run


def group_files(conf_dir: Path, group: str) -> dict[str, Any]:
    """conf/<group>/*.yaml by option name, each file's content (this repository's own files)."""
    return {f.stem: OmegaConf.to_container(OmegaConf.load(f), resolve=False) for f in sorted((conf_dir / group).glob("*.yaml"))}


def run_scheduler(run: dict[str, Any], source: Path, conf_dir: Path) -> str:
    """The conf/scheduler/ option whose `name` is the run's `scheduler.name`."""
    node = run.get("scheduler")
    name = node.get("name") if isinstance(node, dict) else None
    known = {content.get("name"): option for option, content in group_files(conf_dir, "scheduler").items()
             if isinstance(content, dict)}  # fmt: skip
    if not isinstance(name, str) or name not in known:
        raise RunConfigError(f"{source}: scheduler.name={name!r} is none of conf/scheduler/ "
                             f"({', '.join(sorted(map(str, known)))}); refused: name the scheduler (scheduler=...)")  # fmt: skip
    return known[name]


def run_seed(run: dict[str, Any], source: Path, conf_dir: Path) -> int:
    seed = run.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise RunConfigError(f"{source}: seed={seed!r} is not an int; refused: set seed=N")
    return seed


def run_logger(run: dict[str, Any], source: Path, conf_dir: Path) -> str:
    """The conf/logger/ option whose loggers (csv, wandb, ...) are the run's; no value of the run's is used."""
    node = run.get("logger") or {}
    names = sorted(node) if isinstance(node, dict) else None
    for option, content in group_files(conf_dir, "logger").items():
        if sorted(content or {}) == names:
            return option
    raise RunConfigError(f"{source}: logger with {names!r} matches none of conf/logger/; refused: set logger=...")


def run_envs(run: dict[str, Any], source: Path, conf_dir: Path) -> str:
    """`[banking,calendar]`: the run's environments, each a conf/env/ option building the same class."""
    node = run.get("env")
    known = group_files(conf_dir, "env")
    if not isinstance(node, dict) or not node:
        raise RunConfigError(f"{source}: env is not a mapping of environments; refused: set env=[...]")
    for name, options in node.items():
        target = options.get("_target_") if isinstance(options, dict) else None
        if name not in known or target != (known[name] or {}).get("_target_"):
            raise RunConfigError(f"{source}: env.{name} (_target_={target!r}) is no conf/env/ environment; refused: set env=[...]")
    return f"[{','.join(node)}]"


READERS: dict[str, Callable[[dict[str, Any], Path, Path], Any]] = {
    "scheduler": run_scheduler, "seed": run_seed, "logger": run_logger, "env": run_envs,
}  # fmt: skip


def resume_overrides(cfg: DictConfig, overrides: Sequence[str], conf_dir: Path) -> tuple[list[str], Path | None]:
    """The run's own settings (CARRIED) for a resume from `cfg.ckpt_path`, as overrides, for each the command
    line does not set, and the file they come from; nothing when the run left no config.

    Refuses a scheduler the command line sets that is not the run's: the checkpoint holds the run's
    scheduler state, which no other scheduler can take (unless `resume_without_scheduler=true`)."""
    source = run_config_path(cfg.ckpt_path)
    if not source.is_file():
        return [], None
    run = read_run_config(source)
    given = {o.key_or_group: o.input_line for o in OverridesParser.create().parse_overrides(list(overrides))}
    if "scheduler" in given and not cfg.get("resume_without_scheduler"):
        ours, theirs = (cfg.get("scheduler") or {}).get("name"), run_scheduler(run, source, conf_dir)
        if ours != (run.get("scheduler") or {}).get("name"):
            raise RunConfigError(f"{given['scheduler']}: ckpt_path={cfg.ckpt_path} holds the state of the run's scheduler "
                                 f"({source}); resume it with scheduler={theirs} (or leave scheduler= out), or set "
                                 f"resume_without_scheduler=true to start {ours} afresh from the checkpoint's model")  # fmt: skip
    carried = [f"{key}={READERS[key](run, source, conf_dir)}" for key in CARRIED if key not in given]
    return carried, source
