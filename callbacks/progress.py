"""One console line per GRPO step, the warm start announced, and a summary when the run ends.

Lightning's progress bar shows little of a GRPO run (and is off in the CPU trainer config); this
prints what a user watches for: reward, zero-variance share, rollouts and seconds per step, the
held-out score when evaluated, and at the end the first and last rewards. Rank 0 only.
"""

from __future__ import annotations

import time
from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer
from typing_extensions import override


def _value(metrics: dict[str, Any], key: str) -> float | None:
    v = metrics.get(key)
    return None if v is None else float(v)


class ProgressPrinter(Callback):
    """Prints a line every `every` steps; `every=0` prints only the start and the summary."""

    def __init__(self, every: int = 1) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 0:
            raise ValueError(f"callbacks.progress.every must be an int >= 0, got {every!r}")
        self.every = every
        self.rewards: list[float] = []
        self.scores: list[float] = []
        self._t0 = 0.0
        self._step_t0 = 0.0

    def _say(self, trainer: Trainer, text: str) -> None:
        if trainer.is_global_zero:
            print(text, flush=True)

    @override
    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._t0 = time.perf_counter()
        warm = getattr(getattr(pl_module, "warm", None), "steps", 0)
        if warm and not getattr(pl_module, "warm_started", False):
            self._say(trainer, f"warm start: {warm} supervised steps on scripted episodes ...")

    @override
    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        dm = trainer.datamodule
        steps = getattr(dm, "steps_per_epoch", None)
        total = f"{steps * trainer.max_epochs} GRPO steps" if steps and trainer.max_epochs else "GRPO steps"
        self._say(trainer, f"training: {total} ({time.perf_counter() - self._t0:.0f} s so far)")

    @override
    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        self._step_t0 = time.perf_counter()

    @override
    def on_train_batch_end(self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int) -> None:
        m = trainer.callback_metrics
        reward = _value(m, "rollout/reward_mean")
        if reward is not None:
            self.rewards.append(reward)
        step = len(self.rewards)
        if not self.every or step % self.every or reward is None:
            return
        zero = _value(m, "rollout/zero_var_frac")
        rollouts = _value(m, "rollout/num_rollouts")
        skipped = _value(m, "train/skipped")
        self._say(trainer, f"step {step}: reward {reward:.3f}, zero-variance groups {zero or 0:.0%}, "
                           f"{int(rollouts or 0)} rollouts, {time.perf_counter() - self._step_t0:.1f} s"
                           + (" (no update: every group zero-variance)" if skipped else ""))  # fmt: skip

    @override
    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:  # after the module logged
        score = _value(trainer.callback_metrics, "eval/score")
        if score is not None and not trainer.sanity_checking:
            self.scores.append(score)
            self._say(trainer, f"eval after step {len(self.rewards)}: held-out score {score:.3f}")

    @override
    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not self.rewards:
            return
        k = max(1, min(5, len(self.rewards) // 4))
        first, last = sum(self.rewards[:k]) / k, sum(self.rewards[-k:]) / k
        line = (f"done: {len(self.rewards)} steps in {time.perf_counter() - self._t0:.0f} s; "
                f"reward {first:.3f} -> {last:.3f} (mean of the first and last {k})")  # fmt: skip
        if self.scores:
            line += f"; held-out score {self.scores[0]:.3f} -> {self.scores[-1]:.3f}"
        self._say(trainer, line)
