"""A finished run's config (`<run>/config_resolved.yaml`, beside its `checkpoints/`), read as untrusted data only.

`evaluate.py`, `compare` and a resume read the config a run wrote next to its checkpoint, and that folder
may come from anywhere. Read through OmegaConf, an interpolation in it (`${oc.env:KEY}`, `${unique_dir:...}`)
would run on access: print a caller's secrets, create folders; read through a YAML loader that expands
aliases, a few KB of nested anchors would take the memory of the machine. So the file is a regular file
under a size cap, its YAML has no anchors or aliases, and it comes back as plain dicts and lists in which
nothing is ever resolved. Nothing in it is instantiated as it stands: `check_plain` refuses, by key, whatever
is not plain data; a resume (`resume_overrides`) takes only named plain values (the scheduler's and logger's
group names, the seed, the environments' names), each checked against this repository's conf/.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from .console import RunConfigError

RUN_CONFIG = "config_resolved.yaml"  # train.py's save_config writes it into the run folder
MAX_RUN_CONFIG_BYTES = 4 * 2**20  # a run's resolved config is tens of KB; a bigger file is not one this application wrote
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
    elif isinstance(value, str) and "${" in value:  # (its text is not echoed: it may name a variable of yours)
        raise RunConfigError(f"{source}: {key}: interpolations are refused in a run's resolved config")


def has_interpolation(value: Any) -> bool:
    """True where any string inside `value` holds `${`: a resolved config has none, so such a file was edited."""
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, dict):
        return any(has_interpolation(k) or has_interpolation(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_interpolation(v) for v in value)
    return False


def read_run_config(source: str | os.PathLike[str]) -> dict[str, Any]:
    """The mapping in `source`, as plain data (no interpolation resolved, no alias expanded), or an error naming it."""
    file = Path(source)
    if not file.is_file():
        raise RunConfigError(f"{file}: not a regular file")
    size = file.stat().st_size
    if size > MAX_RUN_CONFIG_BYTES:
        raise RunConfigError(f"{file}: {size:,} bytes, more than the {MAX_RUN_CONFIG_BYTES:,} a run's config holds")
    try:
        text = file.read_text(encoding="utf-8")
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise RunConfigError(f"{file}: YAML anchors and aliases are refused (a run's config has none)")
        run = yaml.safe_load(text)
    except RunConfigError:
        raise
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise RunConfigError(f"{file}: not a readable run config ({type(err).__name__}: {str(err)[:200]})") from None
    if not isinstance(run, dict):
        raise RunConfigError(f"{file}: not a run config (a mapping of keys)")
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
