"""`random`: uniform sampling without replacement, the baseline every paper compares against."""

from __future__ import annotations

import numpy as np

from ..base import Scheduler
from ..registry import register_scheduler


@register_scheduler("random")
class UniformScheduler(Scheduler):
    def _priorities(self, batch_size: int) -> dict[str, np.ndarray]:
        return {"priority": self.rng.random(self.num_tasks)}
