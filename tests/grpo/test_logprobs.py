"""Log-probs of generated tokens only, in LM-head chunks: same numbers and gradients as the full logits."""

from __future__ import annotations

import pytest
import torch

from envsched_lightning.envs import make_env
from envsched_lightning.grpo import masked_token_logprobs, token_logprobs
from envsched_lightning.models import apply_lora, tiny_qwen3_policy
from envsched_lightning.rollout import oracle_rollouts, pack_sequences


@pytest.fixture(scope="module")
def batch():
    env = make_env("banking")
    model, tok = tiny_qwen3_policy(envs=[env], seed=0)
    seqs = pack_sequences(oracle_rollouts(tok, [(t, env) for t in env.tasks()[:5]]).episodes, tok.pad_token_id)
    return model, seqs


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_equal_to_full_logits_at_generated_positions_and_zero_elsewhere(batch, temperature):
    model, s = batch
    fast = masked_token_logprobs(model, s.tokens, s.attention_mask, s.loss_mask, temperature, chunk_size=7)
    full = token_logprobs(model(input_ids=s.tokens, attention_mask=s.attention_mask).logits, s.tokens, temperature)
    on = s.loss_mask.bool()
    torch.testing.assert_close(fast[on], full[on], atol=1e-5, rtol=1e-5)
    assert not fast[~on].any()
    (fast * s.loss_mask).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    (full * s.loss_mask).sum().backward()
    for a, p in zip(grads, model.parameters()):
        torch.testing.assert_close(a, p.grad, atol=1e-4, rtol=1e-3)
    model.zero_grad()


def test_lm_head_sees_only_generated_positions_one_chunk_at_a_time(batch):
    model, s = batch
    seen = []
    hook = model.get_output_embeddings().register_forward_hook(lambda mod, inp, out: seen.append(tuple(inp[0].shape)))
    try:
        masked_token_logprobs(model, s.tokens, s.attention_mask, s.loss_mask, chunk_size=16).sum().backward()
    finally:
        hook.remove()
        model.zero_grad()
    generated = int(s.loss_mask.sum())
    assert all(len(shape) == 2 and shape[0] <= 16 for shape in seen)  # never [N, L, H]
    forward = seen[: len(seen) // 2]  # checkpointed chunks run again in backward
    assert sum(shape[0] for shape in forward) == generated < s.tokens.numel() // 3


def test_lora_models_and_bad_temperature(batch):
    model, s = batch
    lora = apply_lora(tiny_qwen3_policy(envs=["banking"], seed=0).model, dict(r=2, alpha=4, target_modules=["q_proj"]))
    out = masked_token_logprobs(lora, s.tokens, s.attention_mask, s.loss_mask)
    out.sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for n, p in lora.named_parameters() if "lora_" in n)
    with pytest.raises(ValueError, match="temperature"):
        masked_token_logprobs(model, s.tokens, s.attention_mask, s.loss_mask, temperature=0.0)
