"""Torch's intra-op thread count, set once per process from config or `OMP_NUM_THREADS`.

Small models and small graph ops gain nothing from splitting across cores and lose a lot on a
busy machine (docs/application.md has the measurement), so the CPU experiments and the simulator
default to one thread; `OMP_NUM_THREADS`, when set, always names the user's choice.
"""

from __future__ import annotations

import os


def threads_setting(default: int | None) -> int | None:
    """`OMP_NUM_THREADS` when set, else `default` (None: leave torch's own default, every core)."""
    return parse_threads(os.environ.get("OMP_NUM_THREADS", default), "OMP_NUM_THREADS")


def parse_threads(value: int | str | None, key: str = "torch_threads") -> int | None:
    if value is None or value == "null":
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if isinstance(value, bool) or n < 1:
        raise ValueError(f"{key} must be a positive int (or null for torch's default), got {value!r}")
    return n


def set_torch_threads(value: int | str | None, key: str = "torch_threads") -> int:
    """Apply `value` (None keeps torch's default); returns the thread count in force."""
    import torch

    n = parse_threads(value, key)
    if n is not None:
        torch.set_num_threads(n)
    return torch.get_num_threads()
