"""`EnvSchedDataModule`: environments in, one scheduled `TaskBatch` per step out, rewards back in.

The protocol per training step:

1. the trainer fetches a batch: rank 0 calls ``scheduler.select(batch_size)`` (so every step is
   chosen with everything learnt so far) and broadcasts the `Decision`; each rank keeps its
   shard ``indices[rank::world_size]``;
2. the module runs the rollouts and calls ``report(groups)`` once with its shard's groups;
3. `report` gathers all ranks' groups and rank 0 calls ``scheduler.update`` exactly once.

With DAPO dynamic sampling (`model.grpo.dynamic_sampling`) a step may go on after its report:
``refill(n)`` asks the scheduler for n more tasks within the same step (a select, broadcast like
the first), and the next `report` hands their groups back (an update). Every round is one
select + update for the scheduler, so it learns from every rollout paid for, also the discarded
ones; `step` counts GRPO steps, and `step_rounds` keeps each round's decision and groups.

A stopped run may abandon the step in progress (`abandon_step`, called before its update): the
scheduler, the step counter and the RNG states go back to what they were before the step's first
select, so a checkpoint taken then holds the last completed step and nothing of the dropped one.

A second `report` for the same selection, or a fetch before the previous step was reported,
raises: either would mean the scheduler is learning from, or choosing with, the wrong step. Everything is
built in `__init__` so a bad config fails before the model is loaded; every DDP process builds
its own copy (the launcher re-runs the script) and only rank 0's scheduler is consulted.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lightning.pytorch import LightningDataModule
from lightning.pytorch.overrides.distributed import UnrepeatedDistributedSampler
from torch.utils.data import DataLoader
from typing_extensions import override

from envsched_lightning.distributed import gather_lists
from envsched_lightning.envs.base import Environment, Task
from envsched_lightning.module import TaskBatch
from envsched_lightning.scheduling import Decision, RolloutGroup, Scheduler, TaskSpec

from .datasets import HeldOutTasks, ScheduledBatches
from .distributed import broadcast_from_zero
from .rng import capture_rng, restore_rng
from .task_pool import build_pool

SchedulerFactory = Callable[..., Scheduler]  # `build_scheduler` partial: (specs=..., seed=...) -> Scheduler


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"data.{name} must be a positive int, got {value!r}")
    return value


class EnvSchedDataModule(LightningDataModule):
    """Serves scheduled tasks for training and held-out tasks per environment for validation."""

    def __init__(
        self,
        envs: Mapping[str, Environment],
        scheduler: SchedulerFactory,
        batch_size: int,
        steps_per_epoch: int,
        eval_per_env: int = 4,
        val_batch_size: int = 16,
        seed: int = 0,
        restore_rng_states: bool = True,
        eval_envs: Mapping[str, Environment] | None = None,
        eval_env_tasks: int = 32,
        total_steps: int | None = None,
    ) -> None:
        super().__init__()
        self.batch_size = _positive("batch_size", batch_size)
        self.steps_per_epoch = _positive("steps_per_epoch", steps_per_epoch)
        self.val_batch_size = _positive("val_batch_size", val_batch_size)
        self.envs = dict(envs)
        self.eval_envs = dict(eval_envs or {})  # evaluated only, never scheduled (held-out environments)
        self.pool = build_pool(self.envs, eval_per_env, self.eval_envs, eval_env_tasks)  # checks both counts
        if self.batch_size > len(self.pool.train):
            raise ValueError(
                f"data.batch_size={self.batch_size} exceeds the training task pool "
                f"({len(self.pool.train)} tasks in {', '.join(self.pool.env_names)})"
            )
        try:
            self.scheduler: Scheduler = scheduler(specs=self.pool.specs, seed=seed)
        except (TypeError, ValueError) as err:
            raise ValueError(f"scheduler: {err}") from err
        self.restore_rng_states = restore_rng_states
        # the run's length in GRPO steps (`steps=` in train.py); None: the trainer's epochs decide
        self.total_steps = None if total_steps is None else _positive("total_steps", total_steps)
        self.step = 0  # training steps whose results reached the scheduler
        self.last_decision: Decision | None = None  # the current step's decision, on every rank
        self.last_groups: list[RolloutGroup] = []  # the last reported step's groups (every round), all ranks
        self.step_rounds: list[tuple[Decision, list[RolloutGroup]]] = []  # the step's rounds: decision, groups
        self._pending: Decision | None = None  # decision served, results not yet reported
        self._refill = False  # the pending decision is a refill of the step already counted
        self._step_start: dict[str, Any] | None = None  # the state before the current step's first select

    @property
    def specs(self) -> tuple[TaskSpec, ...]:
        return self.pool.specs

    # -- the step protocol ----------------------------------------------------------------------
    def next_batch(self) -> TaskBatch:
        """This rank's share of the next scheduled batch."""
        if self._pending is not None:
            raise RuntimeError(
                f"the batch after step {self.step} was requested before that step's results were "
                "reported (is the train loader pre-fetching, or does the module not call report()?)"
            )
        self.last_groups, self.step_rounds = [], []
        self._refill = False
        self._step_start = copy.deepcopy(self._state())  # what `abandon_step` goes back to
        batch = self._serve(self.batch_size)
        self.last_decision = self._pending
        return batch

    def refill(self, n: int) -> TaskBatch:
        """This rank's share of `n` more tasks for the step just reported (dynamic sampling's refill)."""
        if self._pending is not None or not self.step_rounds:
            raise RuntimeError("refill() needs a step whose groups were reported and no batch served since")
        self._refill = True
        return self._serve(min(_positive("refill size", int(n)), len(self.pool.train)))

    def _serve(self, size: int) -> TaskBatch:
        strategy = self.trainer.strategy if self.trainer is not None else None
        rank, world = (strategy.global_rank, strategy.world_size) if strategy is not None else (0, 1)
        decision = self._select(size) if rank == 0 else None
        self._pending = decision = broadcast_from_zero(decision, strategy)
        shard = decision.indices[rank::world]
        return TaskBatch.collate([(i, *self.pool.train[i]) for i in shard])

    def _select(self, size: int) -> Decision:
        indices = self.scheduler.select(size)
        decision = self.scheduler.last_decision()
        return decision if decision is not None else Decision(self.step, indices, [], {})

    def report(self, groups: Sequence[RolloutGroup]) -> None:
        """Hand this rank's groups of the current step back; the scheduler learns once per step."""
        if self._pending is None:
            raise RuntimeError(f"report() called twice for step {self.step - 1}, or before any batch was served")
        everything = gather_lists(list(groups))
        expected = sorted(self._pending.indices)
        if sorted(g.index for g in everything) != expected:
            raise ValueError(
                f"step {self.step}: reported groups for tasks {sorted(g.index for g in everything)}, "
                f"but the batch scheduled {expected}"
            )
        if self.trainer is None or self.trainer.is_global_zero:
            self.scheduler.update(everything)
        self.last_groups = self.last_groups + everything
        self.step_rounds.append((self._pending, everything))
        self._pending = None
        if self._refill:
            return  # a refill belongs to the step already counted
        self.step += 1
        if self.finished() and self.trainer is not None:
            self.trainer.should_stop = True  # every rank reports, so every rank stops; Lightning validates first

    def finished(self) -> bool:
        """True once `total_steps` GRPO steps have been reported (never without `total_steps`)."""
        return self.total_steps is not None and self.step >= self.total_steps

    def warm_start_items(self) -> list[tuple[Task, Environment]]:
        """Training tasks for the module's optional supervised warm start (never the held-out ones)."""
        return list(self.pool.train)

    # -- loaders --------------------------------------------------------------------------------
    @override
    def train_dataloader(self) -> DataLoader:
        # batch_size=None: the dataset already yields whole batches; num_workers=0: the scheduler
        # lives in this process and must see each step's results before choosing the next batch
        return DataLoader(ScheduledBatches(self.next_batch, self.steps_per_epoch, self.finished), batch_size=None, num_workers=0,
                          collate_fn=lambda batch: batch)  # fmt: skip

    @override
    def val_dataloader(self) -> DataLoader:
        """Each held-out task once across the ranks: the module gathers every rank's rewards into one score.

        Lightning's own DistributedSampler would pad the ranks to equal length by evaluating some
        tasks twice; an unrepeated shard (a DistributedSampler, so Lightning keeps it) does not."""
        held_out = HeldOutTasks(self.pool.held_out)
        world = self.trainer.world_size if self.trainer is not None else 1
        sampler = None if world == 1 else UnrepeatedDistributedSampler(
            held_out, num_replicas=world, rank=self.trainer.global_rank, shuffle=False)  # fmt: skip
        return DataLoader(held_out, batch_size=self.val_batch_size, sampler=sampler, shuffle=False,
                          num_workers=0, collate_fn=TaskBatch.collate)  # fmt: skip

    # -- checkpointing --------------------------------------------------------------------------
    def abandon_step(self) -> None:
        """Drop the step in progress: back to the state before its first select (see the module docstring)."""
        if self._step_start is None:
            raise RuntimeError("abandon_step() before any step was served")
        self.load_state_dict(self._step_start)

    def _state(self) -> dict[str, Any]:
        state = {"step": self.step, "scheduler": self.scheduler.state_dict()}
        return state | ({"rng": capture_rng()} if self.restore_rng_states else {})

    @override
    def state_dict(self) -> dict[str, Any]:
        if self._pending is not None:
            raise RuntimeError(f"checkpoint taken inside step {self.step}, between select and report")
        return self._state()

    @override
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.scheduler.load_state_dict(state_dict["scheduler"])
        self.step = int(state_dict["step"])
        self._pending, self.last_decision, self.last_groups, self.step_rounds = None, None, [], []
        self._refill = False
        single = self.trainer is None or self.trainer.world_size == 1
        if self.restore_rng_states and single and "rng" in state_dict:  # ranks must not share one RNG stream
            restore_rng(state_dict["rng"])
