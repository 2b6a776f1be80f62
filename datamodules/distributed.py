"""The two collectives the schedule needs under DDP: rank 0's decision out, every rank's groups in.

Without a trainer (or in one process) both are the identity, so the DataModule has no branches.
"""

from __future__ import annotations

from typing import Any, TypeVar

from envsched_lightning.distributed import gather_lists

__all__ = ["broadcast_from_zero", "gather_lists"]

T = TypeVar("T")


def broadcast_from_zero(obj: T, strategy: Any | None) -> T:
    """Rank 0's `obj` on every rank (Lightning's object broadcast; a no-op in one process)."""
    return obj if strategy is None else strategy.broadcast(obj, src=0)

