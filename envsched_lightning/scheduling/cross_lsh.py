"""Cross-environment kNN by random-hyperplane LSH, rebuilt incrementally as statistics change.

A task's embedding is its execution-pattern vector plus its observed reward statistics, centred
by a fixed (static) mean, so it moves only when that task's own statistics do. An edge between
two unchanged tasks therefore keeps its weight, and a rebuild can limit new candidates to the
tasks whose statistics changed: each of them meets its bucket neighbours in every table (under
hyperplanes drawn for this build), the old edges between unchanged tasks stay, and old edges
touching a changed task are re-weighed. The cost of a rebuild follows the number of changed tasks
plus one pass over the existing cross edges, not the pool size times the number of tables.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .similarity import SparseSimilarity, TopK, ahead, by_row_blocks

_CHUNK = 1 << 16  # rows per block when weighing candidate pairs: temporaries stay in cache


class CrossEnvLSH:
    def __init__(self, static: np.ndarray, env_ids: np.ndarray, k: int, tables: int = 6, bits: int = 10,
                 samples: int = 3, min_weight: float = 0.05) -> None:
        """`static`: float[N, S] pattern vectors, the leading columns of every embedding. All
        randomness (hyperplanes, bucket order) comes from the generator given to `build`."""
        if not 1 <= bits <= 15:
            raise ValueError(f"bits must be in [1, 15] (bucket ids are int16), got {bits}")
        self.centre = static.mean(0).astype(np.float32)
        self.env_ids, self.k = env_ids, k
        self.tables, self.bits, self.samples, self.min_weight = tables, bits, samples, min_weight

    def embed(self, vectors: np.ndarray) -> np.ndarray:
        """float32[N, D + 1]: static part centred, a small constant column (identical vectors stay
        similar after centring), rows scaled to unit length (cosine = dot product)."""
        v = vectors.astype(np.float32, copy=True)
        v[:, : self.centre.shape[0]] -= self.centre
        v = np.concatenate([v, np.full((v.shape[0], 1), 0.1, np.float32)], 1)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-6)

    def _codes(self, emb: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """int16[tables, N]: bucket of every task in every table, under hyperplanes drawn for this
        build (fresh planes each build vary which near neighbours a changed task meets)."""
        planes = rng.standard_normal((self.tables, emb.shape[1], self.bits)).astype(np.float32)
        weights = (1 << np.arange(self.bits)).astype(np.int16)
        return np.stack([((emb @ p) > 0).astype(np.int16) @ weights for p in planes])

    def _sample(self, emb: np.ndarray, codes: np.ndarray, nodes: np.ndarray | None,
                rng: np.random.Generator) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:  # fmt: skip
        """(src, dst, weight) per table: tasks in a random order inside their bucket, and each node of
        `nodes` (None: every task) paired with the `samples` tasks on either side of it in that
        order (same bucket, different environment). A pair may come out twice: `TopK` keeps one.
        Embeddings are laid out in the table's order, so weighing reads nearby rows."""
        n = codes.shape[1]
        env_ids = self.env_ids
        for code in codes:
            src_all, dst_all, w_all = [], [], []
            order = np.argsort((code.astype(np.int64) << 40) | rng.integers(0, 1 << 40, n))
            code_o, env_o, emb_o = code[order], env_ids[order], emb[order]
            if nodes is None:  # every task: its backward pairs are another's forward ones, so one side does
                pos, sides = np.arange(n), (1,)
            else:
                where = np.empty(n, np.int64)
                where[order] = np.arange(n)
                pos, sides = where[nodes], (-1, 1)
            for off in range(1, self.samples + 1):
                for other in (pos + side * off for side in sides):
                    ok = (other >= 0) & (other < n)
                    a, b = pos[ok], other[ok]
                    keep = (code_o[a] == code_o[b]) & (env_o[a] != env_o[b])
                    a, b = a[keep], b[keep]
                    src_all.append(order[a])
                    dst_all.append(order[b])
                    w_all.append(self._weigh(emb_o, a, b) if nodes is not None else self._weigh_offset(emb_o, a, off))
            yield np.concatenate(src_all), np.concatenate(dst_all), np.concatenate(w_all)

    @staticmethod
    def _weigh(emb: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        out = np.empty(src.shape[0], np.float32)
        for a in range(0, src.shape[0], _CHUNK):
            b = a + _CHUNK
            out[a:b] = np.einsum("ij,ij->i", emb[src[a:b]], emb[dst[a:b]])
        return np.clip(out, 0.0, 1.0)

    @staticmethod
    def _weigh_offset(emb: np.ndarray, src: np.ndarray, off: int) -> np.ndarray:
        """`_weigh(emb, src, src + off)` (the same values) for sorted `src`, from row blocks (a full
        build pairs most rows with the row `off` further on)."""
        def block(lo: int, hi: int) -> np.ndarray:
            return np.einsum("ij,ij->i", emb[lo:hi], emb[lo + off : hi + off])

        return np.clip(by_row_blocks(src, block, _CHUNK), 0.0, 1.0)

    def build(self, vectors: np.ndarray, rng: np.random.Generator, changed: np.ndarray | None = None,
              previous: SparseSimilarity | None = None) -> SparseSimilarity:
        """Cross edges for `vectors` [N, D]. With `changed` (task indices whose vectors moved since
        `previous` was built), only those tasks draw new candidates; otherwise every task does."""
        n = vectors.shape[0]
        emb = self.embed(vectors)
        codes = self._codes(emb, rng)
        incremental = changed is not None and previous is not None
        nodes = np.asarray(changed, dtype=np.int64) if incremental else None
        top = TopK(n, self.k)
        if incremental:  # the old edges first: between unchanged tasks their weight is unchanged
            old_src, old_dst = previous.sources(), previous.indices.astype(np.int64)
            half = old_src < old_dst  # each undirected edge once
            old_src, old_dst = old_src[half], old_dst[half]
            moved = np.zeros(n, dtype=bool)
            moved[nodes] = True
            old_w = previous.weights[half].copy()
            touched = moved[old_src] | moved[old_dst]
            old_w[touched] = self._weigh(emb, old_src[touched], old_dst[touched])
            keep = old_w > self.min_weight
            top.add(old_src[keep], old_dst[keep], old_w[keep])
            del old_src, old_dst, old_w, touched, keep
        for src, dst, w in ahead(self._sample(emb, codes, nodes, rng), tasks=n):
            keep = w > self.min_weight
            top.add(src[keep], dst[keep], w[keep])
        return top.result(lambda a, b: self._weigh(emb, a, b))
