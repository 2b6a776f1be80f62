"""vLLM samples what the trainer trains: the log-probs vLLM reports for the tokens it sampled equal the
training model's recomputed log-probs of the same sequences, over whole multi-turn episodes.

An episode interleaves sampled turns with tool turns rendered by Qwen3's own chat template, so
agreement on every generated token checks the token alignment of the whole loop (prompt, turns,
end tokens, tool results) as well as LoRA, temperature and the loss-mask bookkeeping. Both sides
run fp32; the tolerance is `TOL` per token.
"""

from __future__ import annotations

import pytest
import torch

from tests.vllm.helpers import TOL, load_policy, logprob_gap, rollouts


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampled_logprobs_match_the_training_model_over_tool_turns(synced_engine, checkpoint_dir, worlds, temperature):
    engine = synced_engine
    policy = load_policy(checkpoint_dir, adapter_scale=0.02)  # a non-zero adapter: vLLM must apply it too
    engine.sync_weights(policy.model)
    batch, seqs = rollouts(engine, policy, worlds, temperature)

    multi_turn = [e for e in batch.episodes if e.turns >= 2 and e.tool_calls >= 1]
    assert multi_turn, "no episode made a tool call and another turn: the check would not cover tool turns"
    gap = logprob_gap(policy.model, seqs, temperature)
    print(f"T={temperature}: {gap.numel()} sampled tokens in {len(batch.episodes)} episodes "
          f"({len(multi_turn)} multi-turn); max |diff| {gap.max():.2e}, mean {gap.mean():.2e}")  # fmt: skip
    assert gap.max() < TOL
    with policy.model.disable_adapter():  # the check can tell the adapter apart from the base model
        assert logprob_gap(policy.model, seqs, temperature).max() > 10 * TOL


def test_after_an_optimiser_step_and_sync_vllm_samples_the_updated_model(synced_engine, checkpoint_dir, worlds):
    engine = synced_engine
    policy = load_policy(checkpoint_dir)
    model = policy.model
    engine.sync_weights(model)
    _, seqs = rollouts(engine, policy, worlds, 1.0, seed=1)
    assert logprob_gap(model, seqs, 1.0).max() < TOL

    # one optimiser step on the LoRA weights (a large one, so stale weights would show)
    from envsched_lightning.grpo.logprobs import masked_token_logprobs

    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-2)
    lp = masked_token_logprobs(model, seqs.tokens, seqs.attention_mask, seqs.loss_mask)
    loss = -(lp * seqs.loss_mask).sum() / seqs.loss_mask.sum()
    loss.backward()
    opt.step()
    assert logprob_gap(model, seqs, 1.0).max() > 10 * TOL, "the step did not move the policy enough to test"

    engine.sync_weights(model)
    _, after = rollouts(engine, policy, worlds, 1.0, seed=2)
    gap = logprob_gap(model, after, 1.0)
    print(f"after one step and sync: max |diff| {gap.max():.2e} over {gap.numel()} tokens")
    assert gap.max() < TOL
    if engine.weight_sync == "disk":
        assert [p.name for p in engine.adapter_dir.iterdir()] == ["policy"]  # one adapter folder, overwritten
    else:  # handed over as tensors: vLLM holds this step's adapter only, and never read a path
        assert engine.held_adapters() == [engine.lora_id] and engine.lora_request.lora_path.startswith("in-memory/")
