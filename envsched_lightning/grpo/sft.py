"""The supervised warm-start loss: next-token cross-entropy on the assistant turns of oracle episodes.

A randomly initialised model never emits a well-formed ``<tool_call>``, so every GRPO group would
score 0 and carry no gradient. A few steps of this loss on ground-truth episodes (built by the same
agent loop, so masks match exactly what GRPO will train) give non-zero pass rates to start from.
"""

from __future__ import annotations

from torch import Tensor

from .loss import masked_mean


def sft_loss(logprobs: Tensor, mask: Tensor) -> Tensor:
    """Token-mean negative log-likelihood of the masked (assistant) tokens: [N, T], [N, T] -> []."""
    return -masked_mean(logprobs, mask.to(logprobs.dtype))  # []
