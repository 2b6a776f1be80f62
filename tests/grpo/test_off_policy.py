"""Truncated importance weights between the trainer and the sampling engine, and their effect on the loss."""

from __future__ import annotations

import math

import pytest
import torch

from envsched_lightning.grpo import grpo_loss, truncated_importance_weights


def test_weights_are_capped_ratios_on_generated_tokens_and_one_elsewhere():
    old = torch.log(torch.tensor([[0.5, 0.5, 0.9], [0.2, 0.3, 0.3]]))  # [2, 3] trainer
    sampler = torch.log(torch.tensor([[0.5, 0.1, 0.3], [0.4, 0.3, 0.9]]))  # [2, 3] vLLM
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    w, metrics = truncated_importance_weights(old, sampler, mask, cap=2.0)
    torch.testing.assert_close(w, torch.tensor([[1.0, 2.0, 2.0], [0.5, 1.0, 1.0]]))  # 5 and 3 capped at 2
    assert metrics["rollout/is_ratio_max"] == pytest.approx(5.0) and metrics["rollout/is_ratio_min"] == pytest.approx(0.5)
    assert metrics["rollout/is_clipped_frac"] == pytest.approx(2 / 5)
    assert metrics["rollout/logprob_diff_max"] == pytest.approx(math.log(5.0))
    with pytest.raises(ValueError, match="cap"):
        truncated_importance_weights(old, sampler, mask, cap=0.5)


def test_weights_scale_each_tokens_policy_gradient():
    logprobs = torch.log(torch.tensor([[0.4, 0.6]])).requires_grad_()
    adv, mask = torch.tensor([1.0]), torch.ones(1, 2)
    weights = torch.tensor([[2.0, 0.5]])
    plain = grpo_loss(logprobs, logprobs.detach(), adv, mask)
    (g_plain,) = torch.autograd.grad(plain.loss, logprobs)
    weighted = grpo_loss(logprobs, logprobs.detach(), adv, mask, is_weights=weights)
    (g_weighted,) = torch.autograd.grad(weighted.loss, logprobs)
    torch.testing.assert_close(g_weighted, g_plain * weights)
