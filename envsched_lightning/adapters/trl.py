"""`EnvSchedGRPOTrainer`: TRL's `GRPOTrainer` with its prompts chosen by an EnvSched scheduler.

Why the choice is made at generation time, not in a sampler: TRL's dataloader is read ahead. The
`Trainer` fetches all gradient-accumulation batches of an optimizer step before running any of
them, and Accelerate prefetches one batch more, so a sampler would pick generation ``k+1`` before
generation ``k`` had been scored, and the scheduler would always choose one generation late.
TRL's own `RepeatSampler` therefore stays the clock (batch shape, epoch length, resume skipping,
per-rank sharding), and the rows it yields are swapped, right where TRL generates, for the rows
the scheduler chooses with every reward seen so far:

- once per generation (every ``steps_per_generation * num_iterations`` micro-steps, however TRL
  reuses the generation), rank 0 calls ``select(generation_batch_size // num_generations)`` and
  broadcasts the indices, so every rank sees the same order;
- the global generation batch is each chosen task's row repeated ``num_generations`` times in a
  row, and each process takes its contiguous slice: TRL's `RepeatSampler` layout, whole groups;
- the same generation's rewards (gathered over all processes by TRL) become one `RolloutGroup`
  per task and reach ``update`` exactly once, on rank 0, before the next ``select``.

Rows are found by their ``env`` and ``task_id`` columns, never by position. The scheduler's state
is saved in every checkpoint and restored on resume.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from accelerate.utils import broadcast_object_list
from datasets import Dataset
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl import GRPOTrainer

from envsched_lightning.scheduling import RolloutGroup, Scheduler

from .mapping import TaskIndex, TaskKey, group_rewards, repeat_layout

ENV_COLUMN, TASK_COLUMN = "env", "task_id"
SCHEDULER_FILE = "envsched_scheduler.pt"


class EnvSchedGRPOTrainer(GRPOTrainer):
    """A `GRPOTrainer` whose training prompts are chosen by `task_scheduler`, with rewards fed back.

    Arguments are `GRPOTrainer`'s, plus `task_scheduler` (any `build_scheduler` scheduler over the
    tasks of `train_dataset`, which must be a map-style `datasets.Dataset` with ``env`` and
    ``task_id`` columns, one row per task) and `scheduler_reward`: the name of the reward function
    whose scores the scheduler learns from; by default the weighted sum TRL trains on. Either must
    lie in [0, 1], as `Scheduler.update` requires.
    """

    def __init__(self, *args: Any, task_scheduler: Scheduler, scheduler_reward: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        dataset = self.train_dataset
        if not isinstance(dataset, Dataset):
            raise ValueError(f"train_dataset must be a map-style datasets.Dataset, got {type(dataset).__name__}")
        missing = [c for c in (ENV_COLUMN, TASK_COLUMN) if c not in dataset.column_names]
        if missing:
            raise ValueError(f"train_dataset has no {missing} column(s); rows are matched to tasks by them")
        if scheduler_reward is not None and scheduler_reward not in self.reward_func_names:
            raise ValueError(f"scheduler_reward={scheduler_reward!r} is not one of {self.reward_func_names}")
        self.task_scheduler = task_scheduler
        self.scheduler_reward = scheduler_reward
        self.task_index = TaskIndex(task_scheduler.specs)
        self._rows = self.task_index.rows(zip(dataset[ENV_COLUMN], dataset[TASK_COLUMN]))
        self.prompts_per_generation = self.args.generation_batch_size // self.num_generations
        if self.prompts_per_generation > task_scheduler.num_tasks:
            raise ValueError(
                f"generation_batch_size // num_generations = {self.prompts_per_generation} prompts per generation, "
                f"but the scheduler has only {task_scheduler.num_tasks} tasks"
            )
        self._pending: list[int] | None = None  # this generation's chosen tasks until its rewards arrive
        self._expected: list[TaskKey] = []  # the (env, task_id) of each local row of that generation
        self.last_groups: list[RolloutGroup] = []  # the last generation's groups, on every rank
        self.generations = 0  # generations whose rewards reached the scheduler

    # -- choosing -----------------------------------------------------------------------------
    def _choose(self) -> list[int]:
        """Rank 0 selects; every rank gets the same indices in the same order."""
        chosen = self.task_scheduler.select(self.prompts_per_generation) if self.accelerator.is_main_process else None
        if self.accelerator.num_processes > 1:
            chosen = broadcast_object_list([chosen], from_process=0)[0]
        return [int(i) for i in chosen]

    def _scheduled_inputs(self, local_size: int) -> list[dict[str, Any]]:
        if self._pending is not None:
            raise RuntimeError("a new generation started before the previous one's rewards reached the scheduler")
        chosen = self._choose()
        local = repeat_layout(chosen, self.num_generations, self.accelerator.num_processes,
                              self.accelerator.process_index)  # fmt: skip
        if len(local) != local_size:
            raise RuntimeError(f"scheduled {len(local)} rows for this process, TRL's batch holds {local_size}")
        self._pending = chosen
        self._expected = [self.task_index.keys[i] for i in local]
        return [self.train_dataset[self._rows[i]] for i in local]

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        # Called once per generation; reused generations (num_iterations, steps_per_generation) never come here.
        if self.model.training:
            inputs = self._scheduled_inputs(len(inputs))
        return super()._generate_and_score_completions(inputs)

    # -- feeding back -------------------------------------------------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        if self._pending is None:  # evaluation, or a generation the scheduler did not choose
            return rewards_per_func
        chosen, expected, self._pending = self._pending, self._expected, None  # cleared first: at most once
        scored = [(row[ENV_COLUMN], row[TASK_COLUMN]) for row in inputs]
        if scored != expected:
            raise RuntimeError("the rows TRL scored are not the rows the scheduler chose")
        g = self.num_generations
        groups = group_rewards([c for c in chosen for _ in range(g)], self._scheduler_rewards(rewards_per_func),
                               [j for j in range(len(chosen)) for _ in range(g)])  # fmt: skip
        if self.accelerator.is_main_process:
            self.task_scheduler.update(groups)
        self.last_groups = groups
        self.generations += 1
        return rewards_per_func

    def _scheduler_rewards(self, rewards_per_func: torch.Tensor) -> list[float]:
        """Per-rollout rewards over all processes: the named function's, or TRL's weighted sum."""
        if self.scheduler_reward is not None:
            rewards = rewards_per_func[:, self.reward_func_names.index(self.scheduler_reward)]
        else:
            weights = self.reward_weights.to(rewards_per_func.device)
            rewards = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
            rewards[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan  # unscorable: the core rejects it
        return rewards.float().cpu().tolist()

    # -- checkpointing ------------------------------------------------------------------------
    def _save_checkpoint(self, model, trial) -> None:
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
            torch.save(self.task_scheduler.state_dict(), os.path.join(folder, SCHEDULER_FILE))

    def _load_optimizer_and_scheduler(self, checkpoint) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        path = os.path.join(checkpoint, SCHEDULER_FILE) if checkpoint is not None else None
        if path is not None and os.path.exists(path):
            self.task_scheduler.load_state_dict(torch.load(path, weights_only=False))  # our own file
