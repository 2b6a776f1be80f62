"""Loss normalisers and gradient averaging that stay correct when DDP ranks hold different data.

Each rank backpropagates ``sum(its token losses) / normaliser`` and the gradients are averaged over
the W ranks. For the result to be the single-process gradient of the whole mini-batch, the
normaliser must be the *global* token (or sequence) count divided by W, as verl and TRL do:
with a local count, a rank whose groups all had zero variance (few or no tokens) would divide by
its own small count and its gradient would weigh as much as a rank with thousands of tokens.
"""

from __future__ import annotations

import torch

from envsched_lightning.distributed import world_size


def global_loss_counts(num_seqs: int, num_tokens: float) -> tuple[int | float, float]:
    """(sequences, tokens) summed over ranks and divided by the world size; unchanged on one process.

    Every rank must call it once per optimiser step, in the same order (it is a collective)."""
    world = world_size()
    if world == 1:
        return num_seqs, num_tokens
    counts = torch.tensor([float(num_seqs), float(num_tokens)], dtype=torch.float64)  # [2]
    torch.distributed.all_reduce(counts)
    counts /= world
    return float(counts[0]), float(counts[1])


def average_gradients(params: list[torch.nn.Parameter]) -> None:
    """One all-reduce of `params`' gradients, divided by the world size (a rank with no data sends zeros)."""
    world = world_size()
    if world == 1:
        return
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    flat = torch.cat([p.grad.flatten() for p in params])  # [P]
    torch.distributed.all_reduce(flat)
    flat /= world
    for p, g in zip(params, flat.split([p.numel() for p in params])):
        p.grad.copy_(g.view_as(p))
