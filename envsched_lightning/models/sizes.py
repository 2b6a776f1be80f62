"""The settings `model=pretrained` took for the run's hardware, said in one console line.

conf/model/pretrained.yaml holds the GPU sizes and picks `conf/model/pretrained_on/<trainer>.yaml`
on top of them (on CPU: fp32, LoRA on the top layers, shorter sequences, compact tool schemas). A
user who asked only for `model=pretrained` should see what the CPU picked without reading the config,
and which of those values an experiment or the command line has changed since.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

CHOICE = "model/pretrained_on@model"  # the defaults entry of conf/model/pretrained.yaml, as Hydra names it
CONF = Path(__file__).resolve().parents[2] / "conf"


def flat_items(node: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) of every leaf of a nested mapping."""
    items: list[tuple[str, Any]] = []
    for key, value in node.items():
        if isinstance(value, Mapping):
            items += flat_items(value, f"{prefix}{key}.")
        else:
            items.append((f"{prefix}{key}", value))
    return items


def as_text(value: Any) -> str:
    """A value as it is written on the command line (`false`, not `False`)."""
    return str(value).lower() if isinstance(value, bool) or value is None else str(value)


def sizes_line(cfg: DictConfig, choices: Mapping[str, Any], conf_dir: Path = CONF) -> str | None:
    """`model=pretrained on trainer=cpu: model.policy.dtype=float32, ...`, each value as the run has it
    (with the picked one beside it where something overrode it); None when no sizes file applied or
    it sets nothing (trainer=gpu keeps conf/model/pretrained.yaml as written)."""
    picked = choices.get(CHOICE)
    if not picked:
        return None
    path = conf_dir / "model" / "pretrained_on" / f"{picked}.yaml"
    sizes = OmegaConf.to_container(OmegaConf.load(path)) or {}
    shown = []
    for key, size in flat_items(sizes):
        value = OmegaConf.select(cfg.model, key)
        shown.append(f"model.{key}={as_text(value)}" + ("" if value == size else f" (overridden; {picked} size {as_text(size)})"))
    if not shown:
        return None
    return f"model=pretrained on trainer={picked} ({path.relative_to(conf_dir.parent)}): {', '.join(shown)}"
