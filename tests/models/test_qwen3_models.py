"""Tiny Qwen3, LoRA, and loading real weights from a local directory (here: a saved tiny one)."""

from __future__ import annotations

import pytest
import torch
from transformers import Qwen3ForCausalLM

from envsched_lightning.models import (
    LoraSettings,
    build_offline_tokenizer,
    build_tiny_qwen3,
    load_pretrained_qwen3,
    tiny_qwen3_policy,
)


def test_tiny_qwen3_is_the_real_class_and_seeded():
    a, b = build_tiny_qwen3(vocab_size=300, seed=1), build_tiny_qwen3(vocab_size=300, seed=1)
    assert type(a) is Qwen3ForCausalLM and a.config.model_type == "qwen3"
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert build_tiny_qwen3(vocab_size=300, num_hidden_layers=3).config.num_hidden_layers == 3


def test_policy_sizes_the_model_to_the_tokenizer():
    model, tok = tiny_qwen3_policy(vocab_size=512)
    assert model.config.vocab_size == len(tok)
    assert model.config.eos_token_id == tok.eos_token_id and model.config.pad_token_id == tok.pad_token_id


def test_lora_trains_only_adapters():
    model, _ = tiny_qwen3_policy(vocab_size=512, lora=dict(r=4, alpha=8, target_modules=["q_proj", "v_proj"]))
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert LoraSettings.coerce({"r": 2, "target_modules": ["o_proj"]}).target_modules == ("o_proj",)


def test_load_pretrained_from_a_local_directory(tmp_path):
    tok = build_offline_tokenizer(vocab_size=400)
    build_tiny_qwen3(vocab_size=len(tok)).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    model, loaded_tok = load_pretrained_qwen3(str(tmp_path), dtype="float32", lora=LoraSettings(r=4, alpha=8),
                                              gradient_checkpointing=True)  # fmt: skip
    assert hasattr(model, "disable_adapter") and model.base_model.model.model.gradient_checkpointing
    assert loaded_tok.padding_side == "left" and len(loaded_tok) == len(tok)
    x = torch.tensor([[1, 2, 3]])
    model.train()
    model(input_ids=x, labels=x).loss.backward()  # checkpointing + LoRA still backpropagates


@pytest.mark.parametrize("where", ["missing", "empty", "hub-id"])
def test_missing_weights_fail_with_a_clear_message(tmp_path, where):
    path = {"missing": str(tmp_path / "nope"), "empty": str(tmp_path), "hub-id": "Qwen/Qwen3-8B-not-cached"}[where]
    with pytest.raises(FileNotFoundError, match="not available locally"):
        load_pretrained_qwen3(path)
