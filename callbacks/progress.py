"""One console line per GRPO step, the warm start announced, and a summary when the run ends.

Lightning's progress bar shows little of a GRPO run (and is off in the CPU trainer config); this
prints what a user watches for: step k of n, reward, zero-variance share, rollouts, seconds and the
time left, the held-out score when evaluated, and at the end the first and last rewards and
held-out scores, overall and per environment. Rank 0 only.

Long phases (the warm start, an evaluation, a step's rollouts) also print a heartbeat at most every
`heartbeat_s` seconds from the module's work points (`GRPOModule.work_hooks`): what is done, the
time so far and, where the units take similar time, the time left. A phase shorter than that
prints nothing extra.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer
from typing_extensions import override

from callbacks.heartbeat import Heartbeat, clock as _clock
from envsched_lightning.evaluation import paired_change
from envsched_lightning.stopping import WorkProgress

REWARD, SCORE = "rollout/reward_mean", "eval/score"


def _value(metrics: Mapping[str, Any], key: str) -> float | None:
    v = metrics.get(key)
    return None if v is None else float(v)


def _per_env(metrics: Mapping[str, Any], prefix: str) -> dict[str, float]:
    return {k[len(prefix) + 1 :]: float(v) for k, v in metrics.items() if k.startswith(prefix + "/")}


def _first_last(values: list[float], k: int) -> str:
    k = max(1, min(k, len(values)))
    return f"{sum(values[:k]) / k:.3f} -> {sum(values[-k:]) / k:.3f}"


class ProgressPrinter(Callback):
    """Prints a line every `every` steps (`every=0`: only the start and the summary), and a heartbeat
    in long phases at most every `heartbeat_s` seconds (0: none)."""

    def __init__(self, every: int = 1, heartbeat_s: float = 20.0) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 0:
            raise ValueError(f"callbacks.progress.every must be an int >= 0, got {every!r}")
        if isinstance(heartbeat_s, bool) or not isinstance(heartbeat_s, (int, float)) or not heartbeat_s >= 0:
            raise ValueError(f"callbacks.progress.heartbeat_s must be a number of seconds >= 0, got {heartbeat_s!r}")
        self.every = every
        self.heartbeat_s = float(heartbeat_s)
        self._trainer: Trainer | None = None
        self._beat = Heartbeat(self.heartbeat_s, self._say_rank_zero, self._heartbeat_line)
        self.rewards: list[float] = []  # this process's steps
        self.first_step = 0  # steps made before this process (a resumed run's checkpoint)
        self.scores: list[float] = []
        self.task_scores: list[dict[str, float]] = []  # per evaluation in `scores`: task key -> reward
        self.env_rewards: dict[str, list[float]] = defaultdict(list)
        self.env_scores: dict[str, list[float]] = defaultdict(list)
        self.total: int | None = None
        self._t0 = self._train_t0 = self._step_t0 = 0.0

    def _say(self, trainer: Trainer, text: str) -> None:
        if trainer.is_global_zero:
            print(text, flush=True)
            self._beat.printed()

    def _say_rank_zero(self, text: str) -> None:
        if self._trainer is not None:
            self._say(self._trainer, text)

    @override
    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        hooks = getattr(pl_module, "work_hooks", None)
        if self.heartbeat_s and hooks is not None and self._beat.report not in hooks:
            hooks.append(self._beat.report)
        self._trainer = trainer

    @override
    def teardown(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        hooks = getattr(pl_module, "work_hooks", None)
        if hooks is not None and self._beat.report in hooks:
            hooks.remove(self._beat.report)
        self._beat.close()

    def _heartbeat_line(self, work: WorkProgress, so_far: float, left: float | None) -> str:
        tail = f", {_clock(so_far)}" + (f", ~{_clock(left)} left" if left is not None else "")
        if work.phase == "warm start":
            return f"warm start: {work.done}/{work.total} steps" + (f", {work.detail}" if work.detail else "") + tail
        turn = f" ({work.detail})" if work.detail else ""  # the turn the agent loop is at
        if work.phase == "eval":
            return f"{self._eval_label(self._trainer)}: {work.done}/{work.total} tasks{turn}" + tail
        # a GRPO step: its episodes finish turn by turn, unevenly, so no time left is guessed
        step = f"step {self.first_step + len(self.rewards) + 1}" + (f"/{self.total}" if self.total else "")
        what = "updating" if work.phase == "update" else f"{work.done}/{work.total} rollouts finished{turn}"
        return f"{step}: {what}, {_clock(so_far)}"

    def _eval_label(self, trainer: Trainer) -> str:
        if trainer.sanity_checking:
            resumed_at = int(getattr(getattr(trainer, "datamodule", None), "step", 0) or 0)
            return f"eval on resuming at step {resumed_at}" if resumed_at else "eval before training"
        return f"eval after step {self.first_step + len(self.rewards)}"

    @override
    def on_validation_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._beat.begin()

    @override
    def on_validation_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._beat.end()

    @override
    def on_exception(self, trainer: Trainer, pl_module: LightningModule, exception: BaseException) -> None:
        self._beat.end()
        self._beat.close()

    @override
    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._t0 = time.perf_counter()
        self._beat.begin()  # the warm start, if any, runs next (the module's on_fit_start)
        protocol = getattr(pl_module, "tool_protocol", None)
        if protocol is not None:
            self._say(trainer, f"tool calls: {protocol.name} ({protocol.how})")
        warm = getattr(getattr(pl_module, "warm", None), "steps", 0)
        if warm and not getattr(pl_module, "warm_started", False):
            self._say(trainer, f"warm start: {warm} supervised steps on scripted episodes ...")

    @override
    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._beat.end()  # the warm start and the evaluation before training are over
        dm = trainer.datamodule
        self.total = getattr(dm, "total_steps", None)
        if self.total is None and getattr(dm, "steps_per_epoch", None) and trainer.max_epochs:
            self.total = dm.steps_per_epoch * trainer.max_epochs
        done = self.first_step = getattr(dm, "step", 0)  # step numbers stay those of the whole run
        warm = getattr(pl_module, "warm_losses", None)
        if warm:
            self._say(trainer, f"warm start done: SFT loss {warm[0]:.3f} -> {warm[-1]:.3f}")
        self._train_t0 = time.perf_counter()
        plan = f"{self.total} GRPO steps" if self.total else "GRPO steps"
        self._say(trainer, f"training: {plan}" + (f" from step {done}" if done else "")
                  + f", evaluating every {dm.steps_per_epoch} ({time.perf_counter() - self._t0:.0f} s so far)")  # fmt: skip

    @override
    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        self._step_t0 = time.perf_counter()
        self._beat.begin()

    @override
    def on_train_batch_end(self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int) -> None:
        self._beat.end()
        m = trainer.callback_metrics
        reward = _value(m, REWARD)
        if reward is None:
            return
        self.rewards.append(reward)
        for env, r in _per_env(m, REWARD).items():
            self.env_rewards[env].append(r)
        step = self.first_step + len(self.rewards)
        if not self.every or step % self.every:
            return
        seconds = time.perf_counter() - self._step_t0
        left = (self.total - step) * (time.perf_counter() - self._train_t0) / len(self.rewards) if self.total else None
        zero, rollouts = _value(m, "rollout/zero_var_frac") or 0.0, int(_value(m, "rollout/num_rollouts") or 0)
        line = (f"step {step}" + (f"/{self.total}" if self.total else "")
                + f" | reward {reward:.3f} | zero-variance groups {zero:.0%} | {rollouts} rollouts | {seconds:.1f} s"
                + (f" | {_clock(left)} left" if left is not None else ""))  # fmt: skip
        if _value(m, "train/skipped"):
            line += " | no update: every group zero-variance"
        self._say(trainer, line)

    @override
    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:  # after the module logged
        m = trainer.callback_metrics
        score = _value(m, SCORE)
        # a sanity check over every held-out task (num_sanity_val_steps=-1) is the score before training
        whole = trainer.sanity_checking and trainer.num_sanity_val_steps == float("inf") and not self.rewards
        if score is None or (trainer.sanity_checking and not whole):
            return
        self.scores.append(score)
        self.task_scores.append(dict(getattr(pl_module, "last_eval", {}) or {}))
        per_env = _per_env(m, SCORE)
        for env, s in per_env.items():
            self.env_scores[env].append(s)
        detail = ", ".join(f"{env} {s:.2f}" for env, s in sorted(per_env.items()))
        resumed_at = int(getattr(getattr(trainer, "datamodule", None), "step", 0) or 0)  # a resumed run's steps so far
        before = f"on resuming at step {resumed_at}" if resumed_at else "before training"
        when = before if whole else f"after step {self.first_step + len(self.rewards)}"
        self._say(trainer, f"eval {when}: held-out score {score:.3f} ({detail})")

    @override
    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        rewards = self.rewards
        if not rewards:
            return
        k = max(1, min(5, len(rewards) // 4))  # a few steps each side: one step's reward is noisy
        lines = [f"done: {len(rewards)} GRPO steps in {_clock(time.perf_counter() - self._t0)}; "
                 f"reward {_first_last(rewards, k)} (mean of the first and last {k})"
                 + (f"; held-out score {self.scores[0]:.3f} -> {self.scores[-1]:.3f}" if self.scores else "")]  # fmt: skip
        change = paired_change(self.task_scores[0], self.task_scores[-1]) if len(self.task_scores) > 1 else None
        if change is not None:
            lines[0] += f" ({change.describe()})"
        envs = sorted(set(self.env_rewards) | set(self.env_scores))
        width = max(map(len, envs), default=0)  # one column, however long the names
        for env in envs:
            r, s = self.env_rewards.get(env, []), self.env_scores.get(env, [])
            lines.append(f"  {env:<{width}}  reward {_first_last(r, k) if r else '-':<14}"
                         + (f"  held-out {s[0]:.3f} -> {s[-1]:.3f}" if s else ""))  # fmt: skip
        self._say(trainer, "\n".join(lines))
