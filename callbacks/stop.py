"""SIGTERM / SIGINT stop a run within seconds and leave a checkpoint of its last completed GRPO step.

Lightning's own SIGTERM handling (its signal connector) only sets `trainer.received_sigterm`, which
the loops look at after a whole training batch: a GRPO step of minutes runs to its end first, the
run then exits with status 0 and no checkpoint, and SIGINT is left to Python's KeyboardInterrupt.
Here the first signal stops the run at once where the module says its work may be dropped
(`GRPOModule.droppable`: a step before its first optimiser step, an evaluation, the warm start),
and anywhere before this process completed a step (nothing to save yet); else it sets a flag that
the module's next work point raises on (`work_hooks`). The step in progress is abandoned (the
DataModule takes back what its scheduler heard of it; no optimiser step was taken), and the state
of the last completed step is saved as `last.ckpt` next to the run's other checkpoints. train.py
prints where the run stopped and how to resume, and exits with 128 + the signal's number. A second
signal exits at once (`envsched_lightning.stopping.StopSignal`).

Under DDP the work points leave the stop to Lightning's step boundary (its check is agreed across
ranks; a rank dropping its step alone would leave the others waiting in a collective), and the
checkpoint is written there.
"""

from __future__ import annotations

import shlex
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.utilities.exceptions import SIGTERMException
from typing_extensions import override

from callbacks.checkpoint import GRPOModelCheckpoint, grpo_step
from envsched_lightning.stopping import StopRequested, StopSignal, WorkProgress, exit_status, signal_name


class StopReport(NamedTuple):
    """What a stopped run tells its user."""

    signum: int
    where: str  # e.g. "in GRPO step 4 (rollouts 12/32)"
    step: int  # the last completed GRPO step
    checkpoint: str | None  # resume from here; None: no GRPO step was completed


class StopOnSignal(Callback):
    """Turns SIGTERM / SIGINT into a prompt stop with a resumable checkpoint (see the module docstring)."""

    def __init__(self) -> None:
        self.signal = StopSignal()
        self.report: StopReport | None = None
        self._in_step = False
        self._last: WorkProgress | None = None  # the latest work point: where the run was when it stopped
        self._first_step = 0  # the GRPO step this process started from (a resumed run's checkpoint)
        self._completed = False  # this process completed a GRPO step: a stop has something to save

    @override
    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        self.signal.install()  # before on_fit_start: the warm start runs there
        self.signal.at_once = lambda: trainer.world_size == 1 and (not self._completed or pl_module.droppable)
        hooks = getattr(pl_module, "work_hooks", None)
        if hooks is not None and self._at_work_point not in hooks:
            hooks.append(self._at_work_point)
        self._trainer = trainer

    def _at_work_point(self, progress: WorkProgress) -> None:
        self._last = progress
        if self._trainer.world_size == 1:
            self.signal.check(progress)

    @override
    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        self._in_step = True

    @override
    def on_train_batch_end(self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int) -> None:
        self._in_step = False
        self._last = None
        self._completed = True  # from now on a stop saves the last completed step

    @override
    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._first_step = grpo_step(trainer)  # a resumed run's checkpoint is restored by now

    @override
    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._last = None

    @override
    def on_exception(self, trainer: Trainer, pl_module: LightningModule, exception: BaseException) -> None:
        if not isinstance(exception, (StopRequested, SIGTERMException)):
            return
        signum = exception.signum if isinstance(exception, StopRequested) else self.signal.requested or signal.SIGTERM
        if self._in_step and callable(getattr(trainer.datamodule, "abandon_step", None)):
            trainer.datamodule.abandon_step()  # nothing of the dropped step stays in the scheduler
        step = grpo_step(trainer)
        self.report = StopReport(int(signum), self._where(step), step, self._save(trainer, step))

    def _where(self, step: int) -> str:
        last = self._last
        if self._in_step:
            return f"in GRPO step {step + 1}" + (f" ({last.phase} {last.done}/{last.total})" if last else "")
        if last is not None and last.phase == "warm start":
            return f"in the warm start (step {last.done}/{last.total})"
        if last is not None and last.phase == "eval":
            return f"in the evaluation {f'after step {step}' if step else 'before training'} ({last.done}/{last.total} tasks)"
        return f"after GRPO step {step}"

    def _save(self, trainer: Trainer, step: int) -> str | None:
        """`last.ckpt` at the last completed step; the checkpoint the run started from if it made none."""
        if step == self._first_step:
            return str(trainer.ckpt_path) if trainer.ckpt_path else None
        saver = next((cb for cb in trainer.checkpoint_callbacks if isinstance(cb, GRPOModelCheckpoint)), None)
        folder = Path(saver.dirpath) if saver is not None and saver.dirpath else Path(trainer.default_root_dir) / "checkpoints"
        path = folder / "last.ckpt"
        trainer.save_checkpoint(path, weights_only=False)  # the whole state, as last.ckpt always is
        return str(path)

    @override
    def teardown(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        self.signal.restore()
        hooks = getattr(pl_module, "work_hooks", None)
        if hooks is not None and self._at_work_point in hooks:
            hooks.remove(self._at_work_point)


def stop_message(report: StopReport, command: str) -> str:
    """The line a stopped run ends with: where, the checkpoint, the command that resumes it."""
    name = signal_name(report.signum)
    if report.checkpoint is None:
        return (f"stopped by {name} {report.where}: no GRPO step was completed, nothing to resume; "
                f"run `{command}` again to start over")  # fmt: skip
    return (f"stopped by {name} {report.where}; last completed GRPO step {report.step}, checkpoint "
            f"{report.checkpoint}; resume with: {command} ckpt_path={report.checkpoint}")  # fmt: skip


def resume_command() -> str:
    """This run's command line without any `ckpt_path=` (the stop message appends the new one)."""
    from hydra.core.hydra_config import HydraConfig

    overrides = list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else sys.argv[1:]
    kept = [o for o in overrides if not o.lstrip("+~").startswith("ckpt_path=")]
    return " ".join(["python", "train.py", *map(shlex.quote, kept)])


@contextmanager
def stop_exits(trainer: Trainer) -> Iterator[None]:
    """Around `trainer.fit`: a fit stopped by a signal (`StopOnSignal`) prints its one-line report and exits 128 + signal."""
    stoppers = [cb for cb in trainer.callbacks if isinstance(cb, StopOnSignal)]
    try:
        yield
    except (StopRequested, SIGTERMException):
        reports = [cb.report for cb in stoppers if cb.report is not None]
        if not reports:
            raise
        if trainer.is_global_zero:
            print(stop_message(reports[0], resume_command()), flush=True)
        raise SystemExit(exit_status(reports[0].signum)) from None
    finally:  # Lightning puts the handlers it found back after a failed fit: the process's own come back here
        for cb in stoppers:
            cb.signal.restore()
