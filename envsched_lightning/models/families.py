"""What differs between model families, in one table: which linear layers LoRA adapts.

The loader (`pretrained.py`) is the same for every family; only names differ. Qwen2/2.5/3, Llama
(SmolLM2 included), Mistral and Gemma share the Llama layout (``q_proj`` ... ``down_proj``); Phi-3
fuses projections. `LoraSettings.target_modules` takes a list of names, or ``attention`` / ``all``,
resolved here against the loaded model's ``config.model_type``. How a family writes tool calls is
read from its chat template at run time (`rollout.chat`), not from this table.
"""

from __future__ import annotations

from typing import NamedTuple


class LoraTargets(NamedTuple):
    attention: tuple[str, ...]
    mlp: tuple[str, ...]


LLAMA_LAYOUT = LoraTargets(("q_proj", "k_proj", "v_proj", "o_proj"), ("gate_proj", "up_proj", "down_proj"))

LORA_TARGETS: dict[str, LoraTargets] = {
    **{t: LLAMA_LAYOUT for t in ("qwen3", "qwen2", "llama", "mistral", "gemma", "gemma2", "gemma3_text", "gemma3",
                                 "granite", "olmo2", "smollm3", "qwen3_moe")},  # fmt: skip
    "phi3": LoraTargets(("qkv_proj", "o_proj"), ("gate_up_proj", "down_proj")),
}
"""LoRA target names per ``config.model_type``; add a row for a family with other layer names."""

SCOPES = ("attention", "all")


def lora_targets(model_type: str, scope: str) -> tuple[str, ...]:
    """The module names `scope` means for this family (``attention``: the attention projections;
    ``all``: those and the MLP's); an unknown family or scope is an error saying what to pass."""
    if scope not in SCOPES:
        raise ValueError(f"LoRA target_modules {scope!r}: give a list of module names or one of {SCOPES}")
    if model_type not in LORA_TARGETS:
        raise ValueError(
            f"no LoRA target table for model_type {model_type!r} (known: {', '.join(sorted(LORA_TARGETS))}): "
            f"pass model.policy.lora.target_modules as a list of its linear layers' names"
        )
    t = LORA_TARGETS[model_type]
    return t.attention if scope == "attention" else t.attention + t.mlp
