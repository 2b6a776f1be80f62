"""Shared plumbing for callbacks that hang a core constraint object on the DataModule's scheduler."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer
from typing_extensions import override

from envsched_lightning.scheduling import EnvQuota, Scheduler, SimilarityPenalty


def datamodule_of(trainer: Trainer) -> Any:
    """The trainer's DataModule, which must follow the `EnvSchedDataModule` protocol."""
    dm = trainer.datamodule
    if dm is None or not hasattr(dm, "scheduler"):
        raise RuntimeError("scheduling callbacks need a DataModule with a `scheduler` (EnvSchedDataModule)")
    return dm


class ConstraintCallback(Callback):
    """Installs `self.constraint` on the scheduler; the scheduler does the rest."""

    key: str = "callbacks"  # the config key named in errors
    constraint: EnvQuota | SimilarityPenalty

    def install(self, scheduler: Scheduler) -> None:
        """Bind and install; idempotent, so an early call (to fail before the model loads) is harmless."""
        if scheduler.quota is self.constraint or scheduler.penalty is self.constraint:
            return
        try:
            scheduler.install(self.constraint)
        except ValueError as err:
            raise ValueError(f"{self.key}: {err}") from err

    @override
    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        self.install(datamodule_of(trainer).scheduler)


def install_constraints(callbacks: Iterable[Callback], scheduler: Scheduler) -> None:
    """Install every constraint callback's object now, so infeasible settings fail before training."""
    for cb in callbacks:
        if isinstance(cb, ConstraintCallback):
            cb.install(scheduler)
