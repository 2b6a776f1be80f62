"""The GRPO policy loss over multi-turn tool-use sequences, and how it departs from textbook GRPO.

Textbook GRPO (DeepSeekMath) minimises, per sequence, the mean over its tokens of
``-min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A) + beta * KL_k3(pi || pi_ref)``, then averages
sequences. Here:

- **Masks, not completions.** A sequence is a whole episode: prompt, model turns, tool results.
  Only model-generated tokens carry loss (``mask``); prompt and tool-result tokens are context.
- **Asymmetric clip (DAPO).** ``clip_eps_low`` and ``clip_eps_high`` differ; a larger upper bound
  lets low-probability tokens that earned positive advantage grow (against entropy collapse).
- **Aggregation is a choice** (`AGGREGATIONS`): ``token_mean`` (DAPO: every generated token of the
  batch weighs the same, so long episodes are not down-weighted), ``seq_mean`` (the original), or
  ``dr_grpo`` (Dr.GRPO: sum over tokens divided by a constant ``N * max_tokens``, removing the
  length bias of per-sequence means).
- **Off-policy correction.** When rollouts come from another engine (vLLM), the sampler's own
  log-probs are the behaviour policy, and they differ from the trainer's (other kernels, bf16,
  a stale adapter). Each token's loss is multiplied by the truncated importance weight
  ``min(pi_old / pi_sampler, cap)`` (TIS, as TRL's ``vllm_importance_sampling_correction``).
- **KL is optional** (DAPO drops it; default ``kl_coef=0``). When on, the reference policy of a
  LoRA model is the base with adapters disabled, so no second copy of the weights is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor


class GRPOLossOutput(NamedTuple):
    loss: Tensor  # [] what to backpropagate: aggregated pg loss + kl_coef * kl
    pg_loss: Tensor  # [] aggregated clipped surrogate alone
    kl: Tensor  # [] token mean of the k3 estimate of KL(pi || pi_ref); 0 when no reference
    clip_frac: Tensor  # [] fraction of generated tokens where the clipped branch was taken
    approx_kl: Tensor  # [] token mean of the k3 estimate of KL(pi_old || pi): how far the epoch moved
    ratio_mean: Tensor  # [] token mean of pi / pi_old


def masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Mean of `values` [N, T] over positions where `mask` [N, T] is 1 (0 when the mask is empty)."""
    return (values * mask).sum() / mask.sum().clamp(min=1.0)  # []


def _token_mean(values: Tensor, mask: Tensor, max_tokens: int | None, num_seqs: int, num_tokens: float) -> Tensor:
    return (values * mask).sum() / max(num_tokens, 1.0)  # []


def _seq_mean(values: Tensor, mask: Tensor, max_tokens: int | None, num_seqs: int, num_tokens: float) -> Tensor:
    per_seq = (values * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)  # [N]
    return per_seq.sum() / num_seqs  # []


def _dr_grpo(values: Tensor, mask: Tensor, max_tokens: int | None, num_seqs: int, num_tokens: float) -> Tensor:
    if max_tokens is None:
        raise ValueError("loss_agg='dr_grpo' needs max_tokens, the constant per-sequence token budget")
    return (values * mask).sum() / (num_seqs * max_tokens)  # []


AGGREGATIONS: dict[str, Callable[[Tensor, Tensor, int | None, int, float], Tensor]] = {
    "token_mean": _token_mean,
    "seq_mean": _seq_mean,
    "dr_grpo": _dr_grpo,
}
"""`loss_agg` options: per-token values [N, T], mask [N, T], max_tokens, and the mini-batch's sequence
and token counts -> a scalar. Passing the counts of the whole mini-batch makes the losses of its
micro-batches sum exactly to the mini-batch loss (gradient accumulation without reweighting)."""


def clipped_surrogate(
    logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor, clip_eps_low: float, clip_eps_high: float
) -> tuple[Tensor, Tensor, Tensor]:
    """PPO's pessimistic surrogate per token; returns (pg_loss [N, T], clipped [N, T] bool, log_ratio [N, T])."""
    log_ratio = logprobs - old_logprobs  # [N, T]
    ratio = log_ratio.exp()  # [N, T]
    adv = advantages[:, None]  # [N, 1] one advantage for every token of an episode
    pg_loss1 = -adv * ratio  # [N, T]
    pg_loss2 = -adv * ratio.clamp(1.0 - clip_eps_low, 1.0 + clip_eps_high)  # [N, T]
    pg_loss = torch.maximum(pg_loss1, pg_loss2)  # [N, T]
    clipped = pg_loss2 > pg_loss1  # [N, T] the clip bound is what the gradient sees (zero gradient)
    return pg_loss, clipped, log_ratio


def k3_kl(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """Schulman's k3 estimator of KL(pi || pi_ref) per token: unbiased, non-negative, low variance."""
    log_ref_ratio = ref_logprobs - logprobs  # [N, T]
    return log_ref_ratio.exp() - log_ref_ratio - 1.0  # [N, T]


def grpo_loss(
    logprobs: Tensor,
    old_logprobs: Tensor,
    advantages: Tensor,
    mask: Tensor,
    ref_logprobs: Tensor | None = None,
    *,
    clip_eps_low: float = 0.2,
    clip_eps_high: float = 0.28,
    kl_coef: float = 0.0,
    loss_agg: str = "token_mean",
    max_tokens: int | None = None,
    num_seqs: int | None = None,
    num_tokens: float | None = None,
    is_weights: Tensor | None = None,
) -> GRPOLossOutput:
    """GRPO loss for N sequences of T next-token positions.

    `logprobs` [N, T] (with grad), `old_logprobs` [N, T] (the sampling policy, no grad),
    `advantages` [N], `mask` [N, T] (1 on model-generated tokens), `ref_logprobs` [N, T] or None.
    `num_seqs` / `num_tokens` default to this call's counts; pass the mini-batch's when these N rows
    are one micro-batch of it. `is_weights` [N, T] (no grad) multiplies each token's policy loss:
    the truncated importance weight between the trainer and the sampling engine.
    """
    if loss_agg not in AGGREGATIONS:
        raise ValueError(f"loss_agg must be one of {sorted(AGGREGATIONS)}, got {loss_agg!r}")
    aggregate = AGGREGATIONS[loss_agg]
    mask = mask.to(logprobs.dtype)  # [N, T]
    num_seqs = logprobs.shape[0] if num_seqs is None else num_seqs
    num_tokens = float(mask.sum()) if num_tokens is None else num_tokens
    counts = (max_tokens, num_seqs, num_tokens)
    pg_loss, clipped, log_ratio = clipped_surrogate(logprobs, old_logprobs, advantages, clip_eps_low, clip_eps_high)
    if is_weights is not None:
        pg_loss = pg_loss * is_weights  # [N, T]
    per_token = pg_loss  # [N, T]
    kl = torch.zeros_like(logprobs)  # [N, T]
    if ref_logprobs is not None:
        kl = k3_kl(logprobs, ref_logprobs)  # [N, T]
        per_token = per_token + kl_coef * kl  # [N, T]
    with torch.no_grad():
        approx_kl = masked_mean(log_ratio.exp() - 1.0 - log_ratio, mask)  # []
        clip_frac = masked_mean(clipped.to(mask.dtype), mask)  # []
        ratio_mean = masked_mean(log_ratio.exp(), mask)  # []
    return GRPOLossOutput(
        loss=aggregate(per_token, mask, *counts),
        pg_loss=aggregate(pg_loss, mask, *counts).detach(),
        kl=masked_mean(kl, mask).detach(),
        clip_frac=clip_frac,
        approx_kl=approx_kl,
        ratio_mean=ratio_mean,
    )


def token_logprobs(logits: Tensor, tokens: Tensor, temperature: float = 1.0) -> Tensor:
    """Log-probability of each next token: `logits` [N, L, V] and `tokens` [N, L] -> [N, L - 1].

    The reference formula (it holds all logits); training uses `masked_token_logprobs`."""
    logits = logits[:, :-1].float() / temperature  # [N, L-1, V] position t predicts token t+1
    targets = tokens[:, 1:]  # [N, L-1]
    picked = logits.gather(-1, targets[..., None]).squeeze(-1)  # [N, L-1]
    return picked - torch.logsumexp(logits, dim=-1)  # [N, L-1]
