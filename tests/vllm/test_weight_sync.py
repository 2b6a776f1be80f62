"""The LoRA adapter reaches vLLM at every step, in memory (`rollout.weight_sync=memory`, the default) and through a
folder (`disk`): each step's rollouts come from that step's adapter, and 50 syncs leave one adapter in the engine,
no file behind and no growth in open files or memory. test_full_weights.py: the same for full weights."""

from __future__ import annotations

import os
from pathlib import Path

from tests.vllm.helpers import load_policy
from tests.vllm.sync_checks import each_step_serves_its_own_weights, fifty_syncs


def test_each_step_samples_that_steps_adapter(synced_engine, checkpoint_dir, worlds):
    policy = load_policy(checkpoint_dir, adapter_scale=0.02)
    gaps = each_step_serves_its_own_weights(synced_engine, policy, worlds, scale=0.03)
    print(f"weight_sync={synced_engine.weight_sync}: (gap to step k, to step k-1) " + ", ".join(f"({a:.1e}, {b:.1e})" for a, b in gaps))


def test_fifty_adapter_syncs_in_memory_hold_one_adapter_and_write_nothing(engine, checkpoint_dir):
    engine.weight_sync = "memory"
    tmp = Path(os.environ["TMPDIR"])
    before = {p.name for p in tmp.glob("envsched-lora-*")}, sorted(p.name for p in engine.adapter_dir.iterdir())
    grew = fifty_syncs(engine, load_policy(checkpoint_dir, adapter_scale=0.02), scale=0.01)
    print(f"after 50 in-memory adapter syncs: {grew}")
    assert engine.held_adapters() == [engine.lora_id]
    assert ({p.name for p in tmp.glob("envsched-lora-*")}, sorted(p.name for p in engine.adapter_dir.iterdir())) == before
    assert grew["open_files"] <= 2
    assert grew["rss_mb"] < 8, "50 syncs of a 0.2 MB adapter grew the process by more than 8 MB"
