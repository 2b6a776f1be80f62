"""The first rollout of a fit samples the current adapter, never the base model: at a fresh start with
a loaded adapter, after a `ckpt_path` resume and after the SFT warm start, with the adapter handed over in
memory and through a folder (test_full_weights.py: the same for a model trained without LoRA).

A real Lightning Trainer runs `GRPOModule` with the real `VLLMEngine`. `AgreementProbe` passes every
call through to that engine and, for each sampled turn, compares vLLM's log-probs with the training
model's at that moment (the model the turn should have come from).
"""

from __future__ import annotations

from tests.vllm.fit_probe import fit, items_of
from tests.vllm.helpers import TOL, load_policy


def test_first_rollout_at_start_samples_the_loaded_adapter(synced_engine, checkpoint_dir, worlds, tmp_path):
    engine = synced_engine
    policy = load_policy(checkpoint_dir, adapter_scale=0.05, seed=1)  # as loaded from an adapter on disk
    probe = fit(engine, policy, items_of(worlds), 1, tmp_path)
    print(f"first rollout: gap to the model {probe.gaps[0]:.2e}, to the base {probe.base_gaps[0]:.2e}")
    assert probe.gaps[0] < TOL < 10 * TOL < probe.base_gaps[0]


def test_first_rollout_after_resume_samples_the_restored_adapter(synced_engine, checkpoint_dir, worlds, tmp_path):
    engine = synced_engine
    items = items_of(worlds)
    first = fit(engine, load_policy(checkpoint_dir, adapter_scale=0.05, seed=2), items, 1, tmp_path / "a")
    ckpt = tmp_path / "step1.ckpt"
    first.trainer.save_checkpoint(ckpt)

    fresh = load_policy(checkpoint_dir)  # a new process: zero adapter until the checkpoint loads
    probe = fit(engine, fresh, items, 2, tmp_path / "b", ckpt_path=str(ckpt))
    print(f"first rollout after resume: gap {probe.gaps[0]:.2e}, to the base {probe.base_gaps[0]:.2e}")
    assert probe.gaps[0] < TOL < 10 * TOL < probe.base_gaps[0]


def test_first_rollout_after_the_warm_start_samples_the_warm_adapter(synced_engine, checkpoint_dir, worlds, tmp_path):
    engine = synced_engine
    policy = load_policy(checkpoint_dir)  # zero adapter: the warm start alone moves it
    probe = fit(engine, policy, items_of(worlds), 1, tmp_path, warm_steps=15)
    print(f"first rollout after warm start: gap {probe.gaps[0]:.2e}, to the base {probe.base_gaps[0]:.2e}")
    assert probe.gaps[0] < TOL < 10 * TOL < probe.base_gaps[0]
