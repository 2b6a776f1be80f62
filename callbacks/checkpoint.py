"""Checkpointing glue: what is saved when (`GRPOModelCheckpoint`) and how files are written and read
(`SafeCheckpointIO`, see `envsched_lightning.checkpoints`).

Lightning's `ModelCheckpoint` skips a save when `trainer.global_step` (optimiser steps) has not moved
since the last one; a GRPO step whose groups all have equal rewards makes no optimiser step, yet the
scheduler's history moved on. A run whose last steps were all zero-variance would otherwise end with
a checkpoint from many steps back, and a resume would replay them. Here the counter is the
DataModule's GRPO step, and the run's end always leaves `last.ckpt` at its final step.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.plugins.io import TorchCheckpointIO
from typing_extensions import override

from envsched_lightning.checkpoints import read_checkpoint, write_state


class SafeCheckpointIO(TorchCheckpointIO):
    """Atomic saves in the target's folder; loads with `weights_only=True` (numpy packed as tensors)."""

    @override
    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any = None) -> None:
        if storage_options is not None:
            raise TypeError(f"SafeCheckpointIO takes no storage_options, got {storage_options!r}")
        write_state(checkpoint, path)

    @override
    def load_checkpoint(self, path: Any, map_location: Any = None, weights_only: bool | None = None) -> dict[str, Any]:
        return read_checkpoint(str(path))


def grpo_step(trainer: pl.Trainer) -> int:
    """The run's GRPO step (the DataModule's counter), or the optimiser step without one."""
    step = getattr(trainer.datamodule, "step", None)
    return int(step) if isinstance(step, int) else trainer.global_step


class GRPOModelCheckpoint(ModelCheckpoint):
    """`ModelCheckpoint` counting GRPO steps, so steps without an update are saved too, and the run's
    last step always is."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._last_grpo_step_saved = 0  # nothing to save before the first step

    @override
    def _should_skip_saving_checkpoint(self, trainer: pl.Trainer) -> bool:
        from lightning.pytorch.trainer.states import TrainerFn

        return (bool(trainer.fast_dev_run) or trainer.state.fn != TrainerFn.FITTING or trainer.sanity_checking
                or self._last_grpo_step_saved == grpo_step(trainer))  # fmt: skip

    @override
    def _save_checkpoint(self, trainer: pl.Trainer, filepath: str) -> None:
        super()._save_checkpoint(trainer, filepath)
        self._last_grpo_step_saved = grpo_step(trainer)

    @override
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """A run that stops between evaluation intervals still ends with `last.ckpt` at its last step."""
        if self.save_last and not self._should_skip_saving_checkpoint(trainer):
            self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))
