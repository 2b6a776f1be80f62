"""Qwen3 policies (tiny random or real local weights), LoRA, and the offline Qwen3-style tokenizer."""

from .chat_template import QWEN3_STYLE_TEMPLATE, reference_chat_template
from .qwen3 import (
    TINY_QWEN3,
    LoraSettings,
    Policy,
    apply_lora,
    build_tiny_qwen3,
    load_pretrained_qwen3,
    tiny_qwen3_policy,
)
from .tokenizer import SPECIAL_TOKENS, build_offline_tokenizer, environment_corpus

__all__ = [
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
