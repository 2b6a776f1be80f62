"""Policies: any local causal LM (`load_pretrained_policy`), the tiny random Qwen3, LoRA, the offline tokenizer."""

from .chat_template import QWEN3_STYLE_TEMPLATE, reference_chat_template
from .qwen3 import (
    TINY_QWEN3,
    LoraSettings,
    Policy,
    apply_lora,
    build_tiny_qwen3,
    tiny_qwen3_policy,
)
from .pretrained import CheckpointMismatch, IncompleteWeights, load_pretrained_policy, load_pretrained_qwen3
from .tokenizer import SPECIAL_TOKENS, build_offline_tokenizer, environment_corpus

__all__ = [
    "CheckpointMismatch",
    "IncompleteWeights",
    "load_pretrained_policy",
    "QWEN3_STYLE_TEMPLATE",
    "SPECIAL_TOKENS",
    "TINY_QWEN3",
    "LoraSettings",
    "Policy",
    "apply_lora",
    "build_offline_tokenizer",
    "build_tiny_qwen3",
    "environment_corpus",
    "load_pretrained_qwen3",
    "reference_chat_template",
    "tiny_qwen3_policy",
]
