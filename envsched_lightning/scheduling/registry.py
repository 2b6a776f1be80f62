"""Name -> scheduler class. Each scheduler file registers itself once; the package is scanned lazily,
so adding a scheduler is one new file in `schedulers/` (plus its yaml in `conf/scheduler/`)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .types import TaskSpec

if TYPE_CHECKING:
    from .base import Scheduler

_REGISTRY: dict[str, type[Scheduler]] = {}
_SCANNED = False


def register_scheduler(name: str) -> Callable[[type[Scheduler]], type[Scheduler]]:
    def wrap(cls: type[Scheduler]) -> type[Scheduler]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"scheduler name {name!r} registered twice ({_REGISTRY[name].__name__}, {cls.__name__})")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return wrap


def _scan() -> None:
    global _SCANNED
    if not _SCANNED:
        from . import schedulers

        for mod in pkgutil.iter_modules(schedulers.__path__):
            importlib.import_module(f"{schedulers.__name__}.{mod.name}")
        _SCANNED = True


def scheduler_names() -> list[str]:
    _scan()
    return sorted(_REGISTRY)


def build_scheduler(name: str, specs: Sequence[TaskSpec], seed: int = 0, **options: Any) -> Scheduler:
    """Construct a registered scheduler over `specs`; unknown names list the valid ones."""
    _scan()
    if name not in _REGISTRY:
        raise ValueError(f"unknown scheduler {name!r}; valid names: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name](specs, seed=seed, **options)
