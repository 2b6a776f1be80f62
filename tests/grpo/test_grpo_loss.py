"""The GRPO loss against a hand-computed example: 2 sequences x 3 tokens, every clip case covered.

ratios (old log-probs are 0, so ratio = exp(logprob)), advantages A = [+1, -2], clip [0.8, 1.28]:

    seq 0 (A=+1): r=1.5 -> max(-1.5, -1.28) = -1.28 clipped | r=0.7 -> max(-0.7, -0.8) = -0.7 | masked
    seq 1 (A=-2): r=1.1 -> 2.2 | r=0.5 -> max(1.0, 1.6) = 1.6 clipped | r=2.0 -> max(4.0, 2.56) = 4.0

masked sums: seq 0 = -1.98 (2 tokens), seq 1 = 7.8 (3 tokens), total 5.82 over 5 tokens.
"""

from __future__ import annotations

import math

import pytest
import torch

from envsched_lightning.grpo import AGGREGATIONS, grpo_loss, k3_kl, token_logprobs

RATIOS = torch.tensor([[1.5, 0.7, 1.0], [1.1, 0.5, 2.0]])
MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
ADV = torch.tensor([1.0, -2.0])
CLIP = dict(clip_eps_low=0.2, clip_eps_high=0.28)


def _loss(**kw):
    logprobs = RATIOS.log().requires_grad_()
    return logprobs, grpo_loss(logprobs, torch.zeros_like(logprobs), ADV, MASK, **CLIP, **kw)


@pytest.mark.parametrize(
    ("agg", "expected"),
    [("token_mean", 5.82 / 5), ("seq_mean", (-1.98 / 2 + 7.8 / 3) / 2), ("dr_grpo", 5.82 / (2 * 4))],
)
def test_aggregations_match_hand_computation(agg, expected):
    _, out = _loss(loss_agg=agg, max_tokens=4)
    assert out.loss.item() == pytest.approx(expected, abs=1e-6)
    assert out.pg_loss.item() == pytest.approx(expected, abs=1e-6)
    assert out.clip_frac.item() == pytest.approx(2 / 5)
    assert out.kl.item() == 0.0


def test_every_aggregation_is_covered():
    assert set(AGGREGATIONS) == {"token_mean", "seq_mean", "dr_grpo"}


def test_clipped_and_masked_tokens_get_no_gradient():
    logprobs, out = _loss()
    out.loss.backward()
    grad = logprobs.grad
    # d/dlogprob of -A * r / 5 = -A * r / 5 on unclipped, unmasked tokens; 0 where clipped or masked
    expected = torch.tensor([[0.0, -1.0 * 0.7 / 5, 0.0], [2.0 * 1.1 / 5, 0.0, 2.0 * 2.0 / 5]])
    torch.testing.assert_close(grad, expected)


def test_approx_kl_is_k3_of_old_to_new():
    _, out = _loss()
    r = RATIOS[MASK.bool()]
    assert out.approx_kl.item() == pytest.approx(((r - 1) - r.log()).mean().item(), rel=1e-6)
    assert out.ratio_mean.item() == pytest.approx(r.mean().item(), rel=1e-6)


def test_kl_term_is_added_per_token_before_aggregation():
    ref = torch.full_like(RATIOS, math.log(0.9))
    logprobs = RATIOS.log()
    out = grpo_loss(logprobs, torch.zeros_like(logprobs), ADV, MASK, ref, **CLIP, kl_coef=0.1)
    kl = k3_kl(logprobs, ref)
    kl_mean = (kl * MASK).sum() / MASK.sum()
    assert out.kl.item() == pytest.approx(kl_mean.item(), rel=1e-6)
    assert out.loss.item() == pytest.approx(5.82 / 5 + 0.1 * kl_mean.item(), rel=1e-6)
    assert (kl >= 0).all()  # k3 is non-negative


def test_k3_is_zero_for_identical_policies():
    lp = torch.randn(3, 5)
    assert torch.equal(k3_kl(lp, lp.clone()), torch.zeros(3, 5))


@pytest.mark.parametrize("agg", sorted(AGGREGATIONS))
def test_micro_batches_sum_to_the_mini_batch_loss(agg):
    torch.manual_seed(0)
    lp, old = torch.randn(6, 7), torch.randn(6, 7)
    adv, mask = torch.randn(6), (torch.rand(6, 7) > 0.3).float()
    kw = dict(CLIP, loss_agg=agg, max_tokens=7)
    full = grpo_loss(lp, old, adv, mask, **kw).loss
    counts = dict(num_seqs=6, num_tokens=float(mask.sum()))
    parts = [grpo_loss(lp[r], old[r], adv[r], mask[r], **kw, **counts).loss for r in (slice(0, 2), slice(2, 6))]
    assert sum(parts).item() == pytest.approx(full.item(), rel=1e-6)


def test_bad_options_fail_clearly():
    with pytest.raises(ValueError, match="loss_agg"):
        _loss(loss_agg="sum")
    with pytest.raises(ValueError, match="max_tokens"):
        _loss(loss_agg="dr_grpo")


def test_token_logprobs_shifts_by_one():
    logits = torch.log(torch.tensor([[[0.1, 0.9], [0.8, 0.2], [0.5, 0.5]]]))  # [1, 3, 2]
    tokens = torch.tensor([[0, 1, 0]])  # position 0 predicts token 1 (p=0.9), position 1 predicts 0 (0.8)
    torch.testing.assert_close(token_logprobs(logits, tokens), torch.log(torch.tensor([[0.9, 0.8]])))
