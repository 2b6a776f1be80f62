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


def pack_sequences(episodes: Sequence[EpisodeRecord], pad_id: int) -> Sequences:
    width = max(len(e.token_ids) for e in episodes)
    tokens = torch.full((len(episodes), width), pad_id, dtype=torch.long)  # [N, L]
    attention = torch.zeros((len(episodes), width), dtype=torch.long)  # [N, L]
    mask = torch.zeros((len(episodes), width), dtype=torch.float32)  # [N, L]
    for row, e in enumerate(episodes):
        n = len(e.token_ids)
        tokens[row, :n] = torch.tensor(e.token_ids, dtype=torch.long)
        attention[row, :n] = 1
        mask[row, :n] = torch.tensor(e.loss_mask, dtype=torch.float32)
    return Sequences(tokens, attention, mask[:, 1:])  # loss mask [N, L-1]: predicting token t+1
