"""`EnvSchedSampler`: verl's curriculum-sampler contract, served by an EnvSched scheduler.

verl builds the train dataloader's sampler as ``cls(data_source=dataset, data_config=config.data)``
and, after each step is scored, calls ``sampler.update(batch=batch)``. This sampler translates in
both directions and decides nothing itself:

- ``__iter__`` is a generator. verl calls it once per epoch, so a list built there would freeze an
  epoch's order; instead, whenever the current batch is used up, the next draw asks the scheduler
  for ``train_batch_size`` tasks with every reward reported so far, and ``update`` drops what is
  left of an older choice;
- ``update(batch)`` maps each rollout's task ids (``non_tensor_batch``'s ``extra_info`` ``env`` and
  ``task_id``, else ``data_source`` and ``extra_info.index``) and ``token_level_scores.sum(-1)`` to
  one `RolloutGroup` per ``uid`` (a task in two groups, or a group of two tasks, raises);
- ``state_dict`` / ``load_state_dict`` make it `Stateful` for torchdata's `StatefulDataLoader`, so
  verl's ``data.pt`` checkpoint carries the scheduler state and the position in the epoch.

verl 0.9 dropped that hook (``data.sampler.class_path`` and the ``update`` call). There, mix
`CurriculumFeedback` into the legacy `RayPPOTrainer` and pass the sampler as ``train_sampler``;
docs/adapters.md has both set-ups.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence, Sized
from typing import Any

import numpy as np
import torch
from torch.utils.data import Sampler

from envsched_lightning.scheduling import Scheduler, TaskSpec, build_scheduler

from .mapping import TaskIndex, TaskKey, group_rewards, spec_from_record, unique_rows

try:  # verl with the curriculum hook (it checks isinstance against this)
    from verl.experimental.dataset.sampler import AbstractCurriculumSampler as _SamplerBase
except ImportError:  # verl >= 0.9: the same contract on a plain Sampler
    _SamplerBase = Sampler

SAMPLER_FILE = "envsched_sampler.pt"


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


def dataset_rows(data_source: Sized) -> tuple[list[TaskKey], list[TaskSpec]]:
    """Each row's key, and one `TaskSpec` per row (fields from ``extra_info``, see `spec_from_record`).

    Reads `RLHFDataset.dataframe` column-wise when there is one, so no row is tokenised here.
    """
    frame = getattr(data_source, "dataframe", None)
    if frame is not None:
        sources, infos = frame["data_source"], frame["extra_info"]
    else:
        rows = [data_source[i] for i in range(len(data_source))]
        sources, infos = [r.get("data_source") for r in rows], [r.get("extra_info") for r in rows]
    keys = [row_key(s, i) for s, i in zip(sources, infos, strict=True)]
    unique_rows(keys)  # a task on two rows raises here, naming the rows
    specs = [spec_from_record(env, task_id, info) for (env, task_id), info in zip(keys, infos, strict=True)]
    return keys, specs


class EnvSchedSampler(_SamplerBase):
    """Dataset rows in the order an EnvSched scheduler chooses them, one task per row.

    Options come from ``data.sampler`` (all optional): ``scheduler`` (a `build_scheduler` name,
    default ``envsched``), ``scheduler_kwargs`` (its options, e.g. ``seed``) and ``reward_range``
    (``[lo, hi]`` of the trained reward, rescaled to the [0, 1] that `Scheduler.update` accepts;
    default ``[0, 1]``). Each batch holds ``data.gen_batch_size or data.train_batch_size`` tasks.
    """

    def __init__(self, data_source: Sized, data_config: Mapping[str, Any]) -> None:
        options = _plain(data_config.get("sampler") or {})
        workers = data_config.get("dataloader_num_workers", 0)
        if workers:
            raise ValueError(f"data.dataloader_num_workers={workers}: worker processes draw ahead of the "
                             "rewards; set it to 0")  # fmt: skip
        self.batch_size = int(data_config.get("gen_batch_size") or data_config["train_batch_size"])
        lo, hi = (float(x) for x in options.get("reward_range") or (0.0, 1.0))
        if not hi > lo:
            raise ValueError(f"data.sampler.reward_range must be [lo, hi] with hi > lo, got {[lo, hi]}")
        self.reward_range = (lo, hi)
        keys, specs = dataset_rows(data_source)
        kwargs = dict(options.get("scheduler_kwargs") or {})
        self.scheduler: Scheduler = build_scheduler(options.get("scheduler") or "envsched", specs, **kwargs)
        self.task_index = TaskIndex(self.scheduler.specs)
        self._rows = self.task_index.rows(keys)
        if self.batch_size > self.scheduler.num_tasks:
            raise ValueError(f"batch of {self.batch_size} tasks, but the dataset has {self.scheduler.num_tasks}")
        self._queue: list[int] = []  # the last choice, not yet drawn
        self._drawn = 0  # draws in the current epoch

    def __len__(self) -> int:
        """Whole batches only, so no choice is ever thrown away by ``drop_last``."""
        return len(self._rows) // self.batch_size * self.batch_size

    def __iter__(self):
        while self._drawn < len(self):
            if not self._queue:
                self._queue = list(self.scheduler.select(self.batch_size))
            self._drawn += 1
            yield self._rows[self._queue.pop(0)]
        self._drawn = 0  # epoch over; the next __iter__ starts a new one

    def update(self, batch: Any) -> None:
        """Report one scored step: verl's `DataProto` after ``token_level_scores`` is set."""
        non_tensor = batch.non_tensor_batch
        if "uid" not in non_tensor or "token_level_scores" not in batch.batch.keys():
            raise ValueError("update needs a scored batch: non_tensor_batch['uid'] and batch['token_level_scores']")
        n = len(non_tensor["uid"])
        sources = non_tensor.get("data_source", np.full(n, None, dtype=object))
        infos = non_tensor.get("extra_info", np.full(n, None, dtype=object))
        tasks = [self.task_index.index(*row_key(s, i)) for s, i in zip(sources, infos, strict=True)]
        lo, hi = self.reward_range
        scores = batch.batch["token_level_scores"].sum(-1)  # [n] one scalar per rollout
        rewards = ((scores.double() - lo) / (hi - lo)).cpu().tolist()
        self.scheduler.update(group_rewards(tasks, rewards, list(non_tensor["uid"])))  # validates first
        self._queue = []  # the next draw chooses with these rewards

    def state_dict(self) -> dict[str, Any]:
        # a finished epoch is saved as position 0: verl resumes it by starting the next epoch
        drawn = self._drawn % len(self) if len(self) else 0
        return {"scheduler": self.scheduler.state_dict(), "drawn": drawn, "queue": list(self._queue)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.scheduler.load_state_dict(state["scheduler"])
        self._drawn, self._queue = int(state["drawn"]), [int(i) for i in state["queue"]]


class CurriculumFeedback:
    """For verl 0.9's legacy `RayPPOTrainer`: the sampler hook it no longer has, ahead of it in the MRO.

    ``class Trainer(CurriculumFeedback, RayPPOTrainer)``: each scored batch reaches
    ``sampler.update`` before the actor update (so before that step's checkpoint), and the sampler
    state is saved next to every checkpoint and reloaded on resume, also at epoch boundaries, where
    verl skips its own ``data.pt``.
    """

    def _update_actor(self, batch):
        self.train_dataloader.sampler.update(batch)
        return super()._update_actor(batch)

    def _save_checkpoint(self):
        super()._save_checkpoint()
        folder = os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")
        torch.save(self.train_dataloader.sampler.state_dict(), os.path.join(folder, SAMPLER_FILE))

    def _load_checkpoint(self):
        out = super()._load_checkpoint()
        if self.global_steps > 0:  # verl resumed from global_step_<global_steps>
            trainer = self.config.trainer
            folder = (trainer.resume_from_path if trainer.resume_mode == "resume_path"
                      else os.path.join(trainer.default_local_dir, f"global_step_{self.global_steps}"))  # fmt: skip
            path = os.path.join(os.path.abspath(folder), SAMPLER_FILE)
            if os.path.exists(path):
                self.train_dataloader.sampler.load_state_dict(torch.load(path, weights_only=False))
        return out
