"""`EnvSchedSampler`: verl's curriculum-sampler contract, served by an EnvSched scheduler.

verl builds the train dataloader's sampler as ``cls(data_source=dataset, data_config=config.data)``
and, after each step is scored, calls ``sampler.update(batch=batch)``. This sampler translates in
both directions and decides nothing itself:

- ``__iter__`` is a generator. verl calls it once per epoch, so a list built there would freeze an
  epoch's order; instead, whenever the current batch is used up, the next draw asks the scheduler
  for ``train_batch_size`` tasks with every reward reported so far, and ``update`` drops what is
  left of an older choice;
- ``update(batch)`` maps each rollout's task ids (``non_tensor_batch``'s ``extra_info`` ``env`` and
  ``task_id``, else ``data_source`` and ``extra_info.index``), ``token_level_scores.sum(-1)`` (mapped
  from ``reward_range`` onto [0, 1], clipped) and response length to one `RolloutGroup` per ``uid``
  (a task in two groups, or a group of two tasks, raises). A batch already reported (same ``uid``
  set) is ignored, so `CurriculumFeedback` can report a step before its checkpoint while verl's
  own later ``update`` call on the same batch changes nothing;
- ``state_dict`` / ``load_state_dict`` make it `Stateful` for torchdata's `StatefulDataLoader`, so
  verl's ``data.pt`` checkpoint carries the scheduler state and the position in the epoch.

verl 0.9 dropped that hook (``data.sampler.class_path`` and the ``update`` call): there,
``python -m envsched_lightning.adapters.verl_main`` runs the legacy trainer with `CurriculumFeedback`
mixed in. docs/adapters.md covers each verl release.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence, Sized
from typing import Any

import numpy as np
import torch
from torch.utils.data import Sampler

from envsched_lightning.checkpoints import from_safe, read_state, to_safe, write_state
from envsched_lightning.scheduling import Scheduler, TaskSpec, build_scheduler

from envsched_lightning.scheduling.task_table import TaskTable

from .mapping import RewardRange, TaskIndex, TaskKey, group_rewards, require_unique_rows, spec_fields
from .metrics import scheduler_metrics

try:  # verl with the curriculum hook (it checks isinstance against this)
    from verl.experimental.dataset.sampler import AbstractCurriculumSampler as _SamplerBase
except ImportError:  # verl >= 0.9: the same contract on a plain Sampler
    _SamplerBase = Sampler

SAMPLER_FILE = "envsched_sampler.pt"
logger = logging.getLogger(__name__)


def _plain(value: Any) -> Any:
    """An OmegaConf node as plain Python (schedulers take dicts and lists, not DictConfig)."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:
        return value
    return OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig | ListConfig) else value


def row_key(data_source: Any, extra_info: Mapping[str, Any] | None) -> TaskKey:
    """A row's task identity: ``extra_info``'s ``env``/``task_id``, else ``(data_source, index)``."""
    info = dict(extra_info or {})
    if info.get("env") is not None and info.get("task_id") is not None:
        return str(info["env"]), str(info["task_id"])
    if data_source is not None and info.get("index") is not None:
        return str(data_source), str(info["index"])
    raise ValueError("a row has neither extra_info.env/task_id nor data_source + extra_info.index; "
                     "tasks are identified by ids, never by row position")  # fmt: skip


def dataset_rows(data_source: Sized) -> tuple[list[TaskKey], TaskTable]:
    """Each row's key, and the rows' specs as one `TaskTable` (fields from ``extra_info``, see
    `spec_fields`).

    Reads `RLHFDataset.dataframe` column-wise when there is one, so no row is tokenised here, and
    streams the specs into columns: a million rows never become a million `TaskSpec` objects.
    """
    frame = getattr(data_source, "dataframe", None)
    if frame is not None:
        sources, infos = frame["data_source"], frame["extra_info"]
    else:
        rows = [data_source[i] for i in range(len(data_source))]
        sources, infos = [r.get("data_source") for r in rows], [r.get("extra_info") for r in rows]
    keys = [row_key(s, i) for s, i in zip(sources, infos, strict=True)]
    require_unique_rows(keys)  # a task on two rows raises here, naming the rows
    specs = TaskTable.from_rows(spec_fields(env, task_id, info) for (env, task_id), info in zip(keys, infos, strict=True))
    return keys, specs


class EnvSchedSampler(_SamplerBase):
    """Dataset rows in the order an EnvSched scheduler chooses them, one task per row.

    Options come from ``data.sampler`` (all optional): ``scheduler`` (a `build_scheduler` name,
    default ``envsched``), ``scheduler_kwargs`` (its options, e.g. ``seed``) and ``reward_range``
    (``[lo, hi]`` of the trained reward, mapped onto the [0, 1] that `Scheduler.update` accepts;
    default ``[0, 1]``; a score outside it is clipped and counted in ``sched/reward_clipped_frac``).
    Each batch holds ``data.gen_batch_size or data.train_batch_size`` tasks.
    """

    def __init__(self, data_source: Sized, data_config: Mapping[str, Any]) -> None:
        options = _plain(data_config.get("sampler") or {})
        workers = data_config.get("dataloader_num_workers", 0)
        if workers:
            raise ValueError(f"data.dataloader_num_workers={workers}: worker processes draw ahead of the "
                             "rewards; set it to 0")  # fmt: skip
        self.batch_size = int(data_config.get("gen_batch_size") or data_config["train_batch_size"])
        self.reward_range = RewardRange.of(options.get("reward_range") or (0.0, 1.0))  # checked here
        self.rewards_clipped = 0  # rollouts whose score lay outside reward_range, over the run
        keys, specs = dataset_rows(data_source)
        kwargs = dict(options.get("scheduler_kwargs") or {})
        self.scheduler: Scheduler = build_scheduler(options.get("scheduler") or "envsched", specs, **kwargs)
        self.task_index = TaskIndex(self.scheduler.specs)
        self._rows = self.task_index.rows(keys)
        if self.batch_size > self.scheduler.num_tasks:
            raise ValueError(f"batch of {self.batch_size} tasks, but the dataset has {self.scheduler.num_tasks}")
        self._queue: list[int] = []  # the last choice, not yet drawn
        self._drawn = 0  # draws in the current epoch
        self._decision = None  # why the last select chose what it chose (for `metrics`)
        self._reported: frozenset = frozenset()  # uids of the last batch reported
        self.metrics: dict[str, float] = {}  # ``sched/`` metrics of the last reported step

    def __len__(self) -> int:
        """Whole batches only, so no choice is ever thrown away by ``drop_last``."""
        return len(self._rows) // self.batch_size * self.batch_size

    def __iter__(self):
        while self._drawn < len(self):
            if not self._queue:
                self._queue = list(self.scheduler.select(self.batch_size))
                self._decision = self.scheduler.last_decision()
            self._drawn += 1
            yield int(self._rows[self._queue.pop(0)])
        self._drawn = 0  # epoch over; the next __iter__ starts a new one

    def update(self, batch: Any) -> None:
        """Report one scored step: verl's `DataProto` after ``token_level_scores`` is set.

        Sets `metrics` (``sched/`` keys, see `scheduler_metrics`) for the trainer to log.
        """
        non_tensor = batch.non_tensor_batch
        if "uid" not in non_tensor or "token_level_scores" not in batch.batch.keys():
            raise ValueError("update needs a scored batch: non_tensor_batch['uid'] and batch['token_level_scores']")
        uids = list(non_tensor["uid"])
        if uids and frozenset(uids) == self._reported:
            return  # this step is in already (CurriculumFeedback reported it before verl's hook did)
        n = len(uids)
        sources = non_tensor.get("data_source", np.full(n, None, dtype=object))
        infos = non_tensor.get("extra_info", np.full(n, None, dtype=object))
        tasks = self.task_index.indices(row_key(s, i) for s, i in zip(sources, infos, strict=True)).tolist()
        scores = batch.batch["token_level_scores"].sum(-1)  # [n] one scalar per rollout
        rewards, clipped = self.reward_range.to_unit(scores.double().cpu().tolist())
        mask = batch.batch["response_mask"] if "response_mask" in batch.batch.keys() else None  # [n, response]
        lengths = mask.sum(-1).cpu().tolist() if mask is not None else None
        groups = group_rewards(tasks, rewards, uids, lengths)
        self.scheduler.update(groups)  # validates first (NaN raises): a bad batch changes nothing
        self._reported, self._queue = frozenset(uids), []  # the next draw chooses with these rewards
        self._note_clipped(clipped, n)
        self.metrics = scheduler_metrics(self._decision, groups, self.scheduler.specs, self.scheduler.env_names)
        self.metrics["sched/reward_clipped_frac"] = clipped / n

    def _note_clipped(self, clipped: int, total: int) -> None:
        """Warn the first time scores are clipped; ``sched/reward_clipped_frac`` counts every step."""
        if clipped and not self.rewards_clipped:
            lo, hi = self.reward_range.lo, self.reward_range.hi
            logger.warning(f"{clipped} of {total} scores lay outside data.sampler.reward_range [{lo:g}, {hi:g}] and "
                           "were clipped to it; set +data.sampler.reward_range=[lo,hi] to your reward's range. "
                           "Later clips are counted in sched/reward_clipped_frac.")  # fmt: skip
        self.rewards_clipped += clipped

    def state_dict(self) -> dict[str, Any]:
        """Plain data only (numpy packed as tensors): verl also writes it into its own data.pt."""
        # a finished epoch is saved as position 0: verl resumes it by starting the next epoch
        drawn = self._drawn % len(self) if len(self) else 0
        return to_safe({"scheduler": self.scheduler.state_dict(), "drawn": drawn, "queue": list(self._queue)})

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Every field range-checked before any is set: a queue of `-1`s would draw one row again and again."""
        state = from_safe(state)
        drawn, queue = state.get("drawn"), state.get("queue")
        if isinstance(drawn, bool) or not isinstance(drawn, int) or not 0 <= drawn < max(len(self), 1):
            raise ValueError(f"sampler state: drawn={drawn!r} is not a position in an epoch of {len(self)} draws")
        tasks = self.scheduler.num_tasks  # the queue holds the scheduler's task indices
        if (not isinstance(queue, list) or len(queue) > self.batch_size or len(set(queue)) != len(queue)
                or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < tasks for i in queue)):  # fmt: skip
            raise ValueError(f"sampler state: queue={str(queue)[:80]} is not at most {self.batch_size} distinct task "
                             f"indices in [0, {tasks})")  # fmt: skip
        self.scheduler.load_state_dict(state["scheduler"])
        self._drawn, self._queue = drawn, list(queue)


class CurriculumFeedback:
    """The curriculum hook for a `RayPPOTrainer` (verl >= 0.7), ahead of it in the MRO.

    ``class Trainer(CurriculumFeedback, RayPPOTrainer)``:

    - each scored batch reaches ``sampler.update`` in ``_update_actor``, so before that step's
      checkpoint. verl 0.8/0.9 no longer call ``update`` at all; 0.7 calls it only after
      ``_save_checkpoint``, so its checkpoints missed the step's rewards (the sampler ignores
      that second call of the same batch);
    - the step's ``sched/`` metrics join the actor's, which verl merges into the step's metrics;
    - the sampler state is saved next to every checkpoint and reloaded on resume, also at epoch
      boundaries, where verl skips its own ``data.pt``.

    Steps of ``trainer.critic_warmup`` skip ``_update_actor`` and are therefore not reported.
    """

    def _update_actor(self, batch):
        sampler = self.train_dataloader.sampler
        sampler.update(batch)
        output = super()._update_actor(batch)
        output.meta_info.setdefault("metrics", {}).update(sampler.metrics)  # reduced and logged by fit
        return output

    def _save_checkpoint(self):
        super()._save_checkpoint()
        folder = os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")
        write_state(self.train_dataloader.sampler.state_dict(), os.path.join(folder, SAMPLER_FILE))  # atomic, plain data

    def _load_checkpoint(self):
        out = super()._load_checkpoint()
        if self.global_steps > 0:  # verl resumed from global_step_<global_steps>
            trainer = self.config.trainer
            folder = (trainer.resume_from_path if trainer.resume_mode == "resume_path"
                      else os.path.join(trainer.default_local_dir, f"global_step_{self.global_steps}"))  # fmt: skip
            path = os.path.join(os.path.abspath(folder), SAMPLER_FILE)
            if os.path.exists(path):
                self.train_dataloader.sampler.load_state_dict(read_state(path, SAMPLER_FILE))
        return out
