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

from .graph import CROSS, INTRA, MERGE_MAX_EDGES, TaskGraph
from .similarity import SparseSimilarity, row_positions


_BLOCK = 1 << 21  # edges per block of a full pass: bounds the temporaries whatever the graph's size


class RowNormalizedGraph:
    """A = D^-1 (W_intra + cross_weight W_cross), rows summing to 1 (0 for isolated nodes).

    Kept as the relations themselves plus the degree vector, no per-edge row or value arrays; a
    merged copy of both relations only while the graph has at most `MERGE_MAX_EDGES` edges (at 1M
    tasks those copies were most of the scheduler's memory). A full pass runs over blocks of rows,
    relation by relation, so its temporaries stay bounded."""

    def __init__(self, graph: TaskGraph, cross_weight: float = 0.5) -> None:
        n = self.num_nodes = graph.num_nodes
        self.parts = [(rel, scale) for rel, scale in ((graph.relation(INTRA), 1.0), (graph.relation(CROSS), cross_weight))
                      if scale > 0]  # the intra relation is always there  # fmt: skip
        if len(self.parts) > 1 and graph.num_edges <= MERGE_MAX_EDGES:  # small: one merged copy, one lookup per row
            scaled = [SparseSimilarity(r.indptr, r.indices, r.weights * scale if scale != 1.0 else r.weights)
                      for r, scale in self.parts]  # fmt: skip
            self.parts = [(SparseSimilarity.concat_rows(scaled), 1.0)]
        deg = np.zeros(n)
        for _, (rel, scale), r0, r1, rows, pos in self._blocks():
            deg[r0:r1] += np.bincount(rows - r0, weights=self._weights(rel, scale, pos), minlength=r1 - r0)
        self.deg = np.maximum(deg, 1e-12)
        # a small graph keeps A's columns as values (what a push reads); a large one computes them per push
        self._t_vals = None
        self._slot: np.ndarray | None = None
        if len(self.parts) == 1 and graph.num_edges <= MERGE_MAX_EDGES:
            rel, scale = self.parts[0]
            self._t_vals = self._weights(rel, scale, slice(None)) / self.deg[rel.indices]

    @staticmethod
    def _weights(rel: SparseSimilarity, scale: float, pos: slice | np.ndarray) -> np.ndarray:
        return (rel.weights[pos] * scale if scale != 1.0 else rel.weights[pos]).astype(np.float64)

    def _blocks(self):
        """(first part?, (relation, scale), r0, r1, rows int64[e], entry slice) over row blocks of
        about `_BLOCK` entries, relation by relation."""
        for k, (rel, scale) in enumerate(self.parts):
            indptr = rel.indptr
            r0 = 0
            while r0 < self.num_nodes:
                r1 = int(np.searchsorted(indptr, indptr[r0] + _BLOCK, side="right")) - 1
                r1 = min(self.num_nodes, max(r1, r0 + 1))
                rows = np.repeat(np.arange(r0, r1), np.diff(indptr[r0 : r1 + 1]))
                yield k == 0, (rel, scale), r0, r1, rows, slice(int(indptr[r0]), int(indptr[r1]))
                r0 = r1

    def matmul(self, x: np.ndarray) -> np.ndarray:
        """A @ x for dense x [N, C]."""
        out = np.zeros_like(x)
        for _, (rel, scale), r0, r1, rows, pos in self._blocks():
            vals = self._weights(rel, scale, pos) / self.deg[rows]  # A[i, j]
            cols = rel.indices[pos]
            for c in range(x.shape[1]):
                out[r0:r1, c] += np.bincount(rows - r0, weights=vals * x[cols, c], minlength=r1 - r0)
        return out

    def push(self, nodes: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A @ v for v sparse (v[nodes] = x [S, C], zero elsewhere) -> (support, values [S', C]).

        Pushing forward needs A's columns. Both relations are symmetric, so column j holds the
        neighbours i of row j, with A[i, j] = w(j, i) / deg(i): no transpose is stored."""
        if nodes.size == 0:
            return nodes, x
        if self._t_vals is not None:
            rel = self.parts[0][0]
            seg, pos = row_positions(rel.indptr, nodes)
            tgt, w = rel.indices[pos], self._t_vals[pos]
        else:
            segs, tgts, ws = [], [], []
            for rel, scale in self.parts:
                seg, pos = row_positions(rel.indptr, nodes)
                tgt = rel.indices[pos]
                segs.append(seg)
                tgts.append(tgt)
                ws.append(self._weights(rel, scale, pos) / self.deg[tgt])
            seg, tgt, w = np.concatenate(segs), np.concatenate(tgts), np.concatenate(ws)
        if self.num_nodes <= 64 * tgt.shape[0]:  # many targets: mark them in an N-long mask, no sort
            touched = np.zeros(self.num_nodes, dtype=bool)
            touched[tgt] = True
            support = np.flatnonzero(touched)
            if self._slot is None:
                self._slot = np.empty(self.num_nodes, dtype=np.int32)  # scratch: target -> its row of out
            self._slot[support] = np.arange(support.shape[0], dtype=np.int32)
            slot = self._slot[tgt]
        else:  # few targets on a large graph: O(touched), not O(N)
            support, slot = np.unique(tgt, return_inverse=True)
        size = support.shape[0]
        out = np.empty((size, x.shape[1]))
        for c in range(x.shape[1]):
            out[:, c] = np.bincount(slot, weights=w * x[seg, c], minlength=size)
        return support.astype(np.int64, copy=False), out


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
        if not mask.any():  # nothing observed yet (a new scheduler): f = P 0, no pass over the edges
            self.f = np.zeros_like(self.s)
            return
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
        # evidence x (num / den) + (1 - evidence) x prior with evidence = den / (den + shrink), in one pass
        den = np.maximum(self.f[:, 1], 0.0)
        den += shrink
        out = np.asarray(prior, dtype=np.float64) * shrink + self.f[:, 0]
        out /= den
        return out.astype(np.float32)
