"""The graph build's fast paths give what the plain definitions give: the band pipeline on a second
thread, weighing by row blocks, MinHash by runs, the CSR from sorted pairs, the propagation of
nothing. The graph is a function of the specs, so any difference here would change every run."""

import numpy as np
import pytest

from envsched_lightning.scheduling import similarity
from envsched_lightning.scheduling.features import NUM_DIM, RT_DIM, SET_DIM, pattern_vectors, static_features
from envsched_lightning.scheduling.graph import TaskGraph
from envsched_lightning.scheduling.propagation import IncrementalPPR, RowNormalizedGraph
from envsched_lightning.scheduling.similarity import (
    SparseSimilarity,
    ahead,
    minhash,
    weigh_offset,
    weigh_pairs,
)
from envsched_lightning.scheduling.task_table import as_task_table


def world_specs():
    from envsched_lightning.simulation import make_world

    return make_world("default").specs


def relations(graph: TaskGraph) -> list[np.ndarray]:
    return [getattr(r, a) for r in (graph.intra, graph.cross) for a in ("indptr", "indices", "weights")]


def test_the_graph_is_the_same_with_the_build_on_two_threads(monkeypatch):
    specs = world_specs()
    table = as_task_table(specs)
    plain = TaskGraph(table, table.env_ids, k_intra=10, k_cross=5)
    monkeypatch.setattr(similarity, "AHEAD_MIN_TASKS", 0)  # every build pipelined, every weighing on two threads
    monkeypatch.setattr(similarity, "PARALLEL_MIN_PAIRS", 0)
    threaded = TaskGraph(table, table.env_ids, k_intra=10, k_cross=5)
    for a, b in zip(relations(plain), relations(threaded)):
        np.testing.assert_array_equal(a, b)


def test_ahead_keeps_order_raises_the_producers_error_and_stops_when_left_early():
    assert list(ahead(iter(range(50)), tasks=10**9)) == list(range(50))
    assert list(ahead(iter(range(5)), tasks=0)) == list(range(5))  # small: the plain loop

    def broken():
        yield 1
        raise ValueError("band 2 failed")

    with pytest.raises(ValueError, match="band 2 failed"):
        list(ahead(broken(), tasks=10**9))
    made = []

    def endless():
        for i in range(10**6):
            made.append(i)
            yield i

    for item in ahead(endless(), tasks=10**9):
        if item == 3:
            break
    assert len(made) <= 6  # the producer stopped about one item ahead of the consumer


def test_weighing_row_blocks_equals_weighing_pairs():
    rng = np.random.default_rng(0)
    sig = rng.integers(0, 3, (5000, 16)).astype(np.int32)
    unit = rng.standard_normal((5000, 10)).astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    for off in (1, 4):
        for at in (np.flatnonzero(rng.random(5000 - off) < 0.9), np.flatnonzero(rng.random(5000 - off) < 0.05)):
            for u in (unit, None):
                np.testing.assert_array_equal(weigh_offset(sig, off, u, at), weigh_pairs(sig, at, at + off, u))


def test_minhash_is_each_tasks_minimum_whatever_the_token_order():
    rng = np.random.default_rng(1)
    rows = rng.integers(0, 300, 2000)
    rows[rows == 7] = 8  # task 7 names nothing
    toks = rng.integers(0, 2**31 - 1, 2000)
    got = minhash(rows, toks, 300, 8, seed=3)
    r = np.random.default_rng(3)
    a, b = r.integers(1, similarity._PRIME, 8), r.integers(0, similarity._PRIME, 8)
    for task in range(300):
        t = toks[rows == task]
        want = ((t[:, None] * a + b) % similarity._PRIME).min(0) if t.size else np.full(8, similarity._PRIME)
        np.testing.assert_array_equal(got[task], want)


def test_csr_from_pairs_in_any_order_lists_each_row_by_column_in_both_directions():
    rng = np.random.default_rng(2)
    n = 400
    a, b = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    pairs = sorted({(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist()) if x != y})
    lo, hi = np.array(pairs).T
    w = rng.random(lo.size).astype(np.float32)
    sim = SparseSimilarity.from_pairs(n, lo, hi, w)
    perm = rng.permutation(lo.size)
    shuffled = SparseSimilarity.from_pairs(n, lo[perm], hi[perm], w[perm])
    dense = np.zeros((n, n), np.float32)
    dense[lo, hi] = dense[hi, lo] = w
    for s in (sim, shuffled):
        for i in range(n):
            cols, weights = s.neighbours(i)
            assert np.array_equal(cols, np.flatnonzero(dense[i])) and np.array_equal(weights, dense[i][cols])


def test_propagating_nothing_observed_gives_zeros_without_a_pass():
    specs = world_specs()
    table = as_task_table(specs)
    ppr = IncrementalPPR(RowNormalizedGraph(TaskGraph(table, table.env_ids), 0.5), 0.5, 2)
    values = np.random.default_rng(0).random(len(table))
    ppr.reset(values, np.zeros(len(table), bool))
    assert not ppr.f.any() and not ppr.s.any()
    mask = np.zeros(len(table), bool)
    mask[:5] = True
    ppr.reset(values, mask)  # then a real pass: evidence spreads from the observed tasks
    assert (ppr.f[:, 1] > 0).sum() > 5


def test_pattern_vectors_are_the_middle_columns_of_the_static_features():
    table = as_task_table(world_specs())
    np.testing.assert_array_equal(pattern_vectors(table), static_features(table)[:, SET_DIM : SET_DIM + NUM_DIM + RT_DIM])
