"""The transformers engine on the real tiny Qwen3: left padding, stop tokens, reported log-probs."""

from __future__ import annotations

import copy

import pytest
import torch

from envsched_lightning.grpo import token_logprobs
from envsched_lightning.rollout import HFEngine, RolloutEngine, SamplingConfig


def prompts(tok):
    return [
        tok.encode("<|im_start|>user\nMake the counter 2.<|im_end|>\n<|im_start|>assistant\n",
                   add_special_tokens=False),  # fmt: skip
        tok.encode("<|im_start|>assistant\n", add_special_tokens=False),
    ]


def test_generates_token_ids_and_text(tiny_policy):
    model, tok = tiny_policy
    engine = HFEngine(model, tok)
    assert isinstance(engine, RolloutEngine)
    out = engine.generate(prompts(tok), SamplingConfig(max_new_tokens=10, seed=0))
    assert len(out) == 2
    for c in out:
        assert 1 <= len(c.token_ids) <= 10
        body = c.token_ids[:-1] if c.token_ids[-1] == tok.eos_token_id else c.token_ids
        assert c.text == tok.decode(body, skip_special_tokens=False)
        assert tok.eos_token_id not in body and tok.pad_token_id not in c.token_ids


def test_left_padding_does_not_change_greedy_output(tiny_policy):
    model, tok = tiny_policy
    engine = HFEngine(model, tok)
    greedy = SamplingConfig(max_new_tokens=8).greedy()
    batched = engine.generate(prompts(tok), greedy)
    alone = [engine.generate([p], greedy)[0] for p in prompts(tok)]
    assert [c.token_ids for c in batched] == [c.token_ids for c in alone]


def test_reported_logprobs_match_the_training_forward(tiny_policy):
    """Sampling and training must see the same policy, or the first PPO ratio is not 1."""
    model, tok = tiny_policy
    engine = HFEngine(model, tok, return_logprobs=True)
    prompt = prompts(tok)[0]
    (c,) = engine.generate([prompt], SamplingConfig(max_new_tokens=6, seed=1))
    seq = torch.tensor([prompt + c.token_ids])  # [1, L]
    with torch.no_grad():
        lp = token_logprobs(model(input_ids=seq).logits, seq)[0, len(prompt) - 1 :]  # [len(c.token_ids)]
    torch.testing.assert_close(torch.tensor(c.logprobs), lp, atol=1e-4, rtol=1e-4)


def test_generation_leaves_the_training_mode_alone(tiny_policy):
    model, tok = tiny_policy
    model.train()
    HFEngine(model, tok).generate(prompts(tok)[:1], SamplingConfig(max_new_tokens=2))
    assert model.training


def test_a_static_cache_samples_the_same_tokens(tiny_policy):
    """`cache="static"` only changes where keys and values are kept: same draws, same log-probs."""
    model, tok = tiny_policy
    sampling = SamplingConfig(max_new_tokens=8, seed=3)
    dynamic = HFEngine(model, tok, return_logprobs=True).generate(prompts(tok), sampling)
    static = HFEngine(model, tok, return_logprobs=True, cache="static").generate(prompts(tok), sampling)
    assert [c.token_ids for c in static] == [c.token_ids for c in dynamic]
    for s, d in zip(static, dynamic):
        torch.testing.assert_close(torch.tensor(s.logprobs), torch.tensor(d.logprobs), atol=1e-5, rtol=1e-5)


def test_an_unknown_cache_is_refused(tiny_policy):
    model, tok = tiny_policy
    with pytest.raises(ValueError, match="rollout.cache='paged'"):
        HFEngine(model, tok, cache="paged")


def test_half_precision_logprobs_are_not_called_exact(tiny_policy):
    """bf16 cached decoding and the training forward round differently: reusing them as pi_old is refused."""
    model, tok = tiny_policy
    sampling = SamplingConfig(max_new_tokens=4)
    assert HFEngine(model, tok, return_logprobs=True).exact_logprobs(sampling) is None
    half = copy.deepcopy(model).to(torch.bfloat16)
    why = HFEngine(half, tok, return_logprobs=True).exact_logprobs(sampling)
    assert why and "bfloat16" in why and "recompute pi_old" in why


@pytest.mark.parametrize("cache", ["dynamic", "static"])
def test_a_shared_prefill_samples_what_separate_prefills_sample(tiny_policy, cache):
    """A group's G copies of one prompt are prefilled once: the same draws and log-probs as G prefills."""
    model, tok = tiny_policy
    group = [prompts(tok)[0]] * 3 + [prompts(tok)[1]] * 2 + [prompts(tok)[0][:-2]]  # repeats, another width
    sampling = SamplingConfig(max_new_tokens=8, seed=5)
    calls = []
    hook = model.register_forward_pre_hook(lambda mod, args, kw: calls.append(kw["input_ids"].shape), with_kwargs=True)
    try:
        shared = HFEngine(model, tok, return_logprobs=True, cache=cache).generate(group, sampling)
        prefill_rows = calls[0][0]
        alone = HFEngine(model, tok, return_logprobs=True, cache=cache, share_prefill=False).generate(group, sampling)
    finally:
        hook.remove()
    assert prefill_rows == 3  # three distinct prompts among six rows
    assert [c.token_ids for c in shared] == [c.token_ids for c in alone]
    for s, a in zip(shared, alone):
        torch.testing.assert_close(torch.tensor(s.logprobs), torch.tensor(a.logprobs), atol=1e-5, rtol=1e-5)
