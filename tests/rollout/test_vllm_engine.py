"""Weight-sync bookkeeping of the vLLM engine, in the default suite.

The default suite's environment has no vLLM, so `FakeVLLM` below is a STAND-IN for the three vLLM
names the engine uses (`LLM`, `SamplingParams`, `LoRARequest`) and for `LLM.collective_rpc` (the
worker-extension calls, recorded, not run; `FakeVLLM(rpc=False)` is a vLLM without them): it records
every call and answers with canned token ids. What is real: the peft LoRA model whose adapter is saved, the tokenizer, and
the engine's own bookkeeping. The engine against real vLLM is tested in `tests/vllm/`
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

    def __init__(self, reply_ids, rpc: bool = True):
        self.reply_ids = reply_ids
        self.llm_kwargs = None
        self.generate_calls = []
        self.rpc_calls = []
        self.prefix_resets = 0
        if rpc:
            self.collective_rpc = lambda method, args=(): self.rpc_calls.append((method, args)) or [None]
        self.LLM = self._make_llm
        self.SamplingParams = lambda **kw: SimpleNamespace(**kw)
        self.LoRARequest = lambda name, int_id, path: SimpleNamespace(
            lora_name=name, lora_int_id=int_id, lora_path=path
        )

    def _make_llm(self, **kwargs):
        self.llm_kwargs = kwargs
        return self

    def reset_prefix_cache(self):
        self.prefix_resets += 1

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
                        adapter_dir=str(tmp_path), weight_sync="disk", api=fake)  # fmt: skip
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
                        weight_sync="disk", api=FakeVLLM([0]))  # fmt: skip
    for _ in range(7):
        engine.sync_weights(lora_model)
    assert engine.lora_id == 3  # calls 1 (the start of training), 4 and 7
    assert [p.name for p in tmp_path.iterdir()] == ["policy"]


def test_in_memory_sync_hands_the_adapter_tensors_to_the_worker_and_writes_nothing(tiny_policy, lora_model, tmp_path):
    from peft import get_peft_model_state_dict

    fake = FakeVLLM([0])
    engine = VLLMEngine(lora_model, tiny_policy.tokenizer, model_path="m", adapter_dir=str(tmp_path), api=fake)
    assert fake.rpc_calls == [] and engine.weight_sync == "memory"
    engine.sync_weights(lora_model)
    engine.sync_weights(lora_model)
    assert fake.llm_kwargs["worker_extension_cls"] == "envsched_lightning.rollout.vllm_worker.WeightSyncExtension"
    assert [(m, a[0]) for m, a in fake.rpc_calls] == [("envsched_install_adapter", 1), ("envsched_install_adapter", 2)]
    _, tensors, config = fake.rpc_calls[-1][1]
    expected = get_peft_model_state_dict(lora_model)
    assert tensors.keys() == expected.keys() and all(tensors[k].equal(expected[k]) for k in expected)
    assert all(tensors[k].data_ptr() != expected[k].data_ptr() for k in expected)  # copies: training goes on in place
    assert json.loads(json.dumps(config)) == config and config["r"] == 4 and sorted(config["target_modules"]) == ["q_proj", "v_proj"]
    engine.generate([[1]], SamplingConfig(max_new_tokens=2))
    req = fake.generate_calls[-1].lora_request
    assert (req.lora_int_id, req.lora_name, req.lora_path) == (2, "policy-2", "in-memory/policy-2")
    assert list(tmp_path.iterdir()) == []  # no adapter folder


def test_a_vllm_without_the_worker_extension_falls_back_to_the_folder_and_says_so_once(tiny_policy, lora_model, tmp_path, caplog):
    engine = VLLMEngine(lora_model, tiny_policy.tokenizer, model_path="m", adapter_dir=str(tmp_path), api=FakeVLLM([0], rpc=False))
    for _ in range(3):
        engine.sync_weights(lora_model)
    assert engine.weight_sync == "disk" and engine.lora_request.lora_path == str(tmp_path / "policy")
    assert [r.message.startswith("rollout.weight_sync=memory is not available") for r in caplog.records].count(True) == 1


def test_a_model_without_lora_is_served_as_full_weights_synced_in_whole_blocks(tiny_policy):
    model = build_tiny_qwen3(vocab_size=len(tiny_policy.tokenizer))
    model.model.embed_tokens.weight.requires_grad_(False)  # frozen: vLLM already holds it
    for name, p in model.model.layers[0].named_parameters():
        p.requires_grad_(name == "mlp.up_proj.weight")  # one trainable weight: its whole block goes (vLLM packs gate/up)
    fake = FakeVLLM([0])
    engine = VLLMEngine(model, tiny_policy.tokenizer, model_path="m", sync_chunk_mb=0.05, api=fake)
    assert not engine.lora
    engine.sync_weights(model)
    assert "enable_lora" not in fake.llm_kwargs and "max_lora_rank" not in fake.llm_kwargs
    chunks = [args[0] for method, args in fake.rpc_calls if method == "envsched_load_weights"]
    sent = [name for chunk in chunks for name, _ in chunk]
    assert sent == [n for n, _ in model.named_parameters() if n != "model.embed_tokens.weight"]  # each once, in order
    blocks = [{n.split(".")[2] for n, _ in chunk if n.startswith("model.layers.")} for chunk in chunks]
    assert len(chunks) > 1 and all(a.isdisjoint(b) for i, a in enumerate(blocks) for b in blocks[i + 1 :])  # no block split
    assert fake.prefix_resets == 1 and engine.lora_request is None  # no KV block of the old weights is reused


def test_merge_lora_serves_base_plus_adapter_as_full_weights_under_their_own_names(tiny_policy, lora_model):
    import copy

    import torch

    with torch.no_grad():
        for name, p in lora_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.1)  # a trained adapter (B starts at zero)
    fake = FakeVLLM([0])
    engine = VLLMEngine(lora_model, tiny_policy.tokenizer, model_path="m", merge_lora=True, sync_chunk_mb=0.05, api=fake)
    engine.sync_weights(lora_model)
    assert "enable_lora" not in fake.llm_kwargs and engine.lora_request is None and fake.prefix_resets == 1
    sent = dict(kv for method, args in fake.rpc_calls if method == "envsched_load_weights" for kv in args[0])
    expected = copy.deepcopy(lora_model).merge_and_unload().state_dict()  # peft's own merge
    assert set(sent) == {n for n in expected if n.startswith("model.layers.")}  # every block is adapted; nothing else is sent
    assert all(torch.allclose(sent[n], expected[n], atol=1e-6) for n in sent)
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.allclose(sent[q], lora_model.get_base_model().get_submodule("model.layers.0.self_attn.q_proj").base_layer.weight)


@pytest.mark.parametrize("lora", [True, False], ids=["adapter", "full weights"])
def test_weights_synced_while_the_engine_sleeps_are_handed_over_when_it_wakes(tiny_policy, lora_model, lora):
    model = lora_model if lora else build_tiny_qwen3(vocab_size=len(tiny_policy.tokenizer))
    fake = FakeVLLM([0])
    fake.sleep = lambda level: None
    fake.wake_up = lambda: fake.rpc_calls.append(("wake_up", ()))
    engine = VLLMEngine(model, tiny_policy.tokenizer, model_path="m", sleep_mode=True, api=fake)
    engine.llm
    engine.sleep()
    engine.sync_weights(model)
    assert fake.rpc_calls == [] and engine.lora_request is None  # waking restores what it offloaded: now would be overwritten
    engine.wake_up()
    calls = [m for m, _ in fake.rpc_calls]
    if lora:
        assert calls == ["wake_up", "envsched_install_adapter"] and engine.lora_request.lora_int_id == 1
    else:  # one call per chunk of blocks
        assert calls[0] == "wake_up" and calls[1:] and set(calls[1:]) == {"envsched_load_weights"}


def test_settings_that_cannot_work_are_refused(tiny_policy, lora_model):
    model = build_tiny_qwen3(vocab_size=len(tiny_policy.tokenizer))
    with pytest.raises(ValueError, match="weight_sync=disk saves LoRA adapters"):
        VLLMEngine(model, tiny_policy.tokenizer, model_path="m", weight_sync="disk", api=FakeVLLM([0]))
    with pytest.raises(ValueError, match="weight_sync must be one of memory, disk"):
        VLLMEngine(lora_model, tiny_policy.tokenizer, model_path="m", weight_sync="nccl", api=FakeVLLM([0]))
    engine = VLLMEngine(lora_model, tiny_policy.tokenizer, model_path="m", api=FakeVLLM([0]))
    with pytest.raises(TypeError, match="built for a training model with LoRA, but this one has none"):
        engine.sync_weights(model)
    with pytest.raises(ValueError, match="merge_lora=true merges a LoRA adapter .* this model has no LoRA"):
        VLLMEngine(model, tiny_policy.tokenizer, model_path="m", merge_lora=True, api=FakeVLLM([0]))


def test_vllm_is_not_imported_until_used(tiny_policy, lora_model, monkeypatch):
    import envsched_lightning.rollout.vllm_engine as vllm_engine

    def refuse():
        raise AssertionError("vLLM imported at construction")

    monkeypatch.setattr(vllm_engine, "import_vllm", refuse)
    VLLMEngine(lora_model, tiny_policy.tokenizer, model_path="m")  # constructing never imports vLLM


def test_an_option_vllm_does_not_take_is_named_before_the_engine_starts(tiny_policy, lora_model):
    import dataclasses

    @dataclasses.dataclass
    class EngineArgs:  # stand-in for vLLM's: the fields it accepts
        enforce_eager: bool = False

    fake = FakeVLLM([0])
    fake.EngineArgs = EngineArgs
    engine = VLLMEngine(lora_model, tiny_policy.tokenizer, model_path="m", api=fake, enforce_eager=True, max_num_seq=4)
    with pytest.raises(ValueError, match="rollout: max_num_seq is not an option of the vllm rollout"):
        engine.llm
    assert fake.llm_kwargs is None  # refused before vLLM was asked to start
    VLLMEngine(lora_model, tiny_policy.tokenizer, model_path="m", api=fake, enforce_eager=True).llm
    assert fake.llm_kwargs["enforce_eager"] is True
