"""Constrained greedy batch fill shared by every scheduler.

Priorities come from the strategy; this module turns them into a batch that honours the
environment quotas and the similarity penalty. The penalty only ever lowers a candidate's value,
so a lazy-greedy heap is exact: a popped entry whose value is still current is the true maximum.
Tasks enter the heap in blocks of descending priority, read only as far as the fill needs; on a
large pool each environment is read apart, so one at its cap is never read again. Nothing is
sorted beyond what the heap holds, so a step stays O(N) at 1M tasks.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from .constraints import EnvQuota, SimilarityPenalty
from .similarity import SimilarityUnion

_MIN_CHUNK = 32  # smallest first block per environment (a step reads about two of them per environment)
# from this pool size the capped fill reads each environment apart (measured at batch 512: one order
# is faster up to 100k tasks, a stream per environment from 200k)
_BY_ENV_MIN_TASKS = 150_000


@dataclass
class FillResult:
    indices: list[int]
    penalties: list[float]  # penalty applied to each chosen task at the moment it was picked
    relaxations: list[str] = field(default_factory=list)
    copy_ranks: list[int] | None = None  # per pick, its near-copy group's picks before it (None: no groups)


def _tiered(keys: np.ndarray, eligible: np.ndarray | None) -> np.ndarray:
    """One scalar order: every eligible task before every ineligible one, priority within a tier."""
    finite = np.isfinite(keys)
    lo, hi = (float(keys[finite].min()), float(keys[finite].max())) if finite.any() else (0.0, 0.0)
    keys = np.where(finite, keys, lo - 1.0)  # a non-finite priority ranks last in its tier
    if eligible is None or eligible.all():
        return keys
    return np.where(eligible, keys, keys - (hi - lo + 2.0))


def _descending(keys: np.ndarray, members: np.ndarray | None = None, chunk: int = 256) -> Iterator[np.ndarray]:
    """Yield blocks of indices in descending key order (ties by index), each block unsorted.

    Every index of a block comes before every index of the next in that order, which is all a
    heap fed block by block needs; a caller that wants one block in order sorts it. Each block
    partitions only the positions not yet yielded, so going deep costs a pass over the rest per
    block, never a sort of what came before. `members` (ascending task indices) restricts the
    order to them."""
    neg = -keys if members is None else -keys[members]  # one array for every block
    rest = None  # positions of `neg` not yet yielded, ascending (None: all of them)
    while rest is None or rest.size:
        vals = neg if rest is None else neg[rest]
        inside = np.ones(vals.shape[0], dtype=bool)
        if vals.shape[0] > chunk:
            cut = vals[np.argpartition(vals, chunk - 1)[chunk - 1]]  # the block's last key
            np.less(vals, cut, out=inside)
            ties = np.flatnonzero(vals == cut)[: chunk - int(np.count_nonzero(inside))]  # the lowest indices
            inside[ties] = True
        block = np.flatnonzero(inside) if rest is None else rest[inside]
        rest = np.flatnonzero(~inside) if rest is None else rest[~inside]
        yield block if members is None else members[block]
        chunk *= 4


def _in_order(keys: np.ndarray, block: np.ndarray) -> np.ndarray:
    return block[np.lexsort((block, -keys[block]))]


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
        top = _in_order(keys, next(_descending(keys, chunk=batch_size)))
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
    if penalty is not None and penalty.lam > 0:  # scaled by the spread of the best keys
        m = min(2 * batch_size, keys.shape[0])
        weight = penalty.weight(float(np.std(np.partition(keys, keys.shape[0] - m)[keys.shape[0] - m :])))

    similarity = penalty.similarity if penalty is not None else None
    relations = similarity.parts if isinstance(similarity, SimilarityUnion) else (similarity,)
    # near-copies: the k-th of a group in this batch keeps copy_decay^(k-1) of its (positive) key
    groups = penalty.copy_groups if penalty is not None and penalty.copy_decay < 1.0 else None
    in_batch: dict[int, int] = {}  # picks so far per near-copy group
    if groups is not None:
        lost = (1.0 - penalty.copy_decay ** np.arange(batch_size + 1)).tolist()  # share of the key lost at k picks
        positive = np.maximum(keys, 0.0)

    def cost(idx: np.ndarray) -> np.ndarray:  # what the penalty and the near-copy discount take off `keys[idx]` now
        out = weight * maxsim[idx]
        if groups is not None:  # two measures of one redundancy with the batch: the larger counts
            seen = np.array([in_batch.get(g, 0) for g in groups[idx].tolist()], dtype=np.int64)
            out = np.maximum(out, np.take(lost, seen) * positive[idx])
        return out

    def cost_of(i: int) -> float:  # `cost` of one task, in Python scalars (the heap's hot path)
        out = weight * float(maxsim[i])
        if groups is not None:
            out = max(out, lost[in_batch.get(int(groups[i]), 0)] * float(positive[i]))
        return out

    ranks: list[int] = []

    def take(i: int) -> None:
        chosen.append(i)
        pens.append(cost_of(i))
        taken[i] = True
        counts[env_ids[i]] += 1
        if groups is not None:
            g = int(groups[i])
            ranks.append(in_batch.get(g, 0))
            in_batch[g] = in_batch.get(g, 0) + 1
        if weight > 0:
            for part in relations:  # a row lists each neighbour once, and relations share no pair
                nbr, w = part.neighbours(i)
                maxsim[nbr] = np.maximum(maxsim[nbr], w)

    def greedy(groups: list[np.ndarray | None], need: int, chunk: int, capped: bool) -> None:
        """Lazy greedy over the tasks of `groups` (None: every task), each group read in blocks of
        descending key and the groups merged by the best key each has not handed out yet: a group
        is read only once that key could beat the heap. With `capped`, tasks of an environment at
        its cap are skipped; if the groups are then the environments (in order), one at its cap,
        or never near the top, costs no partition at all."""
        heap: list[tuple[float, int]] = []
        streams = [_descending(keys, g, chunk=chunk) for g in groups]
        by_env = capped and len(groups) == num_envs > 1
        if by_env:  # every environment's best key in one pass
            bound = np.full(num_envs, -np.inf)
            np.maximum.at(bound, env_ids, keys)
        else:
            bound = np.array([keys.max(initial=-np.inf) if g is None else keys[g].max(initial=-np.inf) for g in groups])

        def frontier() -> tuple[int, float]:  # the group whose unread tasks may hold the best key
            open_bound = np.where(counts < hi, bound, -np.inf) if by_env else bound
            g = int(np.argmax(open_bound))
            return g, float(open_bound[g])

        g, front = frontier()
        got = 0
        pop, push = heapq.heappop, heapq.heappush
        while got < need:
            if not heap or -heap[0][0] <= front:  # an unread task may win (a tie too: the heap orders ties by index)
                if front == -np.inf:
                    return
                block = next(streams[g], None)
                if block is None:
                    bound[g] = -np.inf
                else:
                    bound[g] = keys[block].min(initial=bound[g])  # nothing unread in the group lies above
                    block = block[~taken[block]]
                    if capped:
                        block = block[counts[env_ids[block]] < hi[env_ids[block]]]
                    entries = zip((cost(block) - keys[block]).tolist(), block.tolist())
                    if block.size * 8 < len(heap):  # small next to the heap: pushes beat a new heapify
                        for entry in entries:
                            push(heap, entry)
                    else:
                        heap.extend(entries)
                        heapq.heapify(heap)
                g, front = frontier()
                continue
            neg, i = pop(heap)
            if taken[i]:
                continue
            if capped:
                e = env_ids[i]
                if counts[e] >= hi[e]:
                    continue
            cur = keys[i] - cost_of(i)
            if cur < -neg - 1e-12:  # stale: its penalty grew since it was pushed
                push(heap, (-cur, i))
                continue
            take(i)
            got += 1
            if by_env and counts[e] >= hi[e]:  # its environment closed
                g, front = frontier()

    def members(e: int) -> np.ndarray:
        return env_members[e] if env_members is not None else np.flatnonzero(env_ids == e)

    for e in np.flatnonzero(lo > 0).tolist():  # guaranteed minimum slots first
        greedy([members(e)], int(lo[e]), 2 * int(lo[e]), capped=False)
    if keys.shape[0] >= _BY_ENV_MIN_TASKS:  # caps can skip most of the top: read environments apart
        greedy([members(e) for e in range(num_envs)], batch_size - len(chosen),
               max(_MIN_CHUNK, 2 * batch_size // max(1, num_envs)), capped=True)  # fmt: skip
    else:  # a small pool: one order over every task costs less than a stream per environment
        greedy([None], batch_size - len(chosen), 2 * batch_size, capped=True)
    relax = list(quota.relaxations) if quota is not None else []
    if len(chosen) < batch_size:  # caps could not be met with the tasks left: fill, and say so
        relax.append(f"caps left {batch_size - len(chosen)} slots empty; filled ignoring caps")
        greedy([None], batch_size - len(chosen), 2 * batch_size, capped=False)
    if quota is not None:
        quota.observe_batch(counts_final := np.bincount(env_ids[chosen], minlength=num_envs))
        over = np.flatnonzero(counts_final > hi)
        relax += [f"{quota.env_names[e]} above its cap ({counts_final[e]} > {hi[e]})" for e in over]
    return FillResult(chosen, pens, relax, ranks if groups is not None else None)
