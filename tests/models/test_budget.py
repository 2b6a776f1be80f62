"""The 8B memory budget counts what the real model and peft would allocate, and the shipped config fits."""

from __future__ import annotations

from envsched_lightning.models import apply_lora, build_tiny_qwen3
from envsched_lightning.models.budget import GB, QWEN3_8B, Architecture, estimate, main

SHAPE = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
             num_key_value_heads=2, head_dim=32, tie_word_embeddings=False)  # fmt: skip
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def test_parameter_counts_match_a_real_qwen3_and_its_peft_adapter():
    model = build_tiny_qwen3(vocab_size=300, **SHAPE)
    arch = Architecture.from_config(model.config.to_dict())
    assert arch.parameters() == sum(p.numel() for p in model.parameters())
    wrapped = apply_lora(model, dict(r=4, alpha=8, target_modules=TARGETS))
    assert arch.lora_parameters(4, TARGETS) == sum(p.numel() for p in wrapped.parameters() if p.requires_grad)


def test_qwen3_8b_is_8_billion_parameters_with_144_kib_of_kv_per_token():
    arch = Architecture.from_config(QWEN3_8B)
    assert 8.1e9 < arch.parameters() < 8.3e9  # Qwen3-8B: 8.2B
    assert arch.kv_bytes_per_token(2) == 147456


def test_more_tokens_per_micro_batch_cost_more_and_a_smaller_gpu_leaves_less_margin():
    arch = Architecture.from_config(QWEN3_8B)
    cfg = {"model": {"policy": {"dtype": "bfloat16", "lora": {"r": 16, "target_modules": TARGETS}},
                     "grpo": {"micro_batch_size": 4, "max_seq_len": 8192}},
           "rollout": {"gpu_memory_utilization": 0.45}, "data": {"batch_size": 32}}  # fmt: skip
    base = estimate(arch, cfg, 141)
    doubled = estimate(arch, {**cfg, "model": {**cfg["model"], "grpo": {"micro_batch_size": 8, "max_seq_len": 8192}}}, 141)
    assert doubled.trainer_total > base.trainer_total
    assert base.step["rollouts per step"] == 256
    assert base.vllm_total == 0.45 * 141 * GB
    assert estimate(arch, cfg, 80).vllm["KV cache"] < base.vllm["KV cache"]


def test_the_shipped_8b_experiment_fits_one_h200_with_a_margin(capsys):
    main(["experiment=envsched_qwen3_8b"])
    out = capsys.readouterr().out
    margin = float(out.split("margin on 141 GB, both resident** | **")[1].split("**")[0])
    assert margin > 20, out
