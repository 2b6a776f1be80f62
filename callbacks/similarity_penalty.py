"""`SimilarityPenaltyCallback`: installs the core's `SimilarityPenalty` so a batch is not near-copies.

The similarity source is the scheduler's own task graph when it has one (envsched), otherwise a
kNN graph over tool/state/verifier overlap built by the penalty (`k` neighbours per task). Near-copy
groups (`copy_decay`, `copy_threshold`) are the scheduler's own unless set here: envsched discounts
the k-th copy of a group in a batch by default, the baselines do not.
"""

from __future__ import annotations

from typing import Any

from lightning.pytorch import LightningModule, Trainer
from typing_extensions import override

from envsched_lightning.scheduling import Scheduler, SimilarityPenalty
from envsched_lightning.scheduling.decision import decision_summary

from .constraint import ConstraintCallback, datamodule_of


class SimilarityPenaltyCallback(ConstraintCallback):
    key = "callbacks.similarity_penalty"

    def __init__(self, lam: float = 0.3, k: int = 10, scale: str | float = "auto", copy_decay: float | None = None,
                 copy_threshold: float | None = None) -> None:  # fmt: skip
        self.copies = {"copy_decay": copy_decay, "copy_threshold": copy_threshold}
        try:
            self.constraint = SimilarityPenalty(lam=lam, k=k, scale=scale, **{k: v for k, v in self.copies.items() if v is not None})
        except ValueError as err:
            raise ValueError(f"{self.key}: {err}") from err

    @override
    def install(self, scheduler: Scheduler) -> None:
        """As `ConstraintCallback.install`, the near-copy settings left unset taken from the penalty
        the scheduler installed itself (the one this replaces)."""
        own = scheduler.penalty
        if own is not None and own is not self.constraint:
            for name, value in self.copies.items():
                if value is None:
                    setattr(self.constraint, name, getattr(own, name))
        super().install(scheduler)

    @override
    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        rows = datamodule_of(trainer).last_decision.rows
        if rows:
            pl_module.log("sched/penalty_mean", sum(r["penalty"] for r in rows) / len(rows), on_step=True,
                          on_epoch=False, batch_size=len(rows))  # fmt: skip
            repeats = decision_summary(rows).get("copy_repeat_frac")  # the batch repeating a near-copy group in it
            if repeats is not None:
                pl_module.log("sched/copy_repeat_frac", repeats, on_step=True, on_epoch=False, batch_size=len(rows))
