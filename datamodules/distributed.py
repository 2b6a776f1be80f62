"""The two collectives the schedule needs under DDP: rank 0's decision out, every rank's groups in.

Without a trainer (or in one process) both are the identity, so the DataModule has no branches.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch.distributed as dist

T = TypeVar("T")


def broadcast_from_zero(obj: T, strategy: Any | None) -> T:
    """Rank 0's `obj` on every rank (Lightning's object broadcast; a no-op in one process)."""
    return obj if strategy is None else strategy.broadcast(obj, src=0)


def gather_lists(items: list[T]) -> list[T]:
    """Every rank's `items`, concatenated in rank order, on every rank."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return list(items)
    parts: list[list[T] | None] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, list(items))
    return [x for part in parts for x in part or []]
