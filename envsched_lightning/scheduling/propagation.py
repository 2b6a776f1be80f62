"""Closed-form propagation of observed informativeness: personalised PageRank smoothing.

    f <- alpha * y * m + (1 - alpha) * A f,    g <- alpha * m + (1 - alpha) * A g,    pred = f / g

with `A` the row-normalised mix of both relations, `y` the observed value and `m` the observed
mask. The ratio is a neighbourhood-weighted average of observed values, so a never-tried task
inherits its neighbours' evidence; where no evidence reaches (g ~ 0) the prior is used. It needs
no training, which is why it leads until the learned model has earned trust.
"""

from __future__ import annotations

import numpy as np
import torch

from .graph import CROSS, INTRA, TaskGraph


def normalized_adjacency(graph: TaskGraph, cross_weight: float = 0.5) -> torch.Tensor:
    """Sparse COO [N, N], rows summing to 1 (or 0 for isolated nodes), mixing both relations."""
    n = graph.num_nodes
    rows, cols, vals = [], [], []
    for r, scale in ((INTRA, 1.0), (CROSS, cross_weight)):
        if scale == 0:
            continue
        s = graph.relation(r)
        rows.append(np.repeat(np.arange(n), np.diff(s.indptr)))
        cols.append(s.indices)
        vals.append(s.weights * scale)
    row, col, val = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals).astype(np.float32)
    deg = np.bincount(row, weights=val, minlength=n)
    val = (val / np.maximum(deg[row], 1e-12)).astype(np.float32)
    idx = torch.from_numpy(np.stack([row, col]))
    return torch.sparse_coo_tensor(idx, torch.from_numpy(val), (n, n), check_invariants=False).coalesce()


def ppr_smooth(adj: torch.Tensor, values: np.ndarray, mask: np.ndarray, prior: float, alpha: float = 0.5, iters: int = 4):
    """float32[N] neighbourhood-smoothed `values` (observed where `mask`), `prior` where none reaches."""
    y = torch.from_numpy(np.stack([values * mask, mask.astype(np.float32)], 1).astype(np.float32))  # [N, 2]
    f = y.clone()
    for _ in range(iters):
        f = alpha * y + (1 - alpha) * (adj @ f)
    num, den = f[:, 0].numpy(), f[:, 1].numpy()
    # shrink toward the prior by how little evidence reached the node
    evidence = den / (den + 0.05)
    smooth = np.where(den > 1e-8, num / np.maximum(den, 1e-8), prior)
    return (evidence * smooth + (1 - evidence) * prior).astype(np.float32)
