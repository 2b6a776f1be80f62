"""Load any local decoder-only causal LM as the policy, and refuse one whose weights do not fit it.

`AutoModelForCausalLM` picks the class from the folder's ``config.json`` (Qwen3, Qwen2.5, Llama and
SmolLM2, Gemma 3, Mistral, ...), so one code path serves every family. transformers itself only
warns when a checkpoint lacks weights its class defines (it initialises them at random) or carries
weights the class does not use; a policy built that way trains a broken model, so here either is an
error that names the weights. Nothing downloads: a path that is not a complete local folder (or a
hub id missing from the local cache) fails before any work, with instructions.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from ..console import RunConfigError
from .attention import register_gqa_sdpa
from .qwen3 import LoraSettings, Policy, _finish

_SHOWN = 8  # weight names quoted in a load error


class CheckpointMismatch(ValueError):
    """A checkpoint's weights do not match the architecture its config (or the caller) asks for."""


class IncompleteWeights(RunConfigError):
    """A weights file that does not open (cut short by a copy or download): safetensors' own error names no file."""


def incomplete_weights(source: str, err: Exception) -> IncompleteWeights:
    """Name the `*.safetensors` files of `source` that do not open, and how to get them whole again."""
    from .smollm2 import MANIFEST

    folder = Path(source)
    broken = []
    for file in sorted(folder.glob("*.safetensors")) if folder.is_dir() else []:
        try:
            with safe_open(str(file), framework="pt"):
                pass
        except SafetensorError as file_err:
            broken.append(f"{file} ({file_err})")
    what = ", ".join(broken) if broken else f"a weights file of {source} ({err})"
    if (folder / MANIFEST).is_file():  # written by `make smollm2`, which keeps a folder only while it verifies
        fix = (f"this folder was written by `make smollm2`: remove it and run `make smollm2` again (or rewrite it in "
               f"place: `python -m envsched_lightning.models.smollm2 {folder} --force`)")  # fmt: skip
    elif not folder.is_dir():  # a hub id read from the local cache
        fix = f"download it into the Hugging Face cache again (`huggingface-cli download {source}`)"
    else:
        fix = f"copy or download the weights into {folder} again (e.g. `huggingface-cli download <repo> --local-dir {folder}`)"
    return IncompleteWeights(f"model weights {what}: the file is incomplete or damaged, so the model cannot load; {fix}")


def _missing_weights(path: str, why: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"model weights are not available locally at {path!r} ({why}). This project never downloads weights "
        f"during training: fetch them first (e.g. `huggingface-cli download <repo> --local-dir {path}`), then pass "
        f"the folder as model_path= (or model.policy.path=)."
    )


def local_source(path: str) -> str:
    """`path` as a local folder that holds a config and weights, or a hub id to look up in the local
    cache only; anything else raises `FileNotFoundError` saying what is missing."""
    local = Path(path).expanduser()
    if local.is_dir():
        has_weights = any(local.glob("*.safetensors")) or any(local.glob("*.bin"))
        if not (local / "config.json").is_file() or not has_weights:
            raise _missing_weights(path, "directory has no config.json or no *.safetensors / *.bin files")
        return str(local)
    if local.exists() or path.startswith((".", "/", "~")):
        raise _missing_weights(path, "not a directory")
    return path


def _names(keys: Any) -> list[str]:
    return sorted(str(k) for k in keys or ())


def check_loading_info(path: str, info: Mapping[str, Any]) -> None:
    """Raise `CheckpointMismatch` naming the missing, unexpected and mis-shaped weights of a load."""
    problems = []
    for label, key in (("missing (would be initialised at random)", "missing_keys"),
                       ("unexpected (would be ignored)", "unexpected_keys"),
                       ("of the wrong shape", "mismatched_keys")):  # fmt: skip
        names = _names(k[0] if isinstance(k, tuple) else k for k in info.get(key) or ())
        if names:
            more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
            problems.append(f"{len(names)} weights {label}: {', '.join(names[:_SHOWN])}{more}")
    if problems:
        raise CheckpointMismatch(f"checkpoint {path!r} does not match its architecture; " + "; ".join(problems)
                                 + ". Refusing to train a partly random model: check the folder and model_type.")  # fmt: skip


def load_pretrained_policy(
    path: str,
    dtype: str | torch.dtype = "bfloat16",
    lora: LoraSettings | Mapping[str, Any] | None = None,
    gradient_checkpointing: bool = True,
    attn_implementation: str | None = None,
    model_type: str | None = None,
) -> Policy:
    """Weights and tokenizer of any causal LM from a local folder (or the local HF cache), with LoRA.

    `model_type` (e.g. ``"qwen3"``) refuses a folder of another family before its weights load.
    `lora.target_modules` may be ``attention`` or ``all`` (resolved per family, `families.py`) and
    `lora.top_layers` adapts only the last k blocks (no backward pass through the frozen rest).
    `attn_implementation="sdpa_gqa"` skips sdpa's copy of grouped key/value heads on CPU (`attention.py`)."""
    if not path:
        raise ValueError("model.policy.path is not set: pass model_path=/path/to/a/local/model/folder")
    source = local_source(path)
    try:
        config = AutoConfig.from_pretrained(source, local_files_only=True)
    except OSError as err:  # a hub id that is not in the local cache
        raise _missing_weights(path, f"not in the local Hugging Face cache: {err}") from err
    if model_type is not None and config.model_type != model_type:
        raise CheckpointMismatch(
            f"checkpoint {path!r} is a {config.model_type!r} model, not {model_type!r}: its weights would load into "
            f"the wrong architecture. Use model=pretrained (any causal LM) with model.policy.path={path}"
        )
    torch_dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    register_gqa_sdpa()
    try:
        model, info = AutoModelForCausalLM.from_pretrained(
            source, dtype=torch_dtype, local_files_only=True, attn_implementation=attn_implementation,
            output_loading_info=True,
        )  # fmt: skip
    except SafetensorError as err:  # e.g. "incomplete metadata": a file cut short, named here
        raise incomplete_weights(source, err) from None
    except RuntimeError as err:  # transformers refuses weights of the wrong shape itself, after printing them
        if "mismatched" not in str(err) and "size mismatch" not in str(err):
            raise
        raise CheckpointMismatch(f"checkpoint {path!r} has weights of the wrong shape for its architecture "
                                 f"(see the load report above): {err}") from err  # fmt: skip
    check_loading_info(path, info)
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    _ready_tokenizer(tokenizer, model)
    return Policy(_finish(model, lora, gradient_checkpointing), tokenizer)


def load_pretrained_qwen3(
    path: str,
    dtype: str | torch.dtype = "bfloat16",
    lora: LoraSettings | Mapping[str, Any] | None = None,
    gradient_checkpointing: bool = True,
    attn_implementation: str | None = None,
) -> Policy:
    """Real Qwen3 weights and tokenizer from a local directory (or the local HF cache), with LoRA.

    `load_pretrained_policy` with ``model_type="qwen3"``: a folder of another family, or one whose
    weights do not match Qwen3's, is refused; `FileNotFoundError` with instructions when the weights
    are not on this machine."""
    return load_pretrained_policy(path, dtype, lora, gradient_checkpointing, attn_implementation, model_type="qwen3")


def _ready_tokenizer(tokenizer: Any, model: PreTrainedModel) -> None:
    """Left padding for batched generation, and a pad token that is an existing token (never a new row)."""
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        for candidate in ("<|endoftext|>", "<|finetune_right_pad_id|>", "<pad>"):
            if candidate in tokenizer.get_vocab():
                tokenizer.pad_token = candidate
                break
        else:
            tokenizer.pad_token = tokenizer.eos_token
    if getattr(model.generation_config, "pad_token_id", None) is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
