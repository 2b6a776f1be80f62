"""The process-group queries and the one object collective shared by training, evaluation and the DataModule.

Every function is the identity in a single process (no process group, or a world of one), so
callers have no DDP branches of their own.
"""

from __future__ import annotations

from typing import TypeVar

import torch.distributed as dist

T = TypeVar("T")


def world_size() -> int:
    """Ranks in the default process group; 1 without one."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def gather_lists(items: list[T]) -> list[T]:
    """Every rank's `items`, concatenated in rank order, on every rank (a collective: every rank calls it)."""
    if world_size() == 1:
        return list(items)
    parts: list[list[T] | None] = [None] * world_size()
    dist.all_gather_object(parts, list(items))
    return [x for part in parts for x in part or []]


def end_process_group() -> None:
    """Destroy the default process group after a finished run.

    Without it the gloo worker threads outlive the interpreter's finalisation and a process that
    has finished its work can still abort at exit ("terminate called without an active exception").
    Call it only after a run every rank completed: destroying it while another rank waits in a
    collective deadlocks that rank."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
