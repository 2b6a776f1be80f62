"""Truncated importance sampling between the trainer and the rollout engine (the behaviour policy).

PPO's ratio pi / pi_old assumes the rollouts were sampled from pi_old. With vLLM they were sampled
by a different implementation of the same weights (other kernels, bf16 rounding, an adapter loaded
from disk), so pi_sampler != pi_old token by token. Weighting each token's loss by
``w = min(pi_old / pi_sampler, cap)`` corrects the gradient for that mismatch; the cap bounds the
variance a few badly matched tokens could add (TRL's default is 2). The metrics say how far the
two implementations drift: a sudden rise points at a broken weight sync or token misalignment.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor


class OffPolicyCorrection(NamedTuple):
    weights: Tensor  # [N, T] truncated importance weights, 1 where the mask is 0
    metrics: dict[str, float]  # rollout/ logprob-mismatch and weight statistics over generated tokens


def truncated_importance_weights(old_logprobs: Tensor, sampler_logprobs: Tensor, mask: Tensor, cap: float) -> OffPolicyCorrection:
    """Per-token ``min(exp(old - sampler), cap)`` over generated tokens (`mask` [N, T] is 1), with diagnostics."""
    if cap < 1.0:
        raise ValueError(f"importance-weight cap must be >= 1, got {cap}")
    on = mask.bool()  # [N, T]
    diff = (old_logprobs - sampler_logprobs).float()  # [N, T] log pi_old - log pi_sampler
    ratio = diff.exp()  # [N, T]
    weights = torch.where(on, ratio.clamp(max=cap), torch.ones_like(ratio)).detach()  # [N, T]
    if not bool(on.any()):
        return OffPolicyCorrection(weights, {})
    d, r = diff[on].abs(), ratio[on]  # [M], [M]
    metrics = {
        "rollout/logprob_diff_mean": d.mean().item(),
        "rollout/logprob_diff_max": d.max().item(),
        "rollout/is_ratio_mean": r.mean().item(),
        "rollout/is_ratio_min": r.min().item(),
        "rollout/is_ratio_max": r.max().item(),
        "rollout/is_clipped_frac": (r > cap).float().mean().item(),
    }
    return OffPolicyCorrection(weights, metrics)
