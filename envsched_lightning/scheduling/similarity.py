"""Sparse task-to-task similarity from what tasks touch (tools, state keys, verifier).

Jaccard overlap is estimated with MinHash and neighbours are found by LSH banding, so building a
k-nearest-neighbour graph over 1M tasks is O(N k), never the O(N^2) dense pass. Edges only join
tasks of the same environment: tool names mean something only inside their environment.
"""

from __future__ import annotations

import queue
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .features import hashed_codes
from .task_table import TaskTable, as_task_table
from .types import TaskSpec

_PRIME = (1 << 31) - 1
AHEAD_MIN_TASKS = 100_000  # from here a graph build makes the next band's candidates on a second thread
PARALLEL_MIN_PAIRS = 1 << 20  # from here pairs are weighed on two threads


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
    indices: np.ndarray  # int32[E]: half the memory of int64, and any pool this side of 2^31 tasks
    weights: np.ndarray  # float32[E]
    wide: bool = False  # int64 indices and float64 weights: for a small copy read one row at a time

    def __post_init__(self) -> None:
        # numpy converts int32 indices and float32 values on every fancy-indexed read, which costs
        # more than the read itself for one row of ~20 neighbours
        self.indices = np.asarray(self.indices, dtype=np.int64 if self.wide else np.int32)
        if self.wide:
            self.weights = np.asarray(self.weights, dtype=np.float64)

    @property
    def num_nodes(self) -> int:
        return int(self.indptr.shape[0] - 1)

    def sources(self) -> np.ndarray:
        """int64[E]: the row (node) each stored edge belongs to, aligned with `indices`."""
        return np.repeat(np.arange(self.num_nodes), np.diff(self.indptr))

    @classmethod
    def empty(cls, n: int) -> SparseSimilarity:
        return cls(np.zeros(n + 1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))

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
        indices = np.empty(int(indptr[-1]), np.int32)
        weights = np.empty(int(indptr[-1]), np.float32)
        before = np.zeros(n, np.int64)  # entries of earlier parts in each row
        for p in parts:
            rows = p.sources()
            pos = indptr[:-1][rows] + before[rows] + (np.arange(p.indices.size) - p.indptr[:-1][rows])
            indices[pos], weights[pos] = p.indices, p.weights
            before += np.diff(p.indptr)
        return cls(indptr, indices, weights)

    @classmethod
    def from_pairs(cls, n: int, lo: np.ndarray, hi: np.ndarray, w: np.ndarray) -> SparseSimilarity:
        """Distinct undirected pairs (lo < hi) with their weights, stored in both directions.

        Row r lists its smaller neighbours (the pairs with hi == r) before its larger ones (lo ==
        r), each in column order. Pairs already sorted by (lo, hi), as `TopK.result` gives them,
        are the second half as they stand: only the first half needs a sort."""
        lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
        w = np.asarray(w, np.float32)
        packed = (lo.astype(np.uint64) << np.uint64(32)) | hi.astype(np.uint64)
        if packed.size > 1 and not (packed[1:] > packed[:-1]).all():
            order = np.argsort(packed)
            lo, hi, w = lo[order], hi[order], w[order]
        del packed
        below = np.bincount(hi, minlength=n)  # per row: neighbours with a smaller index
        above = np.bincount(lo, minlength=n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(below + above, out=indptr[1:])
        indices = np.empty(int(indptr[-1]), np.int32)
        weights = np.empty(int(indptr[-1]), np.float32)
        rank = np.arange(lo.shape[0], dtype=np.int64)
        # larger neighbours: runs of equal lo, in hi order, after the row's smaller ones
        pos = indptr[:-1][lo] + below[lo] + rank - (np.cumsum(above) - above)[lo]
        indices[pos], weights[pos] = hi, w
        # smaller neighbours: the pairs by (hi, lo); distinct keys, so any sort gives that order
        order = np.argsort((hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64))
        h = hi[order]
        pos = indptr[:-1][h] + rank - (np.cumsum(below) - below)[h]
        indices[pos], weights[pos] = lo[order], w[order]
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
        return cls(indptr, dst.astype(np.int32), w)


@dataclass
class SimilarityUnion:
    """Several relations that never share a pair, read as one (what `concat_rows` would build),
    without copying their edges: the similarity penalty asks only for a chosen task's row."""

    parts: tuple[SparseSimilarity, ...]

    @property
    def num_nodes(self) -> int:
        return self.parts[0].num_nodes

    def neighbours(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        rows = [p.neighbours(i) for p in self.parts]
        return np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows])

    def pair(self, i: int, j: int) -> float:
        return max(p.pair(i, j) for p in self.parts)


def ahead(items: Iterable, tasks: int) -> Iterator:
    """`items`, with the next one computed on another thread while the caller works on this one.

    A graph build alternates between making a band's candidate pairs and folding them into the
    running top k; both are long numpy calls that release the GIL, so on two cores they overlap.
    One item is made ahead (memory: one more band), in the order `items` gives them, so results
    are the same as a plain loop. An exception in `items` is raised here. Graphs of fewer than
    `AHEAD_MIN_TASKS` tasks (where a thread costs more than it saves) take the plain loop."""
    if tasks < AHEAD_MIN_TASKS:
        yield from items
        return
    box: queue.Queue = queue.Queue(maxsize=1)
    done = object()
    stop = threading.Event()

    def make() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        box.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            box.put((done, None))
        except BaseException as err:  # handed to the consumer, raised there
            box.put((done, err))

    worker = threading.Thread(target=make, name="envsched-graph-build", daemon=True)
    worker.start()
    try:
        while True:
            item, err = box.get()
            if item is done:
                if err is not None:
                    raise err
                return
            yield item
    finally:
        stop.set()
        worker.join()


def _token_ids(specs: Sequence[TaskSpec] | TaskTable) -> tuple[np.ndarray, np.ndarray]:
    """(task index, 31-bit token hash) for every tool / state key / verifier a task names; a task
    naming none gets one shared ``<none>`` token (tasks with no tools at all are alike in that)."""
    t = as_task_table(specs)
    n = len(t)
    indptr, kind, code = t.token_lists(("tools", "state_keys", "verifier"))
    empty = t.vocab.index("") if "" in t.vocab else -1  # the code of "no verifier"
    keep = (kind != 2) | (code != empty)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))[keep]
    kind, code = kind[keep], code[keep]
    toks = np.empty(code.shape[0], np.int64)
    for k, prefix in enumerate(("t:", "s:", "v:")):
        sel = kind == k
        toks[sel] = hashed_codes(t.vocab, code[sel], prefix).astype(np.int64) & 0x7FFFFFFF
    bare = np.flatnonzero(np.bincount(rows, minlength=n) == 0)
    if bare.size:
        rows = np.concatenate([rows, bare])
        toks = np.concatenate([toks, np.full(bare.size, zlib.crc32(b"<none>") & 0x7FFFFFFF, np.int64)])
    return rows, toks


_CHUNK = 1 << 20  # rows per block of hashing or weighing: bounds temporaries whatever N


def minhash(rows: np.ndarray, toks: np.ndarray, n: int, num_hashes: int, seed: int = 0) -> np.ndarray:
    """int64[n, num_hashes]: the minimum of each of `num_hashes` universal hashes over a task's
    tokens (`_PRIME` for a task without any). Tokens are grouped by task and each task's minima
    taken over its own run (`np.minimum.reduceat`), block by block of tasks."""
    rng = np.random.default_rng(seed)
    a = rng.integers(1, _PRIME, num_hashes)
    b = rng.integers(0, _PRIME, num_hashes)
    rows = np.asarray(rows, np.int64)
    if rows.size > 1 and (rows[1:] < rows[:-1]).any():
        order = np.argsort(rows, kind="stable")
        rows, toks = rows[order], toks[order]
    out = np.full((n, num_hashes), _PRIME, dtype=np.int64)
    bounds = np.searchsorted(rows, np.arange(n + 1))  # tokens of task i: bounds[i]:bounds[i + 1]
    block = 1 << 16  # tasks per block: bounds the [tokens, hashes] temporaries whatever N
    for t0 in range(0, n, block):
        t1 = min(n, t0 + block)
        lo, hi = int(bounds[t0]), int(bounds[t1])
        if hi == lo:
            continue
        tasks = t0 + np.flatnonzero(bounds[t0 + 1 : t1 + 1] > bounds[t0:t1])
        hv = toks[lo:hi, None].astype(np.int64) * a[None, :]
        hv += b[None, :]
        hv %= _PRIME
        out[tasks] = np.minimum.reduceat(hv, bounds[tasks] - lo, axis=0)
    return out


def lsh_bands(
    signatures: np.ndarray, groups: np.ndarray, bands: int, window: int, rng: np.random.Generator,
    unit_patterns: np.ndarray | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Candidate pairs with their weights (`weigh_pairs`), one band at a time: tasks of one group
    whose signature agrees on a whole band.

    Within a band bucket, tasks are put in a random order and each is paired with the next
    `window`, which keeps the pair count O(N * window) per band even for huge identical buckets.
    The signatures are laid out in that order once per band, so weighing a pair reads two rows
    `off` apart instead of two random rows (at 1M tasks, the difference between cache hits and
    misses on every pair).
    """
    n, h = signatures.shape
    rows = max(1, h // bands)
    for b in range(bands):
        band = signatures[:, b * rows : (b + 1) * rows]
        bucket = (band * np.arange(1, rows + 1, dtype=np.int64)[None, :] * 1_000_003).sum(1) % _PRIME
        # by (group, bucket), ties in a random order: the order np.lexsort((random, bucket, groups))
        # gives, in one float sort and one stable integer sort (twice as fast at 1M)
        shuffled = np.argsort(rng.random(n))
        order = shuffled[np.argsort((groups * _PRIME + bucket)[shuffled], kind="stable")].astype(np.int32)
        sb, sg = bucket[order], groups[order]
        sig = signatures[order]
        unit = None if unit_patterns is None else unit_patterns[order]
        src, dst, w = [], [], []
        for off in range(1, window + 1):
            at = np.flatnonzero((sb[off:] == sb[:-off]) & (sg[off:] == sg[:-off]))
            src.append(order[at])
            dst.append(order[at + off])
            w.append(weigh_offset(sig, off, unit, at))
        del sig, unit, sb, sg, order  # the band's layout is not needed while its pairs are folded
        yield np.concatenate(src), np.concatenate(dst), np.concatenate(w)


_BITS = 24  # task index bits in a packed sort key: graphs of up to 16.7M tasks
_MASK = np.uint64((1 << _BITS) - 1)
_ODD1 = 0x9E3779  # an odd multiplier: invertible modulo 2^24
_INV1 = pow(_ODD1, -1, 1 << _BITS)


def _source_key(s: np.ndarray) -> np.ndarray:
    return (s * np.uint64(0x2545F491)) & _MASK


def _scramble(d: np.ndarray, s: np.ndarray) -> np.ndarray:
    """uint64: a bijection of neighbour d on [0, 2^24) keyed by its source s. Sorting by it breaks
    ties between equally weighted neighbours pseudo-randomly, differently for every source, and
    the same on every machine and whatever order the candidates came in."""
    with np.errstate(over="ignore"):
        x = d ^ _source_key(s)
        x *= np.uint64(_ODD1)
        x &= _MASK
        return x


def _unscramble(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return ((x * np.uint64(_INV1)) & _MASK) ^ _source_key(s)


class TopK:
    """Each node's k strongest neighbours over candidate pairs that arrive in batches.

    The k best of a union are the k best of (the k best so far, plus the new ones), so batches
    are folded in as they come and memory stays O(N k + batch), never O(all candidates). Every
    (source, neighbour) is one uint64 key: source, then 1 - weight quantised to 16 bits, then the
    neighbour scrambled per source (`_scramble`); sorted, each node's candidates come strongest
    first with pseudo-random tie-breaks, and a pair seen twice lies next to itself. The kept keys
    stay sorted in one array. A batch is folded in without sorting what is kept: a candidate not
    below its source's k-th kept key can never enter (the filter drops most of them once every
    node has k), and the rest are sorted alone and inserted. Weights are recomputed exactly for
    the kept pairs by the `weigh` given to `result` (a pair's weight is a function of the pair)."""

    def __init__(self, n: int, k: int) -> None:
        if n > 1 << _BITS:
            raise ValueError(f"at most {1 << _BITS:,} tasks per graph, got {n:,}")
        self.n, self.k = n, k
        self.keys = np.zeros(0, np.uint64)  # sorted; at most k per source
        self._count = np.zeros(n, np.int64)  # kept keys per source

    def add(self, src: np.ndarray, dst: np.ndarray, w: np.ndarray) -> None:
        """Fold in undirected candidate pairs (src[i], dst[i]) with weights w[i] in [0, 1]."""
        if self.k == 0:
            return
        keep = src != dst
        src, dst = src[keep].astype(np.uint64), dst[keep].astype(np.uint64)
        q = np.clip(w[keep], 0.0, 1.0).astype(np.float64)
        del keep
        np.subtract(1.0, q, out=q)
        q *= 0xFFFF
        q = np.rint(q).astype(np.uint64)  # strongest first
        q <<= np.uint64(24)
        bound = None
        full = self._count >= self.k
        if full.any():  # a candidate enters a full source only below its k-th kept key
            bound = np.full(self.n, np.iinfo(np.uint64).max, np.uint64)
            bound[full] = self.keys[np.cumsum(self._count)[full] - 1]
        del full
        parts = []
        for a, b in ((src, dst), (dst, src)):
            part = np.left_shift(a, np.uint64(40))
            part |= q
            part |= _scramble(b, a)
            parts.append(part if bound is None else part[part < bound[a]])
        del src, dst, q, bound
        key = np.concatenate(parts)
        del parts
        key.sort()
        if key.size:
            key = key[np.r_[True, key[1:] != key[:-1]]]  # a repeated pair is one candidate
        if self.keys.size and key.size:
            at = np.searchsorted(self.keys, key)
            fresh = (at >= self.keys.size) | (self.keys[np.minimum(at, self.keys.size - 1)] != key)
            key, at = key[fresh], at[fresh]
            count = self._count + np.bincount((key >> np.uint64(40)).astype(np.int64), minlength=self.n)
            key = np.insert(self.keys, at, key)  # one sorted array, no repeats
        elif self.keys.size:
            return
        else:
            count = np.bincount((key >> np.uint64(40)).astype(np.int64), minlength=self.n)
        kept = np.minimum(count, self.k)  # the first k of each source's run
        if kept.sum() < key.size:
            runs = np.concatenate([[0], np.cumsum(count)[:-1]])
            first = np.repeat(runs - np.concatenate([[0], np.cumsum(kept)[:-1]]), kept)
            key = key[first + np.arange(first.shape[0])]
        self.keys, self._count = key, kept

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(source, neighbour) int64 of every kept entry."""
        s = self.keys >> np.uint64(40)
        return s.astype(np.int64), _unscramble(self.keys & _MASK, s).astype(np.int64)

    def result(self, weigh) -> SparseSimilarity:
        """The kept neighbours, symmetrised (a pair kept by either end is an edge of both), weighted
        by ``weigh(src, dst) -> float32[P]`` for each distinct pair."""
        s, d = self.pairs()
        pair = (np.minimum(s, d).astype(np.uint64) << np.uint64(_BITS)) | np.maximum(s, d).astype(np.uint64)
        del s, d
        pair.sort()
        pair = pair[np.r_[True, pair[1:] != pair[:-1]]] if pair.size else pair
        lo, hi = (pair >> np.uint64(_BITS)).astype(np.int64), (pair & _MASK).astype(np.int64)
        del pair
        return SparseSimilarity.from_pairs(self.n, lo, hi, np.asarray(weigh(lo, hi), dtype=np.float32))


def weigh_pairs(sig: np.ndarray, src: np.ndarray, dst: np.ndarray, unit_patterns: np.ndarray | None) -> np.ndarray:
    """float32[P]: MinHash agreement of each pair, times (1 + cos) / 2 of their patterns, in blocks."""
    out = np.empty(src.shape[0], np.float32)
    chunk = 1 << 16  # rows of the signature gathered at once: small enough to stay in cache

    def weigh(a: int) -> None:
        s, d = src[a : a + chunk], dst[a : a + chunk]
        w = (np.count_nonzero(sig[s] == sig[d], axis=1) / sig.shape[1]).astype(np.float32)
        if unit_patterns is not None:
            w = w * (1.0 + (unit_patterns[s] * unit_patterns[d]).sum(1)) / 2.0
        out[a : a + chunk] = w

    on_cores(weigh, range(0, src.shape[0], chunk), large=src.shape[0] >= PARALLEL_MIN_PAIRS)
    return out


def on_cores(fn, items: Sequence, large: bool = True, workers: int = 2) -> None:
    """`fn(item)` for every item, on `workers` threads where `large` (numpy releases the GIL in
    the gathers and reductions that weighing is made of); each item writes its own slice, so the
    result does not depend on which thread ran it."""
    if not large or len(items) < 2:
        for item in items:
            fn(item)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="envsched-weigh") as pool:
        for _ in pool.map(fn, items):
            pass


def by_row_blocks(rows: np.ndarray, block_weights: Callable[[int, int], np.ndarray], chunk: int = 1 << 16) -> np.ndarray:
    """float32 weights of the pairs (r, r + off) for sorted `rows`, block by block:
    `block_weights(lo, hi)` weighs every row of lo..hi-1 against its partner from contiguous
    slices, and the block's own rows are picked out. Where most rows pair up, as in a band's
    bucket order, that is cheaper than gathering both sides pair by pair."""
    out = np.empty(rows.shape[0], np.float32)
    for a in range(0, rows.shape[0], chunk):
        part = rows[a : a + chunk]
        lo, hi = int(part[0]), int(part[-1]) + 1
        out[a : a + part.shape[0]] = block_weights(lo, hi)[part - lo]
    return out


def weigh_offset(sig: np.ndarray, off: int, unit_patterns: np.ndarray | None, at: np.ndarray) -> np.ndarray:
    """`weigh_pairs(sig, at, at + off, unit_patterns)` (the same values), for rows `off` apart."""
    if at.shape[0] * 4 < sig.shape[0]:  # few pairs: gather them
        return weigh_pairs(sig, at, at + off, unit_patterns)

    def block(lo: int, hi: int) -> np.ndarray:
        w = (np.count_nonzero(sig[lo + off : hi + off] == sig[lo:hi], axis=1) / sig.shape[1]).astype(np.float32)
        if unit_patterns is not None:
            w = w * (1.0 + (unit_patterns[lo + off : hi + off] * unit_patterns[lo:hi]).sum(1)) / 2.0
        return w

    return by_row_blocks(at, block)


def task_similarity(
    specs: Sequence[TaskSpec] | TaskTable, k: int = 10, num_hashes: int = 16, bands: int = 8, seed: int = 0,
    patterns: np.ndarray | None = None,
) -> SparseSimilarity:
    """Intra-environment kNN graph weighted by (MinHash-estimated) Jaccard overlap of what tasks touch.

    With `patterns` (float[N, D] execution-pattern vectors), a candidate's weight is scaled by
    ``(1 + cos) / 2`` of the two patterns, so among tasks with the same tools the k kept neighbours
    are those solved the same way (instances of one template before look-alikes). Candidates are
    folded into each task's running top k band by band, so memory stays O(N k).
    """
    table = as_task_table(specs)
    n = len(table)
    rows, toks = _token_ids(table)
    sig = minhash(rows, toks, n, num_hashes, seed).astype(np.int32)  # hashes are < 2^31: half the memory
    del rows, toks
    groups = table.env_ids.astype(np.int64)
    unit = None
    if patterns is not None:
        unit = patterns / np.maximum(np.linalg.norm(patterns, axis=1, keepdims=True), 1e-6)
    top = TopK(n, k)
    candidates = lsh_bands(sig, groups, bands, window=max(2, k // 2), rng=np.random.default_rng(seed),
                           unit_patterns=unit)  # fmt: skip
    for src, dst, w in ahead(candidates, tasks=n):
        keep = w > 0
        top.add(src[keep], dst[keep], w[keep])
    return top.result(lambda a, b: weigh_pairs(sig, a, b, unit))
