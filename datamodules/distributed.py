"""Rank 0's scheduling decision out to every rank under DDP (every rank's groups come back through
`envsched_lightning.distributed.gather_lists`).

Without a trainer (or in one process) it is the identity, so the DataModule has no branches.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def broadcast_from_zero(obj: T, strategy: Any | None) -> T:
    """Rank 0's `obj` on every rank (Lightning's object broadcast; a no-op in one process)."""
    return obj if strategy is None else strategy.broadcast(obj, src=0)

