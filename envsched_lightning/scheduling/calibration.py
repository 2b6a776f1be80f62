"""What a task's own last group says about its next one, learned from re-observed tasks.

Under GRPO a task's pass rate drifts upward while it is trained on, so a group at 7/8 predicts
saturation and one at 2/8 predicts a still-informative next group, although both have similar
std. This table maps the last group mean (binned), and whether that group was flat, to the
informativeness the next group of the same task actually showed, with exponential forgetting so it
follows the policy as it changes. Flatness gets its own row because with partial-credit rewards a
group can sit at 0.5 with no spread at all: the policy has settled on a half-right answer, and
such a task's next group is far less likely to teach anything than one at 0.5 with spread.
"""

from __future__ import annotations

import numpy as np

from .types import ZERO_STD_EPS


class OutcomeCalibration:
    def __init__(self, bins: int = 10, decay: float = 0.98, prior_weight: float = 2.0) -> None:
        if bins < 2 or not 0.0 < decay <= 1.0 or prior_weight < 0:
            raise ValueError(f"need bins >= 2, decay in (0, 1], prior_weight >= 0; got {bins}, {decay}, {prior_weight}")
        self.bins, self.decay, self.prior_weight = bins, decay, prior_weight
        self.total = np.zeros(2 * bins)  # decayed sum of next-group informativeness per cell
        self.count = np.zeros(2 * bins)  # decayed number of re-observations per cell

    def bin(self, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
        """Cell of a last group: mean bin (all-failed and all-passed get bins of their own, the
        rest split (0, 1) evenly), offset by `bins` when the group was flat (std ~ 0)."""
        inner = 1 + np.floor(np.clip(mean, 0, 1) * (self.bins - 2)).astype(np.int64)
        b = np.where(mean <= 1e-6, 0, np.where(mean >= 1 - 1e-6, self.bins - 1, np.minimum(inner, self.bins - 2)))
        return b + self.bins * (np.asarray(std) < ZERO_STD_EPS)

    def observe(self, last_mean: np.ndarray, last_std: np.ndarray, informativeness: np.ndarray) -> None:
        self.total *= self.decay
        self.count *= self.decay
        b = self.bin(last_mean, last_std)
        self.total += np.bincount(b, weights=informativeness, minlength=2 * self.bins)
        self.count += np.bincount(b, minlength=2 * self.bins)

    def lookup(self, last_mean: np.ndarray, last_std: np.ndarray, prior: np.ndarray | float) -> np.ndarray:
        """Expected next informativeness, shrunk toward `prior` where a cell has little data."""
        b = self.bin(last_mean, last_std)
        return ((self.total[b] + self.prior_weight * prior) / (self.count[b] + self.prior_weight)).astype(np.float32)

    def state_dict(self) -> dict:
        return {"total": self.total.copy(), "count": self.count.copy()}

    def load_state_dict(self, state: dict) -> None:
        if np.shape(state["total"]) != self.total.shape:
            raise ValueError(f"calibration table of shape {np.shape(state['total'])}, expected {self.total.shape}")
        self.total = np.asarray(state["total"], dtype=np.float64).copy()
        self.count = np.asarray(state["count"], dtype=np.float64).copy()
