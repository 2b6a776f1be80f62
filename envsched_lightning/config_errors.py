"""Command-line mistakes Hydra reports without the way out: an option a config group lacks, a key a config lacks.

Hydra composes the config inside `hydra.main`, before `train` or `evaluate` runs: `env=[bankin]` stops
with `Could not load 'env/bankin'` (no list of environments), and `data.batchsize=4` with a hint to
add the key with `+` (a key nothing reads: the run then fails with a TypeError). `check_command_line`
composes the command line's config first, as Hydra will, and turns either into one line that says
what exists, the nearest names first (difflib). Every other error is left to Hydra's own report.
The keys listed are the composed config's, so a key added to a yaml is offered without a change here.
"""

from __future__ import annotations

import contextlib
import difflib
import io
from collections.abc import Sequence
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError

from .console import RunConfigError


def command_line_overrides(argv: Sequence[str]) -> list[str] | None:
    """The overrides of a command line that runs one config from the entry point's own conf/; None for
    anything else (--help, --multirun sweeps, another config, a line Hydra's parser refuses)."""
    from hydra._internal.utils import get_args_parser

    try:
        with contextlib.redirect_stderr(io.StringIO()):  # Hydra's own parse reports a malformed line
            args = get_args_parser().parse_args(list(argv))
    except SystemExit:
        return None
    other = (args.help, args.hydra_help, args.info, args.shell_completion, args.multirun, args.config_path,
             args.config_dir, args.config_name, args.experimental_rerun)  # fmt: skip
    return None if any(other) else list(args.overrides)


def check_command_line(conf_dir: Path, config_name: str, overrides: Sequence[str]) -> DictConfig | None:
    """The config `overrides` compose to (unresolved), or `RunConfigError` naming an unknown group option
    or key with the ones that exist; None when composing fails otherwise (Hydra then says why)."""
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
        try:
            return compose(config_name, overrides=list(overrides))
        except MissingConfigException as err:
            message = unknown_option(err.missing_cfg_file, overrides)
        except ConfigCompositionException as err:
            message = unknown_key(err, config_name, overrides)
    if message is None:
        return None
    raise RunConfigError(message)


def nearest(name: str, names: Sequence[str], prefix: str = "") -> str:
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    return f"did you mean {' or '.join(prefix + c for c in close)}? " if close else ""


def written(overrides: Sequence[str], key: str) -> str | None:
    """The override as the command line wrote it that sets `key` (a config group, a key or one below it)."""
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        if override.key_or_group == key or override.key_or_group.startswith(f"{key}."):
            return override.input_line
    return None


def unknown_option(missing: str | None, overrides: Sequence[str]) -> str | None:
    """`env=[bankin]`: the options of conf/env/, nearest first; None for a file outside a config group."""
    group, _, name = (missing or "").rpartition("/")
    options = sorted(GlobalHydra.instance().config_loader().get_group_options(group)) if group else []
    if not options:
        return None
    asked = written(overrides, group) or f"{group}: {name} (named by the config's defaults)"
    return f"{asked}: conf/{group}/ has no {name}.yaml; {nearest(name, options)}the options of {group}: {', '.join(options)}"


def unknown_key_of(err: ConfigCompositionException) -> str | None:
    """The full key (`data.batchsize`) an override named that the config lacks, if that is what failed."""
    cause = err.__cause__
    if isinstance(cause, (ConfigAttributeError, ConfigKeyError)) and cause.full_key:
        return str(cause.full_key)
    return None


def compose_others(config_name: str, overrides: Sequence[str], asked: str) -> DictConfig | None:
    """The config of the other overrides, leaving out each that names an unknown key too (None if another fails)."""
    rest = [o for o in overrides if o != asked]
    for _ in range(len(rest) + 1):
        try:
            return compose(config_name, overrides=rest)
        except ConfigCompositionException as err:
            key = unknown_key_of(err)
            also = written(rest, key) if key else None
            if also is None:
                return None
            rest.remove(also)
    return None


def unknown_key(err: ConfigCompositionException, config_name: str, overrides: Sequence[str]) -> str | None:
    """`data.batchsize=4`: the keys of `data` in the config the other overrides compose, nearest first."""
    full_key = unknown_key_of(err)
    asked = written(overrides, full_key) if full_key else None
    if full_key is None or asked is None:
        return None
    cfg = compose_others(config_name, overrides, asked)
    parent_key, _, key = full_key.rpartition(".")
    where = parent_key or "the top level"
    parent = OmegaConf.select(cfg, parent_key, throw_on_resolution_failure=False) if cfg and parent_key else cfg
    if cfg is not None and not isinstance(parent, DictConfig):
        return f"{asked}: {parent_key} is a single value ({parent!r}), not a group of keys"
    if parent is None:
        return f"{asked}: {where} has no key {key!r}"
    keys = [str(k) for k in parent if not str(k).startswith("_")]  # not Hydra's _target_ / _partial_
    guess = nearest(key, keys, f"{parent_key}." if parent_key else "")
    return f"{asked}: {where} has no key {key!r}; {guess}the keys of {where}: {', '.join(keys)}"
