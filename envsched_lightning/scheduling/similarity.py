"""Sparse task-to-task similarity from what tasks touch (tools, state keys, verifier).

Jaccard overlap is estimated with MinHash and neighbours are found by LSH banding, so building a
k-nearest-neighbour graph over 1M tasks is O(N k), never the O(N^2) dense pass. Edges only join
tasks of the same environment: tool names mean something only inside their environment.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .types import TaskSpec

_PRIME = (1 << 31) - 1


def max_per_key(key: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct keys, the largest weight of each): one int64 sort, no multi-key lexsort."""
    order = np.argsort(key)
    key, w = key[order], w[order]
    if not key.size:
        return key, w
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    return key[starts], np.maximum.reduceat(w, starts)


def row_positions(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(segment, position) of every stored entry of `rows` in a CSR: `segment` says which of
    `rows` an entry belongs to, `position` indexes the CSR's entry arrays. O(entries), no loop."""
    starts = indptr[rows]
    lens = indptr[rows + 1] - starts
    seg = np.repeat(np.arange(rows.shape[0]), lens)
    pos = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(int(lens.sum()))
    return seg, pos


@dataclass
class SparseSimilarity:
    """Symmetric kNN similarity in CSR form: ``neighbours(i)`` are (indices, weights in (0, 1])."""

    indptr: np.ndarray  # int64[N + 1]
    indices: np.ndarray  # int64[E]
    weights: np.ndarray  # float32[E]

    @property
    def num_nodes(self) -> int:
        return int(self.indptr.shape[0] - 1)

    def sources(self) -> np.ndarray:
        """int64[E]: the row (node) each stored edge belongs to, aligned with `indices`."""
        return np.repeat(np.arange(self.num_nodes), np.diff(self.indptr))

    @classmethod
    def empty(cls, n: int) -> SparseSimilarity:
        return cls(np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))

    def neighbours(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.indptr[i], self.indptr[i + 1]
        return self.indices[a:b], self.weights[a:b]

    def neighbour_ids(self, nodes: np.ndarray) -> np.ndarray:
        """int64[sum of degrees]: the neighbours of every node in `nodes`, concatenated (repeats kept)."""
        return self.indices[row_positions(self.indptr, nodes)[1]]

    def neighbour_max(self, values: np.ndarray, fill: float) -> np.ndarray:
        """float64[N]: the largest of `values` over each node's neighbours (`fill` for a node with none)."""
        out = np.full(self.num_nodes, fill, dtype=np.float64)
        rows = np.flatnonzero(np.diff(self.indptr) > 0)
        if rows.size:
            out[rows] = np.maximum.reduceat(np.asarray(values, dtype=np.float64)[self.indices], self.indptr[rows])
        return out

    def pair(self, i: int, j: int) -> float:
        nbr, w = self.neighbours(i)
        hit = np.flatnonzero(nbr == j)
        return float(w[hit[0]]) if hit.size else 0.0

    @classmethod
    def concat_rows(cls, parts: Sequence[SparseSimilarity]) -> SparseSimilarity:
        """Row i lists row i of every part in turn: O(E), no sort. A pair stored by several parts
        appears once per part, so use it for relations that are disjoint (intra and cross)."""
        n = parts[0].num_nodes
        indptr = np.sum([p.indptr for p in parts], axis=0)
        indices = np.empty(int(indptr[-1]), np.int64)
        weights = np.empty(int(indptr[-1]), np.float32)
        before = np.zeros(n, np.int64)  # entries of earlier parts in each row
        for p in parts:
            rows = p.sources()
            pos = indptr[:-1][rows] + before[rows] + (np.arange(p.indices.size) - p.indptr[:-1][rows])
            indices[pos], weights[pos] = p.indices, p.weights
            before += np.diff(p.indptr)
        return cls(indptr, indices, weights)

    @classmethod
    def from_edges(cls, n: int, src: np.ndarray, dst: np.ndarray, w: np.ndarray) -> SparseSimilarity:
        """Symmetrise (max weight per pair), drop self loops, and pack as CSR."""
        src, dst, w = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([w, w])
        keep = src != dst
        key, w = max_per_key(src[keep].astype(np.int64) * n + dst[keep], w[keep].astype(np.float32))  # (row, column)
        src, dst = key // n, key % n
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        return cls(indptr, dst.astype(np.int64), w)


def _token_ids(specs: Sequence[TaskSpec]) -> tuple[np.ndarray, np.ndarray]:
    """(task index, 31-bit token hash) for every tool / state key / verifier a task names."""
    cache: dict[str, int] = {}
    rows: list[int] = []
    toks: list[int] = []
    for i, s in enumerate(specs):
        names = [f"t:{t}" for t in s.tools] + [f"s:{k}" for k in s.state_keys] + ([f"v:{s.verifier}"] if s.verifier else [])
        if not names:
            names = ["<none>"]  # tasks with no tools at all are alike in that
        for name in names:
            h = cache.get(name)
            if h is None:
                h = cache[name] = zlib.crc32(name.encode()) & 0x7FFFFFFF
            rows.append(i)
            toks.append(h)
    return np.asarray(rows, dtype=np.int64), np.asarray(toks, dtype=np.int64)


def minhash(rows: np.ndarray, toks: np.ndarray, n: int, num_hashes: int, seed: int = 0) -> np.ndarray:
    """int64[n, num_hashes]: the minimum of each of `num_hashes` universal hashes over a task's tokens."""
    rng = np.random.default_rng(seed)
    a = torch.from_numpy(rng.integers(1, _PRIME, num_hashes))
    b = torch.from_numpy(rng.integers(0, _PRIME, num_hashes))
    t = torch.from_numpy(toks)[:, None]
    hv = (t * a[None, :] + b[None, :]) % _PRIME  # [T, H]
    out = torch.full((n, num_hashes), _PRIME, dtype=torch.int64)
    out.scatter_reduce_(0, torch.from_numpy(rows)[:, None].expand_as(hv), hv, reduce="amin")
    return out.numpy()


def lsh_candidates(
    signatures: np.ndarray, groups: np.ndarray, bands: int, window: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs: tasks of one group whose signature agrees on a whole band.

    Within a band bucket, tasks are put in a random order and each is paired with the next
    `window`, which keeps the pair count O(N * bands * window) even for huge identical buckets.
    """
    n, h = signatures.shape
    rows = max(1, h // bands)
    src_all, dst_all = [], []
    for b in range(bands):
        band = signatures[:, b * rows : (b + 1) * rows]
        bucket = (band * np.arange(1, rows + 1, dtype=np.int64)[None, :] * 1_000_003).sum(1) % _PRIME
        order = np.lexsort((rng.random(n), bucket, groups))
        sb, sg = bucket[order], groups[order]
        for off in range(1, window + 1):
            same = (sb[off:] == sb[:-off]) & (sg[off:] == sg[:-off])
            src_all.append(order[:-off][same])
            dst_all.append(order[off:][same])
    if not src_all:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(src_all), np.concatenate(dst_all)


def top_k_per_node(n: int, src: np.ndarray, dst: np.ndarray, w: np.ndarray, k: int) -> SparseSimilarity:
    """Keep each node's k strongest candidate edges (both directions count), then symmetrise."""
    # one entry per unordered pair (bands and tables repeat pairs), with its largest weight
    lo, hi = np.minimum(src, dst).astype(np.int64), np.maximum(src, dst).astype(np.int64)
    keep = lo != hi
    key, w = max_per_key(lo[keep] * n + hi[keep], np.clip(np.asarray(w, dtype=np.float64)[keep], 0.0, 1.0))
    s2, d2 = np.concatenate([key // n, key % n]), np.concatenate([key % n, key // n])
    w2 = np.concatenate([w, w])
    # strongest first within each source: one int64 sort on (source, 32-bit quantised 1 - w)
    rank_key = (s2 << 32) | np.round((1.0 - w2) * 0xFFFFFFFF).astype(np.int64)
    order = np.argsort(rank_key)
    s2, d2, w2 = s2[order], d2[order], w2[order]
    starts = np.searchsorted(s2, np.arange(n))
    rank = np.arange(s2.shape[0]) - starts[s2]
    keep = rank < k
    return SparseSimilarity.from_edges(n, s2[keep], d2[keep], w2[keep])


def task_similarity(
    specs: Sequence[TaskSpec], k: int = 10, num_hashes: int = 16, bands: int = 8, seed: int = 0,
    patterns: np.ndarray | None = None,
) -> SparseSimilarity:
    """Intra-environment kNN graph weighted by (MinHash-estimated) Jaccard overlap of what tasks touch.

    With `patterns` (float[N, D] execution-pattern vectors), a candidate's weight is scaled by
    ``(1 + cos) / 2`` of the two patterns, so among tasks with the same tools the k kept neighbours
    are those solved the same way (instances of one template before look-alikes).
    """
    n = len(specs)
    rows, toks = _token_ids(specs)
    sig = minhash(rows, toks, n, num_hashes, seed)
    env_index: dict[str, int] = {}
    groups = np.fromiter((env_index.setdefault(s.env, len(env_index)) for s in specs), dtype=np.int64, count=n)
    src, dst = lsh_candidates(sig, groups, bands, window=max(2, k // 2), rng=np.random.default_rng(seed))
    w = (sig[src] == sig[dst]).mean(1).astype(np.float32)
    if patterns is not None:
        v = patterns / np.maximum(np.linalg.norm(patterns, axis=1, keepdims=True), 1e-6)
        w = w * (1.0 + (v[src] * v[dst]).sum(1)) / 2.0
    keep = w > 0
    return top_k_per_node(n, src[keep], dst[keep], w[keep], k)
