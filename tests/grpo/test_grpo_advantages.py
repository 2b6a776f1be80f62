from __future__ import annotations

import pytest
import torch

from envsched_lightning.grpo import GRPOConfig, group_advantages

REWARDS = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5], [1.0, 0.0, 0.0, 0.0]])  # [B=3, G=4]


def test_group_scaling_divides_by_each_groups_std():
    out = group_advantages(REWARDS, "group", eps=0.0)
    torch.testing.assert_close(out.advantages[0], torch.tensor([1.0, -1.0, -1.0, 1.0]))  # mean .5, std .5
    std = torch.tensor([1.0, 0, 0, 0]).std(unbiased=False)
    torch.testing.assert_close(out.advantages[2], (torch.tensor([1.0, 0, 0, 0]) - 0.25) / std)
    assert out.zero_var.tolist() == [False, True, False]


def test_zero_variance_groups_get_exactly_zero_advantage():
    for scale in ("group", "batch", "none", True, False):
        out = group_advantages(REWARDS, scale)
        assert torch.equal(out.advantages[1], torch.zeros(4))


def test_unscaled_is_reward_minus_group_mean():
    out = group_advantages(REWARDS, "none", eps=0.0)
    torch.testing.assert_close(out.advantages[0], torch.tensor([0.5, -0.5, -0.5, 0.5]))
    torch.testing.assert_close(group_advantages(REWARDS, False).advantages, out.advantages, atol=1e-3, rtol=0)


def test_batch_scaling_uses_one_std_for_all_groups():
    out = group_advantages(REWARDS, "batch", eps=0.0)
    centred = REWARDS - REWARDS.mean(1, keepdim=True)
    torch.testing.assert_close(out.advantages[0], centred[0] / REWARDS.std(unbiased=False))


def test_unknown_scale_is_rejected():
    with pytest.raises(ValueError, match="scale_rewards"):
        group_advantages(REWARDS, "mad")


def test_config_validates_before_any_rollout():
    with pytest.raises(ValueError, match="group_size"):
        GRPOConfig(group_size=1)
    with pytest.raises(ValueError, match="dr_grpo"):
        GRPOConfig(loss_agg="dr_grpo")
    with pytest.raises(ValueError, match="loss_agg"):
        GRPOConfig(loss_agg="mean")
