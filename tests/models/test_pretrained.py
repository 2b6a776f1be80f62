"""Any local causal LM as the policy: real folders written here (tiny Llama and Qwen3), loaded back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaForCausalLM

from envsched_lightning.models import (
    CheckpointMismatch,
    build_offline_tokenizer,
    build_tiny_qwen3,
    load_pretrained_policy,
    load_pretrained_qwen3,
)
from envsched_lightning.models.families import lora_targets


@pytest.fixture(scope="module")
def tok():
    return build_offline_tokenizer(vocab_size=400)


def write(model, tok, folder):
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def llama_dir(tok, tmp_path_factory):
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)  # fmt: skip
    torch.manual_seed(0)
    return write(LlamaForCausalLM(cfg), tok, tmp_path_factory.mktemp("llama"))


@pytest.mark.parametrize("checkpointing", [False, True])
def test_a_llama_folder_loads_as_llama_and_trains(llama_dir, checkpointing):
    model, tok = load_pretrained_policy(llama_dir, dtype="float32", lora=dict(r=4, alpha=8, target_modules="all"),
                                        gradient_checkpointing=checkpointing)  # fmt: skip
    assert type(model.base_model.model).__name__ == "LlamaForCausalLM"
    adapted = {n.split(".lora_")[0].rsplit(".", 1)[-1] for n, p in model.named_parameters() if p.requires_grad}
    assert adapted == set(lora_targets("llama", "all"))
    assert tok.padding_side == "left" and tok.pad_token is not None
    x = torch.tensor([[1, 2, 3, 4]])
    model.train()
    model(input_ids=x, labels=x).loss.backward()
    lora_b = {n: p.grad for n, p in model.named_parameters() if "lora_B" in n}  # A's grads are 0 while B is 0
    assert all(g is not None and g.abs().sum() > 0 for g in lora_b.values())  # the lowest block's adapters too


def test_the_qwen3_loader_refuses_another_family_by_name(llama_dir):
    with pytest.raises(CheckpointMismatch, match="'llama' model, not 'qwen3'.*model=pretrained"):
        load_pretrained_qwen3(llama_dir, dtype="float32")


def test_weights_missing_from_the_architecture_are_named(llama_dir, tmp_path):
    """A Qwen3 config over Llama weights: every layer's q_norm / k_norm would start random."""
    for f in ("model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / f).write_bytes((Path(llama_dir) / f).read_bytes())
    qwen = build_tiny_qwen3(vocab_size=LlamaConfig.from_pretrained(llama_dir).vocab_size, num_hidden_layers=4,
                            tie_word_embeddings=True).config.to_dict()  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(qwen))
    with pytest.raises(CheckpointMismatch, match=r"8 weights missing .*layers\.0\.self_attn\.k_norm\.weight"):
        load_pretrained_policy(str(tmp_path), dtype="float32")
    qwen["vocab_size"] += 8  # and an embedding of the wrong shape: transformers refuses it, named as ours
    (tmp_path / "config.json").write_text(json.dumps(qwen))
    with pytest.raises(CheckpointMismatch, match="wrong shape"):
        load_pretrained_policy(str(tmp_path), dtype="float32")


def test_unexpected_weights_are_named(tok, tmp_path):
    folder = write(build_tiny_qwen3(vocab_size=len(tok)), tok, tmp_path)
    weights = load_file(tmp_path / "model.safetensors")
    weights["model.layers.0.mlp.extra_proj.weight"] = torch.zeros(2, 2)
    save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointMismatch, match="1 weights unexpected.*extra_proj"):
        load_pretrained_qwen3(folder, dtype="float32")


def test_top_layers_adapt_only_the_last_blocks_and_backward_stops_below_them(llama_dir):
    model, _ = load_pretrained_policy(llama_dir, dtype="float32", gradient_checkpointing=True,
                                      lora=dict(r=4, alpha=8, target_modules="attention", top_layers=1))  # fmt: skip
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert names and all(".layers.3." in n for n in names)
    seen = {}
    layers = model.base_model.model.model.layers
    for i in (0, 2, 3):
        layers[i].register_forward_hook(lambda _m, _i, out, i=i: seen.__setitem__(i, (out[0] if isinstance(out, tuple) else out).requires_grad))
    model.train()
    x = torch.tensor([[1, 2, 3, 4]])
    model(input_ids=x, labels=x).loss.backward()
    assert seen == {0: False, 2: False, 3: True}  # no autograd graph through the frozen blocks


def test_family_table_errors_say_what_to_pass():
    with pytest.raises(ValueError, match="no LoRA target table for model_type 'gpt2'"):
        lora_targets("gpt2", "all")
    with pytest.raises(ValueError, match="list of module names"):
        lora_targets("llama", "mlp-only")
    with pytest.raises(ValueError, match="model_path="):
        load_pretrained_policy(None)


@pytest.mark.parametrize("written_by_make", [False, True])
def test_a_weights_file_cut_short_is_named_with_the_way_to_get_it_whole(tok, tmp_path, written_by_make):
    """safetensors says only "incomplete metadata": the error names the file and what to run."""
    from envsched_lightning.console import RunConfigError
    from envsched_lightning.models.smollm2 import MANIFEST

    folder = write(build_tiny_qwen3(vocab_size=len(tok)), tok, tmp_path)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # a copy that stopped halfway
    if written_by_make:
        (tmp_path / MANIFEST).write_text("{}")
    fix = r"run `make smollm2` again" if written_by_make else "copy or download the weights into"
    with pytest.raises(RunConfigError, match=rf"model weights {weights} \(.*incomplete.*\): .*{fix}"):
        load_pretrained_policy(folder, dtype="float32")
