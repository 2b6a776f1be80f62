"""`SimilarityPenaltyCallback`: installs the core's `SimilarityPenalty` so a batch is not near-copies.

The similarity source is the scheduler's own task graph when it has one (envsched), otherwise a
kNN graph over tool/state/verifier overlap built by the penalty (`k` neighbours per task).
"""

from __future__ import annotations

from typing import Any

from lightning.pytorch import LightningModule, Trainer
from typing_extensions import override

from envsched_lightning.scheduling import SimilarityPenalty

from .constraint import ConstraintCallback, datamodule_of


class SimilarityPenaltyCallback(ConstraintCallback):
    key = "callbacks.similarity_penalty"

    def __init__(self, lam: float = 0.3, k: int = 10, scale: str | float = "auto") -> None:
        try:
            self.constraint = SimilarityPenalty(lam=lam, k=k, scale=scale)
        except ValueError as err:
            raise ValueError(f"{self.key}: {err}") from err

    @override
    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        rows = datamodule_of(trainer).last_decision.rows
        if rows:
            pl_module.log("sched/penalty_mean", sum(r["penalty"] for r in rows) / len(rows), on_step=True,
                          on_epoch=False, batch_size=len(rows))  # fmt: skip
