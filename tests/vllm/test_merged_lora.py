"""`rollout.merge_lora=true`: a LoRA-trained model served as full weights, each adapted projection merged at every
sync (vLLM runs no LoRA kernels). The checks of the adapter path: each step samples that step's merged weights;
the first rollout of a fit (at start, after a resume, after the warm start) samples the current adapter; 50 syncs
do not grow the process."""

from __future__ import annotations

import pytest

from tests.vllm.helpers import TOL, close, load_policy, make_engine
from tests.vllm.sync_checks import each_step_serves_its_own_weights, fifty_syncs
from tests.vllm.fit_probe import fit, items_of


@pytest.fixture(scope="module")
def merged_engine(checkpoint_dir, engine):
    close(engine)  # one in-process vLLM engine at a time
    eng = make_engine(checkpoint_dir, load_policy(checkpoint_dir), merge_lora=True)
    assert eng.peft and not eng.lora and "enable_lora" not in eng.llm_args
    eng.llm
    yield eng
    close(eng)


def test_each_step_samples_that_steps_merged_adapter(merged_engine, checkpoint_dir, worlds):
    policy = load_policy(checkpoint_dir, adapter_scale=0.02)
    gaps = each_step_serves_its_own_weights(merged_engine, policy, worlds, scale=0.03)
    print("merged adapter: (gap to step k, to step k-1) " + ", ".join(f"({a:.1e}, {b:.1e})" for a, b in gaps))


@pytest.mark.parametrize("moment", ["start", "resume", "warm start"])
def test_first_rollout_of_a_fit_samples_the_current_adapter_merged(merged_engine, checkpoint_dir, worlds, tmp_path, moment):
    items = items_of(worlds)
    if moment == "start":
        probe = fit(merged_engine, load_policy(checkpoint_dir, adapter_scale=0.05, seed=1), items, 1, tmp_path)
    elif moment == "resume":
        first = fit(merged_engine, load_policy(checkpoint_dir, adapter_scale=0.05, seed=2), items, 1, tmp_path / "a")
        first.trainer.save_checkpoint(tmp_path / "step1.ckpt")
        probe = fit(merged_engine, load_policy(checkpoint_dir), items, 2, tmp_path / "b", ckpt_path=str(tmp_path / "step1.ckpt"))
    else:
        probe = fit(merged_engine, load_policy(checkpoint_dir), items, 1, tmp_path, warm_steps=15)
    print(f"merged, {moment}: first rollout gap {probe.gaps[0]:.2e}, to the base {probe.base_gaps[0]:.2e}")
    assert probe.gaps[0] < TOL < 10 * TOL < probe.base_gaps[0]


def test_fifty_merged_syncs_do_not_grow_the_process(merged_engine, checkpoint_dir):
    grew = fifty_syncs(merged_engine, load_policy(checkpoint_dir, adapter_scale=0.02), scale=0.01)
    print(f"after 50 merged syncs: {grew}")
    assert merged_engine.held_adapters() == []
    assert grew["open_files"] <= 2
    assert grew["rss_mb"] < 8, "50 syncs of a 1.8 MB model grew the process by more than 8 MB"
