"""`EnvQuotaCallback`: per-environment min/max batch shares, installed on the scheduler and checked.

The quota itself (`envsched_lightning.scheduling.EnvQuota`) decides; this callback only installs
it and then refuses to train on a batch that breaks a cap unless the quota recorded a relaxation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lightning.pytorch import LightningModule, Trainer
from typing_extensions import override

from envsched_lightning.scheduling import EnvQuota

from .constraint import ConstraintCallback, datamodule_of


class EnvQuotaCallback(ConstraintCallback):
    key = "callbacks.env_quota"

    def __init__(
        self,
        min_share: float = 0.0,
        max_share: float | None = None,
        floor: float = 0.2,
        starvation_steps: int = 4,
        per_env: Mapping[str, Mapping[str, float]] | None = None,
    ) -> None:
        try:
            self.constraint = EnvQuota(min_share, max_share, floor, starvation_steps, per_env)
        except ValueError as err:
            raise ValueError(f"{self.key}: {err}") from err
        self.checked = 0
        self.relaxed = 0

    @override
    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        dm = datamodule_of(trainer)
        decision = dm.last_decision
        if dm.scheduler.quota is not self.constraint or not decision.rows:
            return  # another quota replaced this one, or the scheduler records no decisions
        broken = self.constraint.violations(decision.env_counts)
        if broken and not decision.relaxations:
            raise AssertionError(f"step {decision.step}: batch breaks the environment quota: {'; '.join(broken)}")
        self.checked += 1
        self.relaxed += bool(decision.relaxations)
        pl_module.log("sched/quota_relaxations", float(len(decision.relaxations)), on_step=True, on_epoch=False,
                      batch_size=len(decision.indices))  # fmt: skip

    @override
    def state_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "relaxed": self.relaxed}

    @override
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.checked, self.relaxed = int(state_dict["checked"]), int(state_dict["relaxed"])
