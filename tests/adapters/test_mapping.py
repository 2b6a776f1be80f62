"""The translation both adapters share: reward ranges, per-rollout rows -> `RolloutGroup`s, and
dataset rows <-> scheduler tasks by their ``(env, task_id)``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from envsched_lightning.adapters import mapping
from envsched_lightning.adapters.mapping import RewardRange, TaskIndex, group_rewards, require_unique_rows
from envsched_lightning.scheduling import TaskSpec, task_table


def test_reward_range_maps_onto_unit_interval_and_clips_what_lies_outside():
    rng = RewardRange.of([-1, 1])
    unit, clipped = rng.to_unit([-1.0, 0.0, 1.0, 3.0, -2.5, float("nan")])
    assert unit[:5] == [0.0, 0.5, 1.0, 1.0, 0.0] and math.isnan(unit[5])
    assert clipped == 2  # NaN is not clipped: the caller decides what an unscored rollout means
    assert RewardRange().to_unit([0.25]) == ([0.25], 0)
    assert RewardRange.of(rng) is rng


@pytest.mark.parametrize("bad", [(1.0, 1.0), (2.0, 1.0), (0.0, float("inf")), (float("nan"), 1.0), (0.0,), "01"])
def test_reward_range_refuses_what_maps_nothing(bad):
    with pytest.raises(ValueError, match="reward_range"):
        RewardRange.of(bad)


def test_groups_carry_lengths_per_rollout():
    groups = group_rewards([4, 4, 1, 1], [0.0, 1.0, 1.0, 1.0], ["a", "a", "b", "b"], lengths=[3, 5, 7, 9])
    assert [(g.index, g.rewards, g.lengths) for g in groups] == [(4, (0.0, 1.0), (3.0, 5.0)), (1, (1.0, 1.0), (7.0, 9.0))]
    assert [g.tokens for g in groups] == [(3.0, 5.0), (7.0, 9.0)]  # completion tokens: what the rollout cost
    assert group_rewards([0, 0], [0.0, 1.0], [0, 0])[0].lengths is None
    with pytest.raises(ValueError, match="lengths"):
        group_rewards([0, 0], [0.0, 1.0], [0, 0], lengths=[1])


def pool_and_dataset(seed: int = 0):
    """A pool whose names contain the key separator and non-ASCII text, and a shuffled dataset of
    its tasks plus rows of tasks outside it."""
    rng = np.random.default_rng(seed)
    envs = ["bfcl", "tau/airline", "ünï"]
    specs = [TaskSpec(env=envs[k % 3], task_id=f"q/{k}" if k % 2 else f"t{k}") for k in range(300)]
    rows = [(s.env, s.task_id) for s in specs] + [("bfcl", "elsewhere"), ("other", "t0"), ("tau", "airline/t1")]
    order = rng.permutation(len(rows))
    return specs, [rows[i] for i in order]


def test_task_index_finds_every_key_and_nothing_else():
    specs, _ = pool_and_dataset()
    index = TaskIndex(specs)
    assert len(index) == 300 and index.keys == tuple((s.env, s.task_id) for s in specs)
    for i in (0, 1, 2, 299):
        assert index.key(i) == (specs[i].env, specs[i].task_id)
        assert index.index(*index.key(i)) == i
    asked = [(s.env, s.task_id) for s in specs[::-7]]
    assert index.indices(asked).tolist() == list(range(299, -1, -7))
    # "tau" + "airline/t1" and "tau/airline" + "t1" pack to the same bytes: the environment tells them apart
    with pytest.raises(ValueError, match="tau/airline/t1 is not in the scheduler's task pool"):
        index.index("tau", "airline/t1")
    with pytest.raises(ValueError, match="non-empty strings"):
        index.indices([("bfcl", "t0"), ("bfcl", "")])


def test_rows_point_each_task_at_its_own_row_of_a_shuffled_dataset():
    specs, rows = pool_and_dataset()
    got = TaskIndex(specs).rows(rows)
    assert got.shape == (300,)
    assert [rows[r] for r in got.tolist()] == [(s.env, s.task_id) for s in specs]
    with pytest.raises(ValueError, match=r"2 scheduled tasks have no row in the dataset: bfcl/t0, tau/airline/q/1"):
        TaskIndex(specs).rows([r for r in rows if r not in {("bfcl", "t0"), ("tau/airline", "q/1")}])
    twice = rows[:5] + [rows[3]] + rows[5:] + [rows[1]]
    with pytest.raises(ValueError, match=f"task {rows[3][0]}/{rows[3][1]} appears in rows 3 and 5"):
        TaskIndex(specs).rows(twice)
    with pytest.raises(ValueError, match="appears in rows 3 and 5"):
        require_unique_rows(twice)


def test_lookups_stay_exact_when_every_hash_collides(monkeypatch):
    specs, rows = pool_and_dataset(seed=1)
    plain = TaskIndex(specs).rows(rows)
    monkeypatch.setattr(mapping, "key_hashes", lambda buf, starts: np.zeros(len(starts) - 1, np.uint64))
    monkeypatch.setattr(task_table, "key_hashes", lambda buf, starts: np.zeros(len(starts) - 1, np.uint64))
    index = TaskIndex(specs)
    assert index.rows(rows).tolist() == plain.tolist()
    assert index.index("ünï", "q/5") == 5
    with pytest.raises(ValueError, match="not in the scheduler's task pool"):
        index.index("tau", "airline/t1")
