"""Closed-form propagation of observed informativeness: truncated personalised PageRank.

    f_0 = s,  f_{k+1} = alpha * s + (1 - alpha) * A f_k   (K steps),   s = [y * m, m]

with `A` the row-normalised mix of both relations, `y` the observed value and `m` the observed
mask. ``f[:, 0] / f[:, 1]`` is a neighbourhood-weighted average of observed values, so a
never-tried task inherits its neighbours' evidence; where little evidence reaches, the estimate
shrinks toward the prior. It needs no training, which is why it leads until the learned model has
earned trust.

The map s -> f_K is linear, so a step that changes `s` at a few nodes changes `f` by
``P (delta s)``, computed by K sparse pushes from those nodes: the cost follows the observed nodes
and their K-hop edges, not N. A full pass is needed only when the graph itself changes.
"""

from __future__ import annotations

import numpy as np

from .graph import CROSS, INTRA, TaskGraph
from .similarity import SparseSimilarity, row_positions


class RowNormalizedGraph:
    """A in CSR, rows summing to 1 (0 for isolated nodes), mixing both relations."""

    def __init__(self, graph: TaskGraph, cross_weight: float = 0.5) -> None:
        n = graph.num_nodes
        scaled = [SparseSimilarity(s.indptr, s.indices, s.weights * scale)
                  for s, scale in ((graph.relation(INTRA), 1.0), (graph.relation(CROSS), cross_weight)) if scale > 0]
        merged = SparseSimilarity.concat_rows(scaled)  # the intra relation is always there
        row, col = merged.sources(), merged.indices
        raw = merged.weights.astype(np.float64)
        deg = np.maximum(np.bincount(row, weights=raw, minlength=n), 1e-12)
        self.num_nodes = n
        self.indptr, self.rows, self.cols = merged.indptr, row, col
        self.vals = raw / deg[row]  # A[i, j]
        # pushing a sparse vector forward needs A's columns. Both relations are symmetric, so
        # column j holds the neighbours i of row j, with A[i, j] = w(j, i) / deg(i): no transpose sort
        self.t_indptr, self.t_rows, self.t_vals = merged.indptr, col, raw / deg[col]

    def matmul(self, x: np.ndarray) -> np.ndarray:
        """A @ x for dense x [N, C]."""
        out = np.zeros_like(x)
        for c in range(x.shape[1]):
            out[:, c] = np.bincount(self.rows, weights=self.vals * x[self.cols, c], minlength=self.num_nodes)
        return out

    def push(self, nodes: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A @ v for v sparse (v[nodes] = x [S, C], zero elsewhere) -> (support, values [S', C])."""
        if nodes.size == 0:
            return nodes, x
        seg, pos = row_positions(self.t_indptr, nodes)
        tgt, w = self.t_rows[pos], self.t_vals[pos]
        dense = np.stack([np.bincount(tgt, weights=w * x[seg, c], minlength=self.num_nodes) for c in range(x.shape[1])], 1)
        support = np.flatnonzero(np.bincount(tgt, minlength=self.num_nodes))  # sorted, unique
        out = dense[support]
        return support, out


class IncrementalPPR:
    """Keeps f = P s up to date under sparse changes of s (see module docstring)."""

    def __init__(self, adj: RowNormalizedGraph, alpha: float = 0.5, iters: int = 2) -> None:
        if not 0.0 < alpha <= 1.0 or iters < 0:
            raise ValueError(f"need alpha in (0, 1] and iters >= 0, got {alpha}, {iters}")
        self.adj, self.alpha, self.iters = adj, alpha, iters
        self.s = np.zeros((adj.num_nodes, 2))
        self.f = np.zeros((adj.num_nodes, 2))

    def _coefficients(self) -> list[float]:
        """f_K = sum_k c_k A^k s: c_k = alpha (1 - alpha)^k for k < K, and (1 - alpha)^K for k = K."""
        a, k = self.alpha, self.iters
        return [a * (1 - a) ** j for j in range(k)] + [(1 - a) ** k]

    def reset(self, values: np.ndarray, mask: np.ndarray) -> None:
        """Full pass, O(K E): after the graph changes."""
        self.s = np.stack([values * mask, mask.astype(np.float64)], 1)
        f, term = np.zeros_like(self.s), self.s.copy()
        for c in self._coefficients():
            f += c * term
            term = self.adj.matmul(term)
        self.f = f

    def update(self, nodes: np.ndarray, values: np.ndarray, mask: np.ndarray) -> None:
        """Set s at `nodes` and push only the difference through the K-hop neighbourhood."""
        new = np.stack([values * mask, mask.astype(np.float64)], 1)
        delta = new - self.s[nodes]
        self.s[nodes] = new
        support, term = nodes, delta
        coefficients = self._coefficients()
        for k, c in enumerate(coefficients):
            self.f[support] += c * term  # support is unique: plain fancy-index add is exact
            if k + 1 < len(coefficients):  # the last term needs no further push
                support, term = self.adj.push(support, term)

    def estimate(self, prior: float, shrink: float = 0.05) -> np.ndarray:
        """float32[N]: smoothed value, shrunk toward `prior` by how little evidence reached a node."""
        num, den = self.f[:, 0], np.maximum(self.f[:, 1], 0.0)
        smooth = np.where(den > 1e-8, num / np.maximum(den, 1e-8), prior)
        evidence = den / (den + shrink)
        return (evidence * smooth + (1 - evidence) * prior).astype(np.float32)
