"""Typed records of finished rollouts, and their packing into padded training tensors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import torch
from torch import Tensor


class EpisodeRecord(NamedTuple):
    """One finished rollout of one task: its tokens, what the model did, and what the verifier said."""

    group: int  # position of the task in the step's batch (0..B-1); all G rollouts of a task share it
    env: str  # environment name (for per-environment metrics)
    task_key: str  # TaskSpec.key
    token_ids: list[int]  # [L] prompt, model turns, tool results, in order, exactly as the model saw them
    loss_mask: list[int]  # [L] 1 on model-generated tokens only; 0 on prompt and tool-result tokens
    prompt_len: int  # tokens before the first model turn
    reward: float  # verifier reward in [0, 1]
    reason: str  # verifier's reason
    turns: int  # model turns taken
    tool_calls: int  # tool calls executed
    parse_errors: int  # malformed tool-call blocks across all turns
    gen_tokens: int  # model-generated tokens (= sum(loss_mask))
    truncated: bool  # stopped by max_turns or the sequence budget rather than a final answer
    final_answer: str  # text of the last model turn outside tool-call blocks
    messages: tuple[Mapping[str, Any], ...]  # the conversation, for logging and debugging
    sample_logprobs: list[float] | None = None  # [L] the engine's log-prob of each generated token, 0 elsewhere
    scores: Mapping[str, float] | None = None  # the benchmark's own metrics for this episode (Verdict.scores), if any


class RolloutBatch(NamedTuple):
    """All rollouts of one step, group-major: rollout g of task b is `episodes[b * group_size + g]`."""

    episodes: list[EpisodeRecord]  # [N = B * G]
    group_size: int  # G

    @property
    def num_groups(self) -> int:
        return len(self.episodes) // self.group_size

    def rewards(self) -> Tensor:
        return torch.tensor([e.reward for e in self.episodes], dtype=torch.float32).view(-1, self.group_size)  # [B, G]

    def select(self, keep: Sequence[int]) -> list[EpisodeRecord]:
        """Episodes of the groups at positions `keep` (e.g. the informative ones), group-major."""
        g = self.group_size
        return [e for b in keep for e in self.episodes[b * g : (b + 1) * g]]


class Sequences(NamedTuple):
    """Right-padded episodes ready for a causal-LM forward pass."""

    tokens: Tensor  # [N, L] long, padded with the pad id
    attention_mask: Tensor  # [N, L] long, 1 on real tokens
    loss_mask: Tensor  # [N, L-1] float, aligned with next-token log-probs: 1 where token t+1 was generated
    sample_logprobs: Tensor | None = None  # [N, L-1] float, the sampling engine's log-prob of token t+1

    def to(self, device: torch.device | str) -> Sequences:
        return Sequences(*(None if t is None else t.to(device) for t in self))

    def rows(self, index: Tensor, width: int | None = None) -> Sequences:
        """Rows `index`, trimmed to `width` token columns (padding shared by those rows)."""
        w = self.tokens.shape[1] if width is None else width
        lp = None if self.sample_logprobs is None else self.sample_logprobs[index, : w - 1]
        return Sequences(self.tokens[index, :w], self.attention_mask[index, :w], self.loss_mask[index, : w - 1], lp)


def _cut(e: EpisodeRecord, n: int) -> EpisodeRecord:
    if len(e.token_ids) <= n:
        return e
    logprobs = None if e.sample_logprobs is None else e.sample_logprobs[:n]
    return e._replace(token_ids=e.token_ids[:n], loss_mask=e.loss_mask[:n], sample_logprobs=logprobs)


def pack_sequences(episodes: Sequence[EpisodeRecord], pad_id: int, max_seq_len: int | None = None) -> Sequences:
    """Right-pad episodes; sampling log-probs are packed only when every episode carries them.

    `max_seq_len`: no row is longer (an episode past it, which the agent loop never makes, is cut:
    training cost grows with the square of the length)."""
    if max_seq_len is not None:
        episodes = [_cut(e, max_seq_len) for e in episodes]
    width = max(len(e.token_ids) for e in episodes)
    tokens = torch.full((len(episodes), width), pad_id, dtype=torch.long)  # [N, L]
    attention = torch.zeros((len(episodes), width), dtype=torch.long)  # [N, L]
    mask = torch.zeros((len(episodes), width), dtype=torch.float32)  # [N, L]
    for row, e in enumerate(episodes):
        n = len(e.token_ids)
        tokens[row, :n] = torch.tensor(e.token_ids, dtype=torch.long)
        attention[row, :n] = 1
        mask[row, :n] = torch.tensor(e.loss_mask, dtype=torch.float32)
    sample = None
    if all(e.sample_logprobs is not None for e in episodes):
        sample = torch.zeros((len(episodes), width), dtype=torch.float32)  # [N, L]
        for row, e in enumerate(episodes):
            sample[row, : len(e.token_ids)] = torch.tensor(e.sample_logprobs, dtype=torch.float32)
        sample = sample[:, 1:]  # [N, L-1] aligned like the loss mask
    return Sequences(tokens, attention, mask[:, 1:], sample)  # loss mask [N, L-1]: predicting token t+1
