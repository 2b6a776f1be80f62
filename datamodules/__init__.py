"""Lightning glue that turns environments and a scheduler into training batches."""

from .envsched_datamodule import EnvSchedDataModule
from .task_pool import TaskPool, build_pool, split_held_out

__all__ = ["EnvSchedDataModule", "TaskPool", "build_pool", "split_held_out"]
