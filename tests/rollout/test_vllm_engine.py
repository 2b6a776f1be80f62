"""Weight-sync bookkeeping of the vLLM engine, in the default suite.

The default suite's environment has no vLLM, so `FakeVLLM` below is a STAND-IN for the three vLLM
names the engine uses (`LLM`, `SamplingParams`, `LoRARequest`): it records every call and answers
with canned token ids. What is real: the peft LoRA model whose adapter is saved, the tokenizer, and
the engine's own bookkeeping. The engine against real vLLM is tested in `tests_vllm/`
(`make test-vllm`).
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from envsched_lightning.models import apply_lora
from envsched_lightning.models.qwen3 import build_tiny_qwen3
from envsched_lightning.rollout import RolloutEngine, SamplingConfig, VLLMEngine


class FakeVLLM:
    """Stand-in for vLLM: records constructor, generate calls, sampling params and LoRA requests."""

    def __init__(self, reply_ids):
        self.reply_ids = reply_ids
        self.llm_kwargs = None
        self.generate_calls = []
        self.LLM = self._make_llm
        self.SamplingParams = lambda **kw: SimpleNamespace(**kw)
        self.LoRARequest = lambda name, int_id, path: SimpleNamespace(
            lora_name=name, lora_int_id=int_id, lora_path=path
        )

    def _make_llm(self, **kwargs):
        self.llm_kwargs = kwargs
        return self

    def generate(self, requests, params, use_tqdm=False, lora_request=None):
        self.generate_calls.append(SimpleNamespace(requests=requests, params=params, lora_request=lora_request))
        logprobs = [{t: SimpleNamespace(logprob=-0.5)} for t in self.reply_ids]
        sample = SimpleNamespace(token_ids=list(self.reply_ids), logprobs=logprobs)
        return [SimpleNamespace(outputs=[sample]) for _ in requests]


@pytest.fixture()
def lora_model(tiny_policy):
    model = build_tiny_qwen3(vocab_size=len(tiny_policy.tokenizer))
    return apply_lora(model, dict(r=4, alpha=8, target_modules=["q_proj", "v_proj"]))


def test_weight_sync_saves_adapter_and_advances_the_request(tiny_policy, lora_model, tmp_path):
    tok = tiny_policy.tokenizer
    reply = tok.encode("The counter is 2.", add_special_tokens=False) + [tok.eos_token_id]
    fake = FakeVLLM(reply)
    engine = VLLMEngine(lora_model, tok, model_path="/weights/Qwen3-8B", tensor_parallel_size=2, max_lora_rank=8,
                        adapter_dir=str(tmp_path), api=fake)  # fmt: skip
    assert isinstance(engine, RolloutEngine)
    sampling = SamplingConfig(max_new_tokens=7, temperature=0.7, top_p=0.9, seed=3)

    out = engine.generate([[1, 2, 3], [4, 5]], sampling)  # before any sync: the base model
    assert fake.llm_kwargs["enable_lora"] is True and fake.llm_kwargs["tensor_parallel_size"] == 2
    assert fake.llm_kwargs["model"] == "/weights/Qwen3-8B" and fake.llm_kwargs["max_lora_rank"] == 8
    first = fake.generate_calls[-1]
    assert first.lora_request is None
    assert first.requests == [{"prompt_token_ids": [1, 2, 3]}, {"prompt_token_ids": [4, 5]}]
    p, q = first.params  # one SamplingParams per request: seeds differ so a group's rollouts differ
    assert (p.max_tokens, p.temperature, p.top_p, p.top_k, p.seed) == (7, 0.7, 0.9, -1, 3)
    assert q.seed == 4 and fake.llm_kwargs["logprobs_mode"] == "processed_logprobs"
    assert tok.eos_token_id in p.stop_token_ids and p.skip_special_tokens is False
    assert out[0].text == "The counter is 2." and out[0].logprobs == [-0.5] * len(reply)

    engine.sync_weights(lora_model)
    engine.generate([[1]], sampling)
    req = fake.generate_calls[-1].lora_request
    assert (req.lora_int_id, req.lora_name) == (1, "policy-1")
    saved = tmp_path / "policy"
    assert req.lora_path == str(saved)
    assert (saved / "adapter_config.json").is_file() and (saved / "adapter_model.safetensors").is_file()
    assert json.loads((saved / "adapter_config.json").read_text())["r"] == 4

    engine.sync_weights(lora_model)
    engine.generate([[1]], sampling.greedy())
    req2 = fake.generate_calls[-1].lora_request
    assert (req2.lora_int_id, req2.lora_name) == (2, "policy-2")  # a new id and name: vLLM reloads the adapter
    assert req2.lora_path == req.lora_path and [p.name for p in tmp_path.iterdir()] == ["policy"]  # one folder
    assert fake.generate_calls[-1].params[0].temperature == 0.0


def test_without_a_seed_one_params_object_serves_every_request(tiny_policy, lora_model, tmp_path):
    fake = FakeVLLM([0])
    engine = VLLMEngine(lora_model, tiny_policy.tokenizer, model_path="m", adapter_dir=str(tmp_path), api=fake)
    engine.generate([[1], [2]], SamplingConfig(max_new_tokens=3))
    assert fake.generate_calls[-1].params.seed is None  # vLLM's engine seed drives sampling


def test_sync_every_k_steps(tiny_policy, lora_model, tmp_path):
    engine = VLLMEngine(lora_model, tiny_policy.tokenizer, model_path="m", sync_every=3, adapter_dir=str(tmp_path),
                        api=FakeVLLM([0]))  # fmt: skip
    for _ in range(7):
        engine.sync_weights(lora_model)
    assert engine.lora_id == 3  # calls 1 (the start of training), 4 and 7
    assert [p.name for p in tmp_path.iterdir()] == ["policy"]


def test_full_weight_models_are_refused(tiny_policy, tmp_path):
    model = build_tiny_qwen3(vocab_size=len(tiny_policy.tokenizer))
    engine = VLLMEngine(model, tiny_policy.tokenizer, model_path="m", adapter_dir=str(tmp_path), api=FakeVLLM([0]))
    with pytest.raises(TypeError, match="LoRA"):
        engine.sync_weights(model)


def test_vllm_is_not_imported_until_used(tiny_policy, lora_model, monkeypatch):
    import envsched_lightning.rollout.vllm_engine as vllm_engine

    def refuse():
        raise AssertionError("vLLM imported at construction")

    monkeypatch.setattr(vllm_engine, "import_vllm", refuse)
    VLLMEngine(lora_model, tiny_policy.tokenizer, model_path="m")  # constructing never imports vLLM
