"""An online additive model of task difficulty over task metadata: a predictor that can compose.

Graph propagation says "this task is like those": a never-tried task inherits its neighbours'
observed spread. When tasks compose latent skills, a new task can be unlike every tried one as a
whole yet made of parts that were each seen elsewhere. An additive model reads that: each metadata
token (the environment, each tool, state key, the verifier, the reward type, each execution-
pattern feature at its binned value) carries a weight, and a task's success logit is the sum of its
tokens' weights, as item-response models compose an item's difficulty from its parts.

`AdditiveModel` holds the tokens as CSR arrays (one int32 per task-token pair) and fits the
weights by a few damped Jacobi sweeps of ridge regression per update, warm-started, on every
tried task's smoothed first pass rate; `informativeness()` turns predicted pass rates into the
scheduler's scale, the expected min(1, 2 x std) of a group of G binary rewards at that rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .types import TaskSpec

_GRID = 1001  # pass-rate points of the informativeness table


def spec_tokens(spec: TaskSpec) -> list[str]:
    """The metadata tokens a task's difficulty is additive over."""
    feats = [f"f:{k}={round(math.copysign(math.log1p(abs(v)), v) * 2)}" for k, v in spec.features.items()]
    return [f"e:{spec.env}", *(f"t:{t}" for t in spec.tools), *(f"s:{k}" for k in spec.state_keys),
            f"v:{spec.verifier}", f"r:{spec.reward_type}", *feats]  # fmt: skip


def expected_spread(group_size: int) -> np.ndarray:
    """float[_GRID]: E[min(1, 2 std)] of `group_size` Bernoulli(p) rewards, p on a uniform grid in [0, 1]."""
    p = np.linspace(0.0, 1.0, _GRID)[:, None]  # [P, 1]
    k = np.arange(group_size + 1)[None, :]  # [1, G+1]
    comb = np.array([math.comb(group_size, int(j)) for j in k[0]], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        pmf = comb * np.where(k > 0, p**k, 1.0) * np.where(k < group_size, (1 - p) ** (group_size - k), 1.0)  # [P, G+1]
    share = k / group_size
    spread = np.minimum(1.0, 2.0 * np.sqrt(share * (1 - share)))  # [1, G+1]
    return (pmf * spread).sum(1)


class AdditiveModel:
    """Success logit = bias + sum of the task's token weights, refitted on the tried tasks each update."""

    def __init__(self, specs: Sequence[TaskSpec], ridge: float = 2.0, sweeps: int = 4) -> None:
        if ridge <= 0 or sweeps < 1:
            raise ValueError(f"additive ridge must be > 0 and sweeps >= 1; got {ridge}, {sweeps}")
        vocab: dict[str, int] = {}
        lengths = np.zeros(len(specs), dtype=np.int64)
        flat: list[int] = []
        for i, spec in enumerate(specs):
            ids = {vocab.setdefault(tok, len(vocab)) for tok in spec_tokens(spec)}
            flat.extend(sorted(ids))
            lengths[i] = len(ids)
        self.indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)  # [N + 1]
        self.indices = np.asarray(flat, dtype=np.int32)  # [nnz] token ids, task-major
        self.rows = np.repeat(np.arange(len(specs), dtype=np.int64), lengths)  # [nnz] task of each entry
        self.num_tokens = len(vocab)
        self.ridge, self.sweeps = ridge, sweeps
        self.weights = np.zeros(self.num_tokens)
        self.bias = 0.0
        self.fits = 0
        self.first = np.full(len(specs), np.nan)  # each task's first group's smoothed success logit
        self._spread: tuple[int, np.ndarray] | None = None

    def logits(self) -> np.ndarray:
        """float[N]: every task's predicted success logit."""
        return self.bias + np.bincount(self.rows, weights=self.weights[self.indices], minlength=len(self.indptr) - 1)

    def observe(self, nodes: np.ndarray, mean: np.ndarray, group_size: int) -> None:
        """Record the first group of each never-seen task among `nodes` (its mean reward `mean`) as
        logit((mean G + 0.5) / (G + 1)), finite for all-fail and all-pass groups, and refit.

        First groups only: a task re-picked because it was informative drifts toward a pass rate
        of one half, and fitting every task's latest outcome would teach the model that every
        untried task is worth picking."""
        new = np.isnan(self.first[nodes])
        p = (mean[new].astype(np.float64) * group_size + 0.5) / (group_size + 1)
        self.first[nodes[new]] = np.log(p / (1 - p))
        self.fit(~np.isnan(self.first), self.first)

    def fit(self, observed: np.ndarray, targets: np.ndarray) -> None:
        """Warm-started sweeps of ridge regression of `targets` (float[N], read where `observed`)."""
        tried = np.flatnonzero(observed)
        if not tried.size:
            return
        target = targets[tried]
        entries = np.flatnonzero(observed[self.rows])  # the tried tasks' token entries
        rows, tokens = self.rows[entries], self.indices[entries]
        slot = np.zeros(len(self.indptr) - 1, dtype=np.int64)
        slot[tried] = np.arange(tried.size)
        rows = slot[rows]  # entry -> position among the tried tasks
        seen = np.bincount(tokens, minlength=self.num_tokens)  # tried tasks per token
        longest = max(1, int(np.diff(self.indptr)[tried].max()))
        for _ in range(self.sweeps):
            fitted = self.bias + np.bincount(rows, weights=self.weights[tokens], minlength=tried.size)
            resid = target - fitted  # [T]
            self.bias += float(resid.mean())
            resid -= resid.mean()
            # each token moves toward the mean residual of its tasks, shrunk by the ridge and
            # damped by the longest token list (a task's tokens all move at once)
            step = np.bincount(tokens, weights=resid[rows], minlength=self.num_tokens) - self.ridge * self.weights
            self.weights += step / ((seen + self.ridge) * longest)
        self.fits += 1

    def informativeness(self, group_size: int) -> np.ndarray:
        """float32[N]: the expected min(1, 2 std) of a group at each task's predicted pass rate."""
        if self._spread is None or self._spread[0] != group_size:
            self._spread = (group_size, expected_spread(group_size))
        p = 1.0 / (1.0 + np.exp(-np.clip(self.logits(), -30, 30)))
        return np.interp(p, np.linspace(0.0, 1.0, _GRID), self._spread[1]).astype(np.float32)

    def state_dict(self) -> dict:
        return {"weights": self.weights.copy(), "bias": self.bias, "fits": self.fits, "first": self.first.copy()}

    def load_state_dict(self, state: dict) -> None:
        weights = np.asarray(state["weights"], dtype=np.float64)
        if weights.shape != self.weights.shape:
            raise ValueError(f"additive weights: shape {weights.shape} does not match {self.weights.shape} "
                             "(a different task pool)")  # fmt: skip
        first = np.asarray(state["first"], dtype=np.float64)
        if first.shape != self.first.shape:
            raise ValueError(f"additive first outcomes: shape {first.shape} does not match {self.first.shape}")
        self.weights, self.bias, self.fits, self.first = weights.copy(), float(state["bias"]), int(state["fits"]), first.copy()
