"""The one interface every rollout engine implements: generate from token ids, and pick up new weights.

Prompts go in as token ids, not text, because the agent loop builds each episode token by token
(model turns exactly as sampled, tool results appended as tokens): re-tokenising text between
turns could change the tokens the policy is trained on. Engines return token ids and text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Protocol, runtime_checkable

import torch


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling parameters for one model turn; ``temperature=0`` means greedy."""

    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # 0 = no top-k filter
    seed: int | None = None

    def __post_init__(self) -> None:
        """Refuse values that would sample something other than what was asked (e.g. T < 0 is not greedy)."""
        if isinstance(self.max_new_tokens, bool) or not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an int >= 1, got {self.max_new_tokens!r}")
        if not isinstance(self.temperature, (int, float)) or not 0.0 <= self.temperature < float("inf"):
            raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), got {self.temperature!r}")
        if not isinstance(self.top_p, (int, float)) or not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k must be an int >= 0 (0 = off), got {self.top_k!r}")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise ValueError(f"seed must be an int or null, got {self.seed!r}")

    @classmethod
    def coerce(cls, value: SamplingConfig | Mapping[str, Any] | None) -> SamplingConfig:
        if value is None:
            return cls()
        return value if isinstance(value, SamplingConfig) else cls(**dict(value))

    def greedy(self) -> SamplingConfig:
        return replace(self, temperature=0.0, top_p=1.0, top_k=0)


class Completion(NamedTuple):
    token_ids: list[int]  # [L] generated ids, ending with EOS unless cut by max_new_tokens
    text: str  # decoded `token_ids` without the final EOS, special tokens kept (tool-call tags)
    logprobs: list[float] | None = None  # [L] sampling log-probabilities when the engine reports them


@runtime_checkable
class RolloutEngine(Protocol):
    """Generates one assistant turn per prompt; `sync_weights` makes later turns use the current policy."""

    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingConfig) -> list[Completion]: ...

    def sync_weights(self, module: torch.nn.Module) -> None: ...


@contextlib.contextmanager
def engine_awake(engine: RolloutEngine) -> Iterator[RolloutEngine]:
    """Wake an engine that sleeps between rollouts (vLLM sleep mode), and put it back to sleep after.

    Engines without `wake_up` / `sleep` (the HF engine shares the training model) pass through."""
    wake, sleep = getattr(engine, "wake_up", None), getattr(engine, "sleep", None)
    if callable(wake):
        wake()
    try:
        yield engine
    finally:
        if callable(sleep):
            sleep()
