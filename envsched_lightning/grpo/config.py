"""GRPO and warm-start hyper-parameters, validated once so a bad config fails before any rollout."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .advantages import REWARD_SCALES
from .loss import AGGREGATIONS

T = TypeVar("T")


def coerce(cls: type[T], value: T | Mapping[str, Any] | None) -> T:
    """Accept the dataclass itself, a mapping (e.g. a Hydra DictConfig) or None (defaults)."""
    if value is None:
        return cls()
    return value if isinstance(value, cls) else cls(**dict(value))


@dataclass(frozen=True)
class GRPOConfig:
    """One training step: G rollouts per task, then `ppo_epochs` passes of `num_mini_batches` updates.

    Lightning counts optimiser steps in `trainer.global_step`, so one training step advances it by
    ``ppo_epochs * num_mini_batches`` (0 when every group had zero variance).
    """

    group_size: int = 8
    ppo_epochs: int = 1
    num_mini_batches: int = 1
    micro_batch_size: int = 8  # sequences per forward pass; gradients accumulate across micro-batches
    clip_eps_low: float = 0.2
    clip_eps_high: float = 0.28
    kl_coef: float = 0.0
    loss_agg: str = "token_mean"
    max_tokens: int | None = None  # Dr.GRPO's constant normaliser (generated tokens per sequence)
    scale_rewards: str | bool = "group"
    max_grad_norm: float = 1.0
    max_seq_len: int = 4096
    off_policy_correction: bool = True  # weight by min(pi_old / pi_sampler, cap) when the engine reports logprobs
    importance_sampling_cap: float = 2.0
    logprob_chunk_size: int = 1024  # LM-head positions per chunk: bounds logit memory to [chunk, vocab]
    # take pi_old from the sampler instead of a second forward pass, where that is exact: an engine that
    # samples from the training model itself, at these weights, with no top-p / top-k truncation
    reuse_sampling_logprobs: bool = False
    # DAPO dynamic sampling: up to this many extra rounds per step, each asking the scheduler for fresh
    # tasks to replace the zero-variance groups, until the batch is full of informative groups (0: off).
    # The extra rollouts are paid for and counted; the scheduler learns from every round
    dynamic_sampling: int = 0

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise ValueError(f"group_size must be >= 2 for group-relative advantages, got {self.group_size}")
        if min(self.ppo_epochs, self.num_mini_batches, self.micro_batch_size) < 1:
            raise ValueError("ppo_epochs, num_mini_batches and micro_batch_size must be >= 1")
        if self.loss_agg not in AGGREGATIONS:
            raise ValueError(f"loss_agg must be one of {sorted(AGGREGATIONS)}, got {self.loss_agg!r}")
        if self.loss_agg == "dr_grpo" and not self.max_tokens:
            raise ValueError("loss_agg='dr_grpo' needs max_tokens")
        if not isinstance(self.scale_rewards, bool) and self.scale_rewards not in REWARD_SCALES:
            raise ValueError(f"scale_rewards must be a bool or one of {sorted(REWARD_SCALES)}")
        if not 0 <= self.clip_eps_low < 1 or self.clip_eps_high < 0:
            raise ValueError("need 0 <= clip_eps_low < 1 and clip_eps_high >= 0")
        if self.kl_coef < 0:
            raise ValueError(f"kl_coef must be >= 0, got {self.kl_coef}")
        if not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm must be > 0, got {self.max_grad_norm}")
        if not self.importance_sampling_cap >= 1:
            raise ValueError(f"importance_sampling_cap must be >= 1, got {self.importance_sampling_cap}")
        if isinstance(self.dynamic_sampling, bool) or not isinstance(self.dynamic_sampling, int) or self.dynamic_sampling < 0:
            raise ValueError(f"dynamic_sampling must be a non-negative int (extra rounds per step), got {self.dynamic_sampling!r}")
        if self.logprob_chunk_size < 1:
            raise ValueError(f"logprob_chunk_size must be >= 1, got {self.logprob_chunk_size}")


@dataclass(frozen=True)
class WarmStartConfig:
    """Supervised steps on oracle episodes before GRPO, so a random model starts with non-zero rewards.

    0 steps (the default) disables it; real Qwen3 runs need none. Runs once, at fit start, in the
    training process only (it is a short pre-phase for CPU and test runs, not distributed training).
    """

    steps: int = 0
    lr: float = 3e-3
    batch_size: int = 16
    seed: int = 0

    def __post_init__(self) -> None:
        if self.steps < 0 or self.batch_size < 1 or self.lr <= 0:
            raise ValueError("warm start needs steps >= 0, batch_size >= 1 and lr > 0")
