"""Rollout engines behind one protocol (`generate`, `sync_weights`) and the multi-turn agent loop.

`VLLMEngine` imports vLLM only when first used, so this package imports on CPU machines.
"""

from .agent_loop import (
    CONTEXT_FULL,
    INVALID_REWARD,
    PROMPT_TOO_LONG,
    ChatRenderer,
    checked_verdict,
    default_oracle,
    oracle_rollouts,
    rollout_episodes,
    run_agent_loop,
    tool_message,
)
from .engine import Completion, RolloutEngine, SamplingConfig, engine_awake
from .hf import HFEngine
from .types import EpisodeRecord, RolloutBatch, Sequences, pack_sequences
from .vllm_engine import VLLMEngine

__all__ = [
    "ChatRenderer",
    "CONTEXT_FULL",
    "INVALID_REWARD",
    "PROMPT_TOO_LONG",
    "checked_verdict",
    "Completion",
    "default_oracle",
    "EpisodeRecord",
    "engine_awake",
    "HFEngine",
    "RolloutBatch",
    "RolloutEngine",
    "SamplingConfig",
    "Sequences",
    "VLLMEngine",
    "oracle_rollouts",
    "pack_sequences",
    "rollout_episodes",
    "run_agent_loop",
    "tool_message",
]
