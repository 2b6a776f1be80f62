"""A run folder's `config_resolved.yaml`, read as untrusted plain data.

`evaluate.py`, `compare` and a resume read the config a run wrote next to its checkpoint, and that
folder may come from anywhere. Read through OmegaConf, an interpolation in it (`${oc.env:KEY}`,
`${unique_dir:...}`) would run on access: print a caller's secrets, create folders. Read through a
YAML loader that expands aliases, a few KB of nested anchors would take the memory of the machine.
So the file is a regular file under a size cap, its YAML has no anchors or aliases, and it comes
back as plain dicts and lists in which nothing is ever resolved: strings stay strings.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

MAX_RUN_CONFIG_BYTES = 4 * 2**20
"""A run's resolved config is tens of KB; a bigger file is not one this application wrote."""


class UnreadableRunConfig(ValueError):
    """A run folder's config that is refused; the message names the file and why."""


def read_run_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The mapping in `path`, as plain data (no interpolation resolved, no alias expanded), or an error naming it."""
    file = Path(path)
    if not file.is_file():
        raise UnreadableRunConfig(f"{file}: not a regular file")
    size = file.stat().st_size
    if size > MAX_RUN_CONFIG_BYTES:
        raise UnreadableRunConfig(f"{file}: {size:,} bytes, more than the {MAX_RUN_CONFIG_BYTES:,} a run's config holds")
    try:
        text = file.read_text(encoding="utf-8")
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise UnreadableRunConfig(f"{file}: YAML anchors and aliases are refused (a run's config has none)")
        data = yaml.safe_load(text)
    except UnreadableRunConfig:
        raise
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise UnreadableRunConfig(f"{file}: not readable YAML ({type(err).__name__}: {str(err)[:200]})") from None
    if not isinstance(data, dict):
        raise UnreadableRunConfig(f"{file}: expected a mapping at the top, got {type(data).__name__}")
    return data


def has_interpolation(value: Any) -> bool:
    """True where any string inside `value` holds `${`: a resolved config has none, so such a file was edited."""
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, dict):
        return any(has_interpolation(k) or has_interpolation(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_interpolation(v) for v in value)
    return False
