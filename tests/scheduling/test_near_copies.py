"""Near-copy groups and what the batch fill does with them: a cluster of any size is one group, and
the k-th copy of a group in a batch keeps `copy_decay`^(k-1) of its priority."""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest

from callbacks.similarity_penalty import SimilarityPenaltyCallback
from envsched_lightning.adapters.metrics import scheduler_metrics
from envsched_lightning.scheduling import TaskSpec, build_scheduler
from envsched_lightning.scheduling.constraints import SimilarityPenalty
from envsched_lightning.scheduling.near_copies import near_copy_groups
from envsched_lightning.scheduling.selection import fill_batch
from envsched_lightning.scheduling.task_table import TaskTable, as_task_table
from tests.data_roots import data_root

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()


def sentence(rng: np.random.Generator, n: int = 40) -> str:
    return " ".join(rng.choice(WORDS, n))


def pool(copies: int = 300, loners: int = 60, seed: int = 0) -> list[TaskSpec]:
    """`copies` tasks from one prompt template (a shared document, one word that differs) and
    `loners` tasks with prompts of their own, all with the same metadata."""
    rng = np.random.default_rng(seed)
    doc = sentence(rng, 120)
    specs = [TaskSpec("api", f"copy{i}", tools=("lookup",), text=f"{doc} question {i}") for i in range(copies)]
    specs += [TaskSpec("api", f"own{i}", tools=("lookup",), text=sentence(rng, 120)) for i in range(loners)]
    return specs


def test_a_cluster_of_any_size_is_one_group_and_distinct_texts_stay_apart():
    specs = pool()
    groups = near_copy_groups(as_task_table(specs))
    assert set(groups[:300]) == {0}  # named by its smallest member
    loners = groups[300:]
    assert len(set(loners)) == 60 and set(loners) == set(range(300, 360))


def test_groups_without_text_follow_metadata_and_are_the_same_for_a_list_and_a_table():
    specs = [TaskSpec("e", f"t{i}", tools=(f"tool{i % 3}",), state_keys=("db",), features={"n_calls": 2.0}) for i in range(90)]
    specs += [TaskSpec("e", "odd", tools=("tool0",), state_keys=("db",), features={"n_calls": 7.0})]
    groups = near_copy_groups(as_task_table(specs))
    assert [len(set(groups[k:90:3])) for k in range(3)] == [1, 1, 1]
    assert len(set(groups[:90])) == 3 and groups[90] == 90  # another feature value: another task
    rows = [{"env": s.env, "task_id": s.task_id, "tools": list(s.tools), "state_keys": list(s.state_keys),
             "features": dict(s.features)} for s in specs]  # fmt: skip
    np.testing.assert_array_equal(near_copy_groups(TaskTable.from_rows(rows)), groups)


def test_the_threshold_decides_how_alike_copies_must_be():
    rng = np.random.default_rng(1)
    base = sentence(rng, 60).split()
    edited = base.copy()
    edited[20:26] = ["edited"] * 6  # about a quarter of the 3-grams differ
    specs = [TaskSpec("e", "a", text=" ".join(base)), TaskSpec("e", "b", text=" ".join(edited))]
    table = as_task_table(specs)
    assert near_copy_groups(table, threshold=0.5).tolist() == [0, 0]
    assert near_copy_groups(table, threshold=0.95).tolist() == [0, 1]
    with pytest.raises(ValueError, match="threshold"):
        near_copy_groups(table, threshold=0.0)


def test_text_travels_through_a_task_table_and_a_jsonl_file(tmp_path):
    specs = pool(copies=3, loners=2)
    table = as_task_table(specs)
    assert list(table) == specs and table[4].text == specs[4].text
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"env": s.env, "task_id": s.task_id, "tools": list(s.tools), "text": s.text}) + "\n"
                            for s in specs))  # fmt: skip
    assert list(TaskTable.from_jsonl(path)) == specs
    assert as_task_table([TaskSpec("e", "x")]).text is None  # no text: no buffer
    with pytest.raises(ValueError, match="text must be a string"):
        TaskSpec("e", "x", text=3)


def _fill(specs, keys, decay, batch=32):
    penalty = SimilarityPenalty(lam=0.0, copy_decay=decay)
    penalty.bind(specs, None)
    n = len(specs)
    return fill_batch(keys, batch, np.zeros(n, np.int64), 1, None, penalty)


def test_the_kth_copy_in_a_batch_keeps_decay_to_the_k_minus_1_of_its_priority():
    specs = pool()
    rng = np.random.default_rng(2)
    keys = np.concatenate([rng.uniform(0.8, 1.0, 300), rng.uniform(0.4, 0.6, 60)])  # copies look best
    plain = _fill(specs, keys, decay=1.0)
    assert all(i < 300 for i in plain.indices)  # without the discount: 32 copies of one prompt
    result = _fill(specs, keys, decay=0.5)
    copies = [i for i in result.indices if i < 300]
    # 0.9 * 0.5^k falls below the loners' 0.4-0.6 after one or two copies
    assert 1 <= len(copies) <= 3 and len(result.indices) == 32
    for k, i in enumerate(copies):
        assert result.penalties[result.indices.index(i)] == pytest.approx((1 - 0.5**k) * keys[i])


def test_the_discount_reaches_every_copy_where_the_knn_penalty_reaches_k_of_them():
    """The graph penalty alone (envsched with copy_decay=1) lets many copies of a 300-task cluster
    into one batch (a pick excludes its k graph neighbours only); with the default discount a few."""
    specs = pool(copies=300, loners=300)
    shares = {}
    for decay in (1.0, None):  # None: the default
        sched = build_scheduler("envsched", specs, seed=0, quota=False, **({} if decay is None else {"copy_decay": decay}))
        batch = sched.select(32)
        shares[decay] = sum(i < 300 for i in batch)
    assert shares[None] <= 4 < shares[1.0]
    rows = sched.last_decision().rows  # the default's decision says which picks repeat a group
    assert sum(r["copy_rank"] > 0 for r in rows) == max(shares[None] - 1, 0)  # loners are groups of one
    metrics = scheduler_metrics(sched.last_decision(), [], sched.specs)
    assert metrics["sched/copy_repeat_frac"] == pytest.approx(sum(r["copy_rank"] > 0 for r in rows) / 32)


def test_the_penalty_callback_keeps_the_schedulers_own_near_copy_setting_unless_given():
    specs = pool(copies=20, loners=5)
    sched = build_scheduler("envsched", specs, seed=0, copy_decay=0.3)
    SimilarityPenaltyCallback(lam=0.3).install(sched)
    assert sched.penalty.copy_decay == 0.3 and sched.penalty.copy_groups is not None
    sched = build_scheduler("envsched", specs, seed=0)
    SimilarityPenaltyCallback(lam=0.3, copy_decay=1.0).install(sched)
    assert sched.penalty.copy_decay == 1.0 and sched.penalty.copy_groups is None
    random = build_scheduler("random", specs, seed=0)
    SimilarityPenaltyCallback(lam=0.3).install(random)
    assert random.penalty.copy_decay == 1.0  # baselines keep their picks
    with pytest.raises(ValueError, match="copy_decay"):
        SimilarityPenaltyCallback(copy_decay=1.5)


def test_bfcl_live_tasks_that_offer_one_api_document_are_one_group():
    from envsched_lightning.envs.bfcl.single_turn import BfclEnvironment

    tasks = BfclEnvironment("live_irrelevance", data_dir=data_root("bfcl_v3") / "bfcl_v3").tasks()
    specs = [t.spec for t in tasks]
    groups = near_copy_groups(as_task_table(specs))
    by_doc = collections.defaultdict(list)
    for i, t in enumerate(tasks):
        by_doc[json.dumps(t.ground_truth["question"]["function"], sort_keys=True)].append(i)
    doc, members = max(by_doc.items(), key=lambda kv: len(kv[1]))
    assert len(members) >= 50
    # nearly every task of the largest shared document lands in one group (at the default threshold,
    # 0.6: their questions differ, so two of them share 55-70% of their 3-grams)
    assert collections.Counter(groups[members]).most_common(1)[0][1] >= 0.9 * len(members)
    assert len(set(groups)) > 100  # and the pool is not one group
