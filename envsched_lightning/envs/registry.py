"""Name -> environment factory. A world registers itself with `@register_env`; the `worlds` package
is scanned on first use, so adding a world is one file there plus its `conf/env/<name>.yaml`.

Factories are classes or functions taking keyword options, so a benchmark loader that serves several
environments (one per category) can register one factory per name from its own module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any, TypeVar

from .base import Environment

F = TypeVar("F", bound=Callable[..., Environment])

_REGISTRY: dict[str, Callable[..., Environment]] = {}
_SCANNED: set[str] = set()
BUILTIN_PACKAGE = "envsched_lightning.envs.worlds"
# the benchmark suites, one package each; importing a package registers its environments
SUITE_PACKAGES = ("envsched_lightning.envs.bfcl", "envsched_lightning.envs.acebench", "envsched_lightning.envs.tau")


def register_env(name: str) -> Callable[[F], F]:
    """Register `factory` under `name`; a class also gets `name` as its class attribute."""

    def wrap(factory: F) -> F:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ValueError(f"environment name {name!r} registered twice ({_REGISTRY[name]!r}, {factory!r})")
        if isinstance(factory, type):
            factory.name = name
        _REGISTRY[name] = factory
        return factory

    return wrap


def _scan(package: str) -> None:
    if package in _SCANNED:
        return
    pkg = importlib.import_module(package)
    for mod in pkgutil.iter_modules(pkg.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{package}.{mod.name}")
    _SCANNED.add(package)


def scan_builtin() -> None:
    """Import every module of the built-in worlds package (each registers itself)."""
    _scan(BUILTIN_PACKAGE)


def scan_all() -> None:
    """Built-in worlds plus every benchmark suite's package."""
    scan_builtin()
    for package in SUITE_PACKAGES:
        importlib.import_module(package)


def builtin_env_names() -> list[str]:
    """Names registered by the shipped, offline worlds (what the CPU default trains on)."""
    scan_builtin()
    return sorted(n for n, f in _REGISTRY.items() if getattr(f, "__module__", "").startswith(BUILTIN_PACKAGE))


def env_names() -> list[str]:
    scan_all()
    return sorted(_REGISTRY)


def make_env(name: str, **options: Any) -> Environment:
    """Build the environment registered as `name`; unknown names list the valid ones."""
    scan_builtin()
    if name not in _REGISTRY:
        scan_all()
    if name not in _REGISTRY:
        why = next((reason for prefix, reason in UNSUPPORTED.items() if name.startswith(prefix)), None)
        if why:
            raise ValueError(f"environment {name!r} is not supported: {why}")
        raise ValueError(f"unknown environment {name!r}; valid names: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name](**options)


UNSUPPORTED = {
    "bfcl_web_search": "BFCL's web_search categories score answers found through a live search API "
                       "(the official harness calls SerpAPI and fetches pages); they cannot run offline "
                       "as the official harness scores them",
    "bfcl_memory": "BFCL's memory categories are not implemented: memory_vector retrieves with a "
                   "sentence-transformers embedding model (a download), and memory_kv / memory_rec_sum "
                   "(prerequisite conversations, then questions) have no backend here yet",
    "bfcl_format_sensitivity": "BFCL's format_sensitivity re-runs other categories under varied prompt "
                               "formats for prompting (non-FC) models; it has no tasks of its own to train on",
}  # fmt: skip
"""Benchmark categories that exist upstream but not here, refused by name with the reason."""
