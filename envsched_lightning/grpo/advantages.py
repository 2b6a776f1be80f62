"""Group-relative advantages: each rollout is scored against the other rollouts of its own task.

``A_ij = (r_ij - mean_j r_ij) / s``, with ``s`` chosen by `scale_rewards`: the group's std (GRPO),
the batch's std (TRL's "batch"), or 1 (Dr.GRPO: dividing by a small std over-weights easy and
hopeless tasks). A group whose rewards are all equal has zero advantage everywhere: it teaches
nothing, so it is flagged and the trainer drops it instead of spending compute on a zero gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor

from envsched_lightning.scheduling import ZERO_STD_EPS


class GroupAdvantages(NamedTuple):
    advantages: Tensor  # [B, G] float, exactly 0 in zero-variance groups
    zero_var: Tensor  # [B] bool, True where the group's rewards are all equal


def _group_scale(rewards: Tensor) -> Tensor:
    return rewards.std(dim=1, unbiased=False, keepdim=True)  # [B, 1]


def _batch_scale(rewards: Tensor) -> Tensor:
    return rewards.std(unbiased=False).expand(rewards.shape[0], 1)  # [B, 1]


def _no_scale(rewards: Tensor) -> Tensor:
    return torch.ones(rewards.shape[0], 1, dtype=rewards.dtype, device=rewards.device)  # [B, 1]


REWARD_SCALES: dict[str, Callable[[Tensor], Tensor]] = {
    "group": _group_scale,
    "batch": _batch_scale,
    "none": _no_scale,
}
"""`scale_rewards` options; ``True``/``False`` mean ``"group"``/``"none"``."""


def group_advantages(rewards: Tensor, scale_rewards: str | bool = "group", eps: float = 1e-4) -> GroupAdvantages:
    """Advantages for `rewards` of shape [B, G] (B tasks, G rollouts each)."""
    key = {True: "group", False: "none"}.get(scale_rewards, scale_rewards)  # type: ignore[arg-type]
    if key not in REWARD_SCALES:
        raise ValueError(f"scale_rewards must be one of {sorted(REWARD_SCALES)} or a bool, got {scale_rewards!r}")
    rewards = rewards.float()  # [B, G]
    centred = rewards - rewards.mean(dim=1, keepdim=True)  # [B, G]
    zero_var = rewards.std(dim=1, unbiased=False) < ZERO_STD_EPS  # [B]
    advantages = centred / (REWARD_SCALES[key](rewards) + eps)  # [B, G]
    advantages = advantages.masked_fill(zero_var[:, None], 0.0)  # [B, G]
    return GroupAdvantages(advantages, zero_var)
