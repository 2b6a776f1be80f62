"""Two gloo processes on CPU: each backpropagates its shard's token-mean GRPO loss with the global
normaliser, gradients are averaged, and the result is written for `test_distributed.py` to compare
with one process holding all the data. Rank 1 holds a single short sequence (think: a rank whose
groups mostly had zero variance)."""

from __future__ import annotations

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from envsched_lightning.distributed import end_process_group
from envsched_lightning.grpo import average_gradients, global_loss_counts, grpo_loss


def data():
    gen = torch.Generator().manual_seed(0)
    feats = torch.randn(5, 6, 3, generator=gen)  # [N, T, F] one "model" input per token
    mask = torch.ones(5, 6)
    mask[4, 2:] = 0.0  # the last sequence is short
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 2.0])  # [N]
    return feats, mask, adv


def loss_grad(weight, rows, num_seqs, num_tokens):
    feats, mask, adv = data()
    w = weight.clone().requires_grad_()
    logprobs = (feats[rows] @ w).squeeze(-1) - 3.0  # [n, T] a differentiable stand-in for a policy's log-probs
    out = grpo_loss(logprobs, logprobs.detach() - 0.1, adv[rows], mask[rows], num_seqs=num_seqs, num_tokens=num_tokens)
    out.loss.backward()
    return w


def worker(rank: int, out_dir: str, port: int) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    _, mask, _ = data()
    rows = [0, 1, 2, 3] if rank == 0 else [4]
    counts = global_loss_counts(len(rows), float(mask[rows].sum()))
    w = loss_grad(torch.ones(3, 1), rows, *counts)
    average_gradients([w])
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump({"grad": w.grad.flatten().tolist(), "counts": list(counts)}, f)
    end_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(sys.argv[1], int(sys.argv[2])), nprocs=2)
