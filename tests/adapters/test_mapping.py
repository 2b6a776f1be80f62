"""The translation both adapters share: reward ranges and per-rollout rows -> `RolloutGroup`s."""

from __future__ import annotations

import math

import pytest

from envsched_lightning.adapters.mapping import RewardRange, group_rewards


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
    assert group_rewards([0, 0], [0.0, 1.0], [0, 0])[0].lengths is None
    with pytest.raises(ValueError, match="lengths"):
        group_rewards([0, 0], [0.0, 1.0], [0, 0], lengths=[1])
