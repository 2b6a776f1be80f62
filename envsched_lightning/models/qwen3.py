"""Qwen3 policies: a tiny random one for CPU and tests, and real weights from a local path.

Both return a `Policy` (model + tokenizer) built on the same `Qwen3ForCausalLM` class, so the
tiny model exercises exactly the code path Qwen3-8B runs. Real weights of any family load through
`pretrained.load_pretrained_policy`; nothing here downloads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from transformers import PreTrainedTokenizerBase, Qwen3Config, Qwen3ForCausalLM

from .tokenizer import build_offline_tokenizer

if TYPE_CHECKING:
    from envsched_lightning.envs.base import Environment

TINY_QWEN3 = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=2048,
    tie_word_embeddings=False,
)
"""Defaults for `build_tiny_qwen3`: about 100k parameters besides the embeddings.

Input and output embeddings are untied, as in Qwen3-8B. Tied, GRPO's push-down of sampled
low-probability tokens also moves those tokens' input embeddings (digits, say, which the model
must read to copy ids); on the tiny model that collapsed the reward within a few dozen steps.
"""


class Policy(NamedTuple):
    """What the trainer needs from a model config: the causal LM (maybe LoRA-wrapped) and its tokenizer."""

    model: torch.nn.Module
    tokenizer: PreTrainedTokenizerBase


@dataclass(frozen=True)
class LoraSettings:
    """peft LoRA hyper-parameters.

    `target_modules` is a list of linear-layer names, or ``attention`` / ``all`` resolved per model
    family (`families.lora_targets`). `top_layers` adapts only the last k decoder blocks: nothing
    below them needs a gradient, so backward stops there (a large saving on CPU)."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: Sequence[str] | str = field(default=("q_proj", "k_proj", "v_proj", "o_proj"))
    top_layers: int | None = None

    @classmethod
    def coerce(cls, value: LoraSettings | Mapping[str, Any] | None) -> LoraSettings | None:
        if value is None or isinstance(value, LoraSettings):
            return value
        fix = lambda k, v: tuple(v) if k == "target_modules" and not isinstance(v, str) else v  # noqa: E731
        return cls(**{k: fix(k, v) for k, v in dict(value).items()})


def apply_lora(model: torch.nn.Module, lora: LoraSettings | Mapping[str, Any]) -> torch.nn.Module:
    """Wrap `model` in a peft LoRA adapter; B starts at zero, so the wrapped model equals the base."""
    from peft import LoraConfig, get_peft_model

    from .families import lora_targets

    s = LoraSettings.coerce(lora)
    config = getattr(model, "config", None)
    targets = s.target_modules
    if isinstance(targets, str):
        targets = lora_targets(getattr(config, "model_type", "?"), targets)
    layers = None
    if s.top_layers is not None:
        n = int(getattr(config, "num_hidden_layers", 0))
        if not 1 <= s.top_layers <= n:
            raise ValueError(f"lora.top_layers={s.top_layers}: the model has {n} decoder layers")
        layers = list(range(n - s.top_layers, n))
    peft_config = LoraConfig(
        r=s.r,
        lora_alpha=s.alpha,
        lora_dropout=s.dropout,
        target_modules=list(targets),
        layers_to_transform=layers,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, peft_config)


def build_tiny_qwen3(vocab_size: int, seed: int = 0, **config: Any) -> Qwen3ForCausalLM:
    """A randomly initialised `Qwen3ForCausalLM` from a `Qwen3Config`; `config` overrides `TINY_QWEN3`."""
    cfg = Qwen3Config(vocab_size=vocab_size, **{**TINY_QWEN3, **config})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(cfg)
    return model


def tiny_qwen3_policy(
    envs: Iterable[Environment | str] = (),
    vocab_size: int = 2048,
    lora: LoraSettings | Mapping[str, Any] | None = None,
    seed: int = 0,
    gradient_checkpointing: bool = False,
    **config: Any,
) -> Policy:
    """Offline tokenizer trained on `envs`, then a tiny Qwen3 sized to it (optionally LoRA-wrapped)."""
    tokenizer = build_offline_tokenizer(envs, vocab_size=vocab_size)
    model = build_tiny_qwen3(
        vocab_size=len(tokenizer),
        seed=seed,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        **config,
    )
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return Policy(_finish(model, lora, gradient_checkpointing), tokenizer)


def _finish(model: torch.nn.Module, lora: Any, gradient_checkpointing: bool) -> torch.nn.Module:
    """LoRA, then non-reentrant checkpointing on the base. transformers (and peft, when checkpointing is
    on first) make the input embeddings require grad, which only reentrant checkpointing needs: with it,
    backward runs through every frozen block instead of stopping at the lowest adapted one
    (`LoraSettings.top_layers`), so it is switched off again."""
    if lora is not None:
        model = apply_lora(model, lora)
    if gradient_checkpointing:
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        base.config.use_cache = False
        if lora is not None:
            base.disable_input_require_grads()
    return model
