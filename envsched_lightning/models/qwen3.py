"""Qwen3 policies: a tiny random one for CPU and tests, and real weights from a local path.

Both return a `Policy` (model + tokenizer) built on the same `Qwen3ForCausalLM` class, so the
tiny model exercises exactly the code path Qwen3-8B runs. Nothing here downloads: real weights
load with ``local_files_only=True`` and a missing checkpoint fails before any work starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from transformers import AutoTokenizer, PreTrainedTokenizerBase, Qwen3Config, Qwen3ForCausalLM

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
    """peft LoRA hyper-parameters; `target_modules` names Qwen3's linear layers."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: Sequence[str] = field(default=("q_proj", "k_proj", "v_proj", "o_proj"))

    @classmethod
    def coerce(cls, value: LoraSettings | Mapping[str, Any] | None) -> LoraSettings | None:
        if value is None or isinstance(value, LoraSettings):
            return value
        return cls(**{k: (tuple(v) if k == "target_modules" else v) for k, v in dict(value).items()})


def apply_lora(model: torch.nn.Module, lora: LoraSettings | Mapping[str, Any]) -> torch.nn.Module:
    """Wrap `model` in a peft LoRA adapter; B starts at zero, so the wrapped model equals the base."""
    from peft import LoraConfig, get_peft_model

    s = LoraSettings.coerce(lora)
    config = LoraConfig(
        r=s.r,
        lora_alpha=s.alpha,
        lora_dropout=s.dropout,
        target_modules=list(s.target_modules),
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


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
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    if lora is not None:
        if gradient_checkpointing:
            model.enable_input_require_grads()  # checkpointed blocks need a grad-requiring input
        model = apply_lora(model, lora)
    return model


def _missing_weights(path: str, why: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"Qwen3 weights are not available locally at {path!r} ({why}). This project never downloads "
        f"weights during training: fetch them first, e.g. `huggingface-cli download Qwen/Qwen3-8B "
        f"--local-dir {path}`, then pass `model_path=<that directory>` (or set QWEN3_8B_PATH)."
    )


def load_pretrained_qwen3(
    path: str,
    dtype: str | torch.dtype = "bfloat16",
    lora: LoraSettings | Mapping[str, Any] | None = None,
    gradient_checkpointing: bool = True,
    attn_implementation: str | None = None,
) -> Policy:
    """Load real Qwen3 weights and tokenizer from a local directory (or the local HF cache), with LoRA.

    Raises `FileNotFoundError` with instructions when the weights are not on this machine.
    """
    local = Path(path).expanduser()
    if local.is_dir():
        has_weights = any(local.glob("*.safetensors")) or any(local.glob("*.bin"))
        if not (local / "config.json").is_file() or not has_weights:
            raise _missing_weights(path, "directory has no config.json or no *.safetensors / *.bin files")
    elif local.exists() or path.startswith((".", "/", "~")):
        raise _missing_weights(path, "not a directory")
    torch_dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    try:
        model = Qwen3ForCausalLM.from_pretrained(
            str(local) if local.is_dir() else path,
            dtype=torch_dtype,
            local_files_only=True,
            attn_implementation=attn_implementation,
        )
        tokenizer = AutoTokenizer.from_pretrained(str(local) if local.is_dir() else path, local_files_only=True)
    except OSError as err:  # a hub id that is not in the local cache
        raise _missing_weights(path, f"not in the local Hugging Face cache: {err}") from err
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = "<|endoftext|>"
    return Policy(_finish(model, lora, gradient_checkpointing), tokenizer)
