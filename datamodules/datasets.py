"""What the loaders iterate: one scheduled `TaskBatch` per training step, held-out tasks for validation."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from torch.utils.data import Dataset, IterableDataset

from envsched_lightning.envs.base import Environment, Task
from envsched_lightning.module import TaskBatch


class ScheduledBatches(IterableDataset):
    """Asks `next_batch` for a fresh batch each time the trainer fetches one.

    It reports a length (`steps` per epoch) on purpose: Lightning only pre-fetches the next batch
    when a loader's length is unknown, and a pre-fetched batch would be chosen before the
    scheduler heard the current step's rewards.
    """

    def __init__(self, next_batch: Callable[[], TaskBatch], steps: int, finished: Callable[[], bool] = lambda: False) -> None:
        self.next_batch = next_batch
        self.steps = steps
        self.finished = finished  # a resumed run that already made all its steps serves nothing more

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[TaskBatch]:
        while not self.finished():  # else the trainer stops after `steps` fetches (counting those before a resume)
            yield self.next_batch()


class HeldOutTasks(Dataset):
    """(position, task, env) items, collated by `TaskBatch.collate`; positions are not scheduler indices."""

    def __init__(self, items: tuple[tuple[Task, Environment], ...]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[int, Task, Environment]:
        task, env = self.items[i]
        return i, task, env
