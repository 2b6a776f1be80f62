"""A model trained without LoRA (`model.policy.lora=null`) on the vLLM engine: the trainable weights are copied into
the served model in place after each step, in chunks of `rollout.sync_chunk_mb`, and the prefix cache is reset.
The checks of the LoRA path, on full weights: each step samples that step's weights; the first rollout of a fit
(at start, after a resume, after the warm start) samples the current weights; 50 syncs do not grow the process."""

from __future__ import annotations

import pytest

from tests.vllm.helpers import TOL, close, load_policy, make_engine
from tests.vllm.sync_checks import each_step_serves_its_own_weights, fifty_syncs
from tests.vllm.fit_probe import fit, items_of


@pytest.fixture(scope="module")
def full_engine(checkpoint_dir, engine):
    close(engine)  # one in-process vLLM engine at a time
    eng = make_engine(checkpoint_dir, load_policy(checkpoint_dir, full=True))
    assert not eng.lora and "enable_lora" not in eng.llm_args
    eng.llm
    yield eng
    close(eng)


def test_each_step_samples_that_steps_weights_in_chunks(full_engine, checkpoint_dir, worlds):
    policy = load_policy(checkpoint_dir, full=True)
    full_engine.sync_chunk_bytes = 1  # a reload call per block: layers a call does not name must keep their weights
    assert len(list(full_engine._weight_chunks(policy.model))) >= 4  # embeddings, 2 decoder blocks, final norm
    gaps = each_step_serves_its_own_weights(full_engine, policy, worlds, scale=0.01)
    print("full weights: (gap to step k, to step k-1) " + ", ".join(f"({a:.1e}, {b:.1e})" for a, b in gaps))


@pytest.mark.parametrize("moment", ["start", "resume", "warm start"])
def test_first_rollout_of_a_fit_samples_the_current_weights(full_engine, checkpoint_dir, worlds, tmp_path, moment):
    full_engine.sync_chunk_bytes = 256 * 2**20
    items = items_of(worlds)
    if moment == "start":  # as loaded from a trained checkpoint
        probe = fit(full_engine, load_policy(checkpoint_dir, adapter_scale=0.02, seed=1, full=True), items, 1, tmp_path)
    elif moment == "resume":
        first = fit(full_engine, load_policy(checkpoint_dir, adapter_scale=0.02, seed=2, full=True), items, 1, tmp_path / "a")
        first.trainer.save_checkpoint(tmp_path / "step1.ckpt")
        probe = fit(full_engine, load_policy(checkpoint_dir, full=True), items, 2, tmp_path / "b", ckpt_path=str(tmp_path / "step1.ckpt"))
    else:
        probe = fit(full_engine, load_policy(checkpoint_dir, full=True), items, 1, tmp_path, warm_steps=15)
    print(f"{moment}: first rollout gap {probe.gaps[0]:.2e}, to the base {probe.base_gaps[0]:.2e}")
    assert probe.gaps[0] < TOL < 10 * TOL < probe.base_gaps[0]


def test_fifty_full_weight_syncs_do_not_grow_the_process(full_engine, checkpoint_dir):
    grew = fifty_syncs(full_engine, load_policy(checkpoint_dir, full=True), scale=0.001)
    print(f"after 50 full-weight syncs: {grew}")
    assert full_engine.held_adapters() == []
    assert grew["open_files"] <= 2
    assert grew["rss_mb"] < 8, "50 syncs of a 1.8 MB model grew the process by more than 8 MB"
