"""A callback that sends this process a signal at a chosen work point: a stop request that arrives
mid-step (or mid-warm-start) every time, for tests of `callbacks.stop.StopOnSignal`. It hooks in
after the stop callback, so the signal arrives just after a work point was checked, as a signal from
outside mostly does."""

from __future__ import annotations

import os
import signal

from lightning.pytorch import Callback, LightningModule, Trainer

from envsched_lightning.stopping import WorkProgress


class SignalAtWorkPoint(Callback):
    """Sends `signum` once, at the first `phase` work point after `after_step` GRPO steps were reported."""

    def __init__(self, phase: str, after_step: int = 0, signum: int = int(signal.SIGTERM)) -> None:
        self.phase, self.after_step, self.signum = phase, after_step, signum
        self.sent_at: int | None = None  # the DataModule's step when it was sent

    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        self._trainer = trainer
        pl_module.work_hooks.append(self._maybe_send)  # after the stop callback's check: the signal comes between points

    def _maybe_send(self, work: WorkProgress) -> None:
        step = self._trainer.datamodule.step
        if self.sent_at is None and work.phase == self.phase and step >= self.after_step:
            self.sent_at = step
            os.kill(os.getpid(), self.signum)
