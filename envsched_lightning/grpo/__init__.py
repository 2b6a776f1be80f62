"""GRPO as small functions: group advantages, the clipped surrogate, KL, and loss aggregations."""

from .config import GRPOConfig, WarmStartConfig
from .advantages import REWARD_SCALES, GroupAdvantages, group_advantages
from .loss import AGGREGATIONS, GRPOLossOutput, clipped_surrogate, grpo_loss, k3_kl, masked_mean, token_logprobs
from .distributed import average_gradients, global_loss_counts
from .logprobs import masked_token_logprobs, split_causal_lm
from .off_policy import OffPolicyCorrection, truncated_importance_weights
from .sft import sft_loss

__all__ = [
    "AGGREGATIONS",
    "GRPOConfig",
    "GRPOLossOutput",
    "GroupAdvantages",
    "OffPolicyCorrection",
    "REWARD_SCALES",
    "WarmStartConfig",
    "average_gradients",
    "clipped_surrogate",
    "global_loss_counts",
    "group_advantages",
    "grpo_loss",
    "k3_kl",
    "masked_mean",
    "masked_token_logprobs",
    "sft_loss",
    "split_causal_lm",
    "token_logprobs",
    "truncated_importance_weights",
]
