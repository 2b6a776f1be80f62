"""GRPO as small functions: group advantages, the clipped surrogate, KL, and loss aggregations."""

from .config import GRPOConfig, WarmStartConfig
from .advantages import REWARD_SCALES, GroupAdvantages, group_advantages
from .loss import AGGREGATIONS, GRPOLossOutput, clipped_surrogate, grpo_loss, k3_kl, masked_mean, token_logprobs
from .sft import sft_loss

__all__ = [
    "AGGREGATIONS",
    "GRPOConfig",
    "GRPOLossOutput",
    "GroupAdvantages",
    "REWARD_SCALES",
    "WarmStartConfig",
    "clipped_surrogate",
    "group_advantages",
    "grpo_loss",
    "k3_kl",
    "masked_mean",
    "sft_loss",
    "token_logprobs",
]
