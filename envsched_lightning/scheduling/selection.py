"""Constrained greedy batch fill shared by every scheduler.

Priorities come from the strategy; this module turns them into a batch that honours the
environment quotas and the similarity penalty. The penalty only ever lowers a candidate's value,
so a lazy-greedy heap is exact: a popped entry whose value is still current is the true maximum.
Only the top few multiples of the batch are ever sorted, so a step stays O(N) at 1M tasks.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from .constraints import EnvQuota, SimilarityPenalty
from .similarity import SimilarityUnion


@dataclass
class FillResult:
    indices: list[int]
    penalties: list[float]  # penalty applied to each chosen task at the moment it was picked
    relaxations: list[str] = field(default_factory=list)


def _tiered(keys: np.ndarray, eligible: np.ndarray | None) -> np.ndarray:
    """One scalar order: every eligible task before every ineligible one, priority within a tier."""
    finite = np.isfinite(keys)
    lo, hi = (float(keys[finite].min()), float(keys[finite].max())) if finite.any() else (0.0, 0.0)
    keys = np.where(finite, keys, lo - 1.0)  # a non-finite priority ranks last in its tier
    if eligible is None or eligible.all():
        return keys
    return np.where(eligible, keys, keys - (hi - lo + 2.0))


def _descending(keys: np.ndarray, members: np.ndarray | None = None, chunk: int = 256,
                head: np.ndarray | None = None) -> Iterator[np.ndarray]:  # fmt: skip
    """Yield indices in descending key order (ties by index), sorting only as far as needed.

    `members` (ascending task indices) restricts the order to them; `head`, the first block of
    this very order computed earlier, is yielded as is instead of being computed again."""
    neg = -keys if members is None else -keys[members]  # one O(N) array for every block
    n = neg.shape[0]
    start = 0
    if head is not None:
        yield head
        start, chunk = head.shape[0], chunk * 4
    while start < n:
        stop = min(n, start + chunk)
        part = np.argpartition(neg, stop - 1)[:stop] if stop < n else np.arange(n)
        order = part[np.lexsort((part, neg[part]))]  # positions follow indices: ties by index
        block = order[start:stop]
        yield block if members is None else members[block]
        start, chunk = stop, chunk * 4


def _anything(tasks: np.ndarray | int) -> np.ndarray:
    return np.ones(np.shape(tasks), dtype=bool)


def fill_batch(
    keys: np.ndarray,
    batch_size: int,
    env_ids: np.ndarray,
    num_envs: int,
    quota: EnvQuota | None = None,
    penalty: SimilarityPenalty | None = None,
    eligible: np.ndarray | None = None,
    env_members: list[np.ndarray] | None = None,
) -> FillResult:
    """`env_members[e]`: task indices of environment e (computed once by the scheduler)."""
    keys = _tiered(np.asarray(keys, dtype=np.float64), eligible)
    if quota is None and penalty is None:
        top = next(_descending(keys, chunk=batch_size))
        return FillResult([int(i) for i in top[:batch_size]], [0.0] * batch_size)

    chosen: list[int] = []
    pens: list[float] = []
    counts = np.zeros(num_envs, dtype=np.int64)
    hi = np.full(num_envs, batch_size, dtype=np.int64)
    lo = np.zeros(num_envs, dtype=np.int64)
    if quota is not None:
        available = np.bincount(env_ids, minlength=num_envs)
        elig = np.ones(keys.shape[0], bool) if eligible is None else eligible
        learnable = np.bincount(env_ids[elig], minlength=num_envs) > 0
        lo, hi = quota.limits(batch_size, available, learnable)

    maxsim = np.zeros(keys.shape[0])  # each task's largest similarity to the batch so far
    taken = np.zeros(keys.shape[0], dtype=bool)
    weight = 0.0
    head = None  # the first block of the overall order, computed once
    if penalty is not None and penalty.lam > 0:
        head = next(_descending(keys, chunk=2 * batch_size))
        weight = penalty.weight(float(np.std(keys[head])))

    similarity = penalty.similarity if penalty is not None else None
    relations = similarity.parts if isinstance(similarity, SimilarityUnion) else (similarity,)

    def take(i: int) -> None:
        chosen.append(i)
        pens.append(weight * float(maxsim[i]))
        taken[i] = True
        counts[env_ids[i]] += 1
        if weight > 0:
            for part in relations:  # a row lists each neighbour once, and relations share no pair
                nbr, w = part.neighbours(i)
                maxsim[nbr] = np.maximum(maxsim[nbr], w)

    def greedy(order: Iterator[np.ndarray], need: int, ok: Callable[[np.ndarray | int], np.ndarray]) -> None:
        heap: list[tuple[float, int]] = []
        pending = next(order, None)  # next block, all with keys below the current block's
        got = 0
        while got < need:
            frontier = keys[pending[0]] if pending is not None and len(pending) else -np.inf
            if not heap or -heap[0][0] < frontier:  # an unpenalised later task may now win
                if pending is None:
                    return
                block = pending[~taken[pending] & ok(pending)]
                heap.extend(zip((weight * maxsim[block] - keys[block]).tolist(), block.tolist()))
                heapq.heapify(heap)
                pending = next(order, None)
                continue
            neg, i = heapq.heappop(heap)
            if taken[i] or not ok(i):
                continue
            cur = keys[i] - weight * maxsim[i]
            if cur < -neg - 1e-12:  # stale: its penalty grew since it was pushed
                heapq.heappush(heap, (-cur, i))
                continue
            take(i)
            got += 1

    for e in np.flatnonzero(lo > 0).tolist():  # guaranteed minimum slots first
        members = env_members[e] if env_members is not None else np.flatnonzero(env_ids == e)
        greedy(_descending(keys, members, chunk=int(lo[e]) * 2), int(lo[e]), _anything)
    greedy(_descending(keys, chunk=2 * batch_size, head=head), batch_size - len(chosen),
           lambda i: counts[env_ids[i]] < hi[env_ids[i]])  # fmt: skip
    relax = list(quota.relaxations) if quota is not None else []
    if len(chosen) < batch_size:  # caps could not be met with the tasks left: fill, and say so
        relax.append(f"caps left {batch_size - len(chosen)} slots empty; filled ignoring caps")
        greedy(_descending(keys, chunk=2 * batch_size), batch_size - len(chosen), _anything)
    if quota is not None:
        quota.observe_batch(counts_final := np.bincount(env_ids[chosen], minlength=num_envs))
        over = np.flatnonzero(counts_final > hi)
        relax += [f"{quota.env_names[e]} above its cap ({counts_final[e]} > {hi[e]})" for e in over]
    return FillResult(chosen, pens, relax)
