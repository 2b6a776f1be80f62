"""The process-group queries and the one object collective shared by training, evaluation and the DataModule.

Every function is the identity in a single process (no process group, or a world of one), so
callers have no DDP branches of their own.
"""

from __future__ import annotations

import atexit
import gc
import time
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
    """Destroy the default process group after a finished run (every rank calls it).

    Ending a gloo group is where a finished run can still hang or abort: the group's worker
    threads release each finished collective's tensors, which needs the GIL, while the group's
    destructor joins those threads. If the destructor runs where the GIL is held (DDP's C++
    reducer dropping the last reference) the process hangs; if a worker still wants the GIL once
    the interpreter finalises, it aborts ("terminate called without an active exception"). So: a
    barrier (every rank's collectives have completed), then the group's last reference is kept
    here and dropped at exit (`_release_ended_groups`), from Python, whose binding releases the
    GIL while the destructor joins the threads, followed by a short GIL-free pause.
    Call it only after a run every rank completed: a rank still inside a collective deadlocks."""
    if not (dist.is_available() and dist.is_initialized()):
        return
    dist.barrier()
    if not _ENDED_GROUPS:
        atexit.register(_release_ended_groups)
    _ENDED_GROUPS.append(dist.group.WORLD)
    dist.destroy_process_group()


_ENDED_GROUPS: list[object] = []  # destroyed groups, kept until exit (see `end_process_group`)
_EXIT_GRACE_S = 0.2  # the GIL-free pause after releasing them (see `_release_ended_groups`)


def _release_ended_groups() -> None:
    """At exit, while the interpreter is whole: free what is no longer reachable (a DDP model in a
    reference cycle holds its group through its reducer), drop the last references, then hand the
    GIL to the group's worker threads for a moment: one may still be releasing the tensors of the
    last collectives (the barrier's work holds the ones before it), and a thread that asks for the
    GIL once finalisation has begun aborts the process."""
    gc.collect()
    _ENDED_GROUPS.clear()
    time.sleep(_EXIT_GRACE_S)
