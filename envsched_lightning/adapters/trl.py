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

Rows are found by their ``env`` and ``task_id`` columns, never by position. Rewards are mapped
from the declared `reward_range` onto [0, 1]; a value outside it is clipped and counted, and an
unscored rollout (NaN) is left out of its group, so a reward never stops a run mid-step. Each
generation's ``sched/`` metrics (`scheduler_metrics`) go through TRL's own metric lists, so they
reach ``trainer.state.log_history`` and every ``report_to`` logger. The scheduler's state is
saved in every checkpoint (as rank 0 holds it, on every node that saves) and restored on resume.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from typing import Any

import torch
from accelerate.utils import broadcast_object_list, gather
from datasets import Dataset
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl import GRPOTrainer

from envsched_lightning.checkpoints import read_state, write_state
from envsched_lightning.scheduling import Decision, RolloutGroup, Scheduler

from .mapping import RewardRange, TaskIndex, TaskKey, group_rewards, repeat_layout
from .metrics import scheduler_metrics
from .specs import warn_if_unstructured

logger = logging.getLogger(__name__)

ENV_COLUMN, TASK_COLUMN = "env", "task_id"
SCHEDULER_FILE = "envsched_scheduler.pt"


class EnvSchedGRPOTrainer(GRPOTrainer):
    """A `GRPOTrainer` whose training prompts are chosen by `task_scheduler`, with rewards fed back.

    Arguments are `GRPOTrainer`'s, plus:

    - `task_scheduler`: any `build_scheduler` scheduler over the tasks of `train_dataset`, which
      must be a map-style `datasets.Dataset` with ``env`` and ``task_id`` columns, one row per task;
    - `scheduler_reward`: the name of the reward function whose scores the scheduler learns from;
      by default the weighted sum TRL trains on;
    - `reward_range`: ``(lo, hi)`` of that reward, mapped linearly onto [0, 1]. By default each
      reward function is assumed to lie in [0, 1]: ``(0, 1)`` for `scheduler_reward`, and for the
      weighted sum ``(sum of negative weights, sum of positive weights)``, e.g. ``(0, 2)`` for two
      functions at weight 1. Checked here; at run time a value outside it is clipped, counted in
      ``sched/reward_clipped_frac`` and warned about once.
    """

    def __init__(self, *args: Any, task_scheduler: Scheduler, scheduler_reward: str | None = None,
                 reward_range: RewardRange | Sequence[float] | None = None, **kwargs: Any) -> None:
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
        self.reward_range = self._reward_range(reward_range)
        self.task_index = TaskIndex(task_scheduler.specs)
        self._rows = self.task_index.rows(zip(dataset[ENV_COLUMN], dataset[TASK_COLUMN]))
        self.prompts_per_generation = self.args.generation_batch_size // self.num_generations
        if self.prompts_per_generation > task_scheduler.num_tasks:
            raise ValueError(
                f"generation_batch_size // num_generations = {self.prompts_per_generation} prompts per generation, "
                f"but the scheduler has only {task_scheduler.num_tasks} tasks"
            )
        if getattr(task_scheduler, "graph", None) is not None:  # a graph scheduler reads the specs' structure
            warn_if_unstructured(task_scheduler.specs)
        self._pending: list[int] | None = None  # this generation's chosen tasks until its rewards arrive
        self._decision: Decision | None = None  # and why rank 0's scheduler chose them (on every rank)
        self._expected: list[TaskKey] = []  # the (env, task_id) of each local row of that generation
        self.last_groups: list[RolloutGroup] = []  # the last generation's groups, on every rank
        self.generations = 0  # generations whose rewards reached the scheduler
        self.rewards_clipped = 0  # rollouts whose reward lay outside reward_range, over the run
        self.rewards_unscored = 0  # rollouts no reward function scored (NaN), left out of their group

    def _reward_range(self, declared: RewardRange | Sequence[float] | None) -> RewardRange:
        if declared is not None:
            return RewardRange.of(declared)
        if self.scheduler_reward is not None:
            return RewardRange()
        weights = self.reward_weights.tolist()
        lo, hi = sum(min(w, 0.0) for w in weights), sum(max(w, 0.0) for w in weights)
        if not hi > lo:
            raise ValueError(f"reward weights {weights} give no range to assume; pass reward_range=(lo, hi)")
        return RewardRange(lo, hi)

    # -- choosing -----------------------------------------------------------------------------
    def _choose(self) -> list[int]:
        """Rank 0 selects; every rank gets the same indices in the same order, and the decision."""
        choice = None
        if self.accelerator.is_main_process:
            chosen = self.task_scheduler.select(self.prompts_per_generation)
            choice = ([int(i) for i in chosen], self.task_scheduler.last_decision())
        if self.accelerator.num_processes > 1:
            choice = broadcast_object_list([choice], from_process=0)[0]
        chosen, self._decision = choice
        return chosen

    def _scheduled_inputs(self, local_size: int) -> list[dict[str, Any]]:
        if self._pending is not None:
            raise RuntimeError("a new generation started before the previous one's rewards reached the scheduler")
        chosen = self._choose()
        local = repeat_layout(chosen, self.num_generations, self.accelerator.num_processes,
                              self.accelerator.process_index)  # fmt: skip
        if len(local) != local_size:
            raise RuntimeError(f"scheduled {len(local)} rows for this process, TRL's batch holds {local_size}")
        self._pending = chosen
        self._expected = [self.task_index.key(i) for i in local]
        return [self.train_dataset[int(self._rows[i])] for i in local]

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
        local = torch.tensor([len(ids) for ids in completion_ids_list], dtype=torch.float32,
                             device=rewards_per_func.device)  # fmt: skip
        lengths = gather(local).cpu().tolist()  # [global batch] completion tokens, in TRL's process order
        rewards, clipped = self.reward_range.to_unit(self._scheduler_rewards(rewards_per_func))
        g, n = self.num_generations, len(rewards)
        tasks, group_ids = [c for c in chosen for _ in range(g)], [j for j in range(len(chosen)) for _ in range(g)]
        keep = [r for r in range(n) if not math.isnan(rewards[r])]  # unscored rollouts: no evidence either way

        def kept(seq: list) -> list:
            return [seq[r] for r in keep]

        groups = group_rewards(kept(tasks), kept(rewards), kept(group_ids), kept(lengths)) if keep else []
        if groups and self.accelerator.is_main_process:
            self.task_scheduler.update(groups)
        self.last_groups = groups
        self.generations += bool(groups)
        self._note_bad_rewards(clipped, n - len(keep), n)
        metrics = scheduler_metrics(self._decision, groups, self.task_scheduler.specs, self.task_scheduler.env_names)
        metrics |= {"sched/reward_clipped_frac": clipped / n, "sched/unscored_frac": (n - len(keep)) / n}
        for key, value in metrics.items():  # averaged and logged by GRPOTrainer.log with TRL's own metrics
            self._metrics["train"][key].append(value)
        return rewards_per_func

    def _scheduler_rewards(self, rewards_per_func: torch.Tensor) -> list[float]:
        """Per-rollout rewards over all processes: the named function's, or TRL's weighted sum."""
        if self.scheduler_reward is not None:
            rewards = rewards_per_func[:, self.reward_func_names.index(self.scheduler_reward)]
        else:
            weights = self.reward_weights.to(rewards_per_func.device)
            rewards = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
            rewards[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan  # unscorable, as TRL treats it
        return rewards.float().cpu().tolist()

    def _note_bad_rewards(self, clipped: int, unscored: int, total: int) -> None:
        """Warn the first time rewards are clipped or unscored; the metrics count every time."""
        first_clip, first_unscored = clipped and not self.rewards_clipped, unscored and not self.rewards_unscored
        self.rewards_clipped += clipped
        self.rewards_unscored += unscored
        if not self.accelerator.is_main_process:
            return
        lo, hi = self.reward_range.lo, self.reward_range.hi
        if first_clip:
            logger.warning(f"{clipped} of {total} scheduler rewards lay outside reward_range [{lo:g}, {hi:g}] and were "
                           "clipped to it; pass EnvSchedGRPOTrainer(reward_range=(lo, hi)) with your reward's range. "
                           "Later clips are counted in sched/reward_clipped_frac.")  # fmt: skip
        if first_unscored:
            logger.warning(f"{unscored} of {total} rollouts had no reward (every reward function returned None); they "
                           "are left out of their groups. Later ones are counted in sched/unscored_frac.")  # fmt: skip

    # -- checkpointing ------------------------------------------------------------------------
    def _save_checkpoint(self, model, trial) -> None:
        """Only rank 0's scheduler learns, so its state is what every saving process writes: with
        ``save_on_each_node`` it is broadcast first, so each node's local rank 0 writes the same
        file (atomically: nodes sharing a filesystem replace it with identical bytes)."""
        super()._save_checkpoint(model, trial)
        state = self.task_scheduler.state_dict() if self.accelerator.is_main_process else None
        if self.args.save_on_each_node and self.accelerator.num_processes > 1:
            state = broadcast_object_list([state], from_process=0)[0]
        if self.args.should_save and state is not None:
            folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
            path = os.path.join(folder, SCHEDULER_FILE)
            write_state(state, path)  # atomic; numpy packed, so loading never unpickles code

    def _load_optimizer_and_scheduler(self, checkpoint) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None:
            return
        path = os.path.join(checkpoint, SCHEDULER_FILE)
        if os.path.exists(path):
            self.task_scheduler.load_state_dict(read_state(path, SCHEDULER_FILE))  # refuses non-plain data
        elif self.accelerator.is_main_process:  # only rank 0's scheduler chooses
            logger.warning(f"{checkpoint} has no {SCHEDULER_FILE}: the task scheduler starts without history")
