"""Checks shared by the weight-sync tests of both kinds of training model (LoRA adapter, full weights)."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import torch

from envsched_lightning.rollout import SamplingConfig
from tests.vllm.helpers import TOL, logprob_gap, rollouts


def perturb(model: torch.nn.Module, scale: float, seed: int) -> None:
    """Move every trainable weight by drawn noise: large enough that a stale copy would show in the log-probs."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn(p.shape, generator=gen) * scale)


def each_step_serves_its_own_weights(engine, policy, worlds, scale: float, steps: int = 3) -> list[tuple[float, float]]:
    """At step k (weights moved, then synced) vLLM samples step k's weights, not step k-1's: per step, the largest
    |vLLM - model| log-prob gap against the current model (below TOL) and against the previous one (far above)."""
    model, previous, gaps = policy.model, None, []
    for k in range(steps):
        perturb(model, scale, seed=100 + k)
        engine.sync_weights(model)
        _, seqs = rollouts(engine, policy, worlds, 1.0, seed=10 + k)
        now = logprob_gap(model, seqs, 1.0).max().item()
        stale = float("inf") if previous is None else logprob_gap(previous, seqs, 1.0).max().item()
        gaps.append((now, stale))
        assert now < TOL, f"step {k}: vLLM is {now:.2e} off the weights just synced"
        assert stale > 10 * TOL, f"step {k}: vLLM is as close to step {k - 1}'s weights ({stale:.2e})"
        previous = copy.deepcopy(model)
    return gaps


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def fifty_syncs(engine, policy, scale: float) -> dict[str, float]:
    """50 syncs of moved weights, a short generate after every 10th (adapters are activated by use); what the
    process holds before and after."""
    prompt = policy.tokenizer("Check my balance", add_special_tokens=False)["input_ids"]
    sampling = SamplingConfig(max_new_tokens=8, temperature=1.0, seed=0)
    engine.sync_weights(policy.model)
    engine.generate([prompt], sampling)
    files, rss = open_files(), rss_mb()
    for i in range(50):
        perturb(policy.model, scale, seed=1000 + i)
        engine.sync_weights(policy.model)
        if i % 10 == 9:
            engine.generate([prompt], sampling)
    return {"open_files": open_files() - files, "rss_mb": rss_mb() - rss}
