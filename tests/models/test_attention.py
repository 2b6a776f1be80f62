"""`attn_implementation="sdpa_gqa"`: the same numbers as transformers' sdpa, without copying K/V heads."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from envsched_lightning.models import build_offline_tokenizer, load_pretrained_policy
from envsched_lightning.models.attention import GQA_SDPA
from envsched_lightning.rollout import HFEngine, SamplingConfig


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    """A real Llama folder with grouped-query attention (4 query heads sharing 2 key/value heads)."""
    tok = build_offline_tokenizer(vocab_size=400)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2)  # fmt: skip
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("llama_gqa")
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def load(folder, attn):
    torch.manual_seed(0)  # the same LoRA A matrices for both loads
    return load_pretrained_policy(folder, dtype="float32", lora=dict(r=4, alpha=8, target_modules="all"),
                                  gradient_checkpointing=False, attn_implementation=attn)  # fmt: skip


def padded_batch():
    torch.manual_seed(1)
    ids = torch.randint(5, 390, (3, 24))  # [3, 24]
    mask = torch.ones_like(ids)
    mask[0, :9] = 0  # left padding, as the engine pads
    mask[2, :3] = 0
    return ids, mask


def test_logits_and_gradients_equal_sdpa_on_a_left_padded_batch(llama_dir):
    ids, mask = padded_batch()
    outs = {}
    for attn in ("sdpa", GQA_SDPA):
        model, _ = load(llama_dir, attn)
        assert model.config._attn_implementation == attn
        model.train()
        logits = model(input_ids=ids, attention_mask=mask).logits  # [3, 24, V]
        (logits[mask.bool()].float().logsumexp(-1).mean()).backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        outs[attn] = (logits.detach()[mask.bool()], grads)
    ref, new = outs["sdpa"], outs[GQA_SDPA]
    torch.testing.assert_close(new[0], ref[0], atol=1e-5, rtol=1e-5)
    assert new[1].keys() == ref[1].keys() and ref[1]
    for name in ref[1]:
        torch.testing.assert_close(new[1][name], ref[1][name], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("cache", ["dynamic", "static"])
def test_greedy_generation_matches_sdpa_with_either_cache(llama_dir, cache):
    ids, mask = padded_batch()
    prompts = [row[m.bool()].tolist() for row, m in zip(ids, mask)] * 2  # ragged, each twice (a shared prefill)
    greedy = SamplingConfig(max_new_tokens=12).greedy()
    ref_model, tok = load(llama_dir, "sdpa")
    ref = HFEngine(ref_model, tok, share_prefill=False).generate(prompts, greedy)
    model, tok = load(llama_dir, GQA_SDPA)
    out = HFEngine(model, tok, cache=cache).generate(prompts, greedy)
    assert [c.token_ids for c in out] == [c.token_ids for c in ref]
    assert all(len(c.token_ids) > 1 for c in ref)
