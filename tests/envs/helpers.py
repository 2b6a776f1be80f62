"""Built-in worlds built from their `conf/env/*.yaml`, once per session: shared by the environment tests,
the template tests and the real-model chat check."""

from __future__ import annotations

from pathlib import Path

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from envsched_lightning.envs import Environment
from envsched_lightning.envs.registry import BUILTIN_PACKAGE

CONF_ENV = Path(__file__).resolve().parents[2] / "conf" / "env"


def env_node(path: Path) -> DictConfig:
    """The environment's config (its `# @package env.<name>` header only matters to Hydra)."""
    return OmegaConf.load(path)


SHIPPED_WORLDS = ("airline", "banking", "calendar", "filesystem", "messaging", "retail_orders")
"""The worlds this project ships, held to the full contract (`test_worlds.py`: 200+ tasks, 4-10 tools).
A world a user adds next to them is held to `world_checks` only (`test_world_checks.py`)."""


def package_yamls() -> list[Path]:
    """The env yamls whose `_target_` is a world in the worlds package (shipped or added)."""
    return sorted(p for p in CONF_ENV.glob("*.yaml")
                  if str(env_node(p).get("_target_", "")).startswith(BUILTIN_PACKAGE + "."))


def builtin_yamls() -> list[Path]:
    """The shipped worlds' env yamls."""
    return [p for p in package_yamls() if p.stem in SHIPPED_WORLDS]


_CACHE: dict[str, Environment] = {}


def build(path: Path) -> Environment:
    if path.stem not in _CACHE:
        _CACHE[path.stem] = instantiate(env_node(path))
    return _CACHE[path.stem]
