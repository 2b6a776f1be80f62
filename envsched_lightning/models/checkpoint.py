"""Write a tiny Qwen3 as a Hugging Face checkpoint folder: what `make rehearsal` serves to vLLM.

The folder has everything a real Qwen3 folder has and the 8B path reads: `config.json` (Qwen3
architecture, head_dim 128 as in Qwen3-8B, since vLLM's CPU attention rejects small heads),
safetensors weights, a tokenizer with Qwen3's special tokens (``<think>``, ``<tool_call>``, ...)
and Qwen3's own chat template, and a `generation_config.json` whose end tokens are Qwen3's
(``<|im_end|>`` and ``<|endoftext|>``). A short supervised warm start on scripted episodes,
rendered by that template, teaches the random model to write tool calls and stop, so a rehearsal
exercises tool turns, rewards and end tokens instead of 1,024 tokens of noise per turn.

    python -m envsched_lightning.models.checkpoint OUT_DIR [--experiment tiny_cpu] [--sft-steps 150]

The experiment picks the environments whose text the tokenizer learns: `tiny_cpu` (the default) needs
only the built-in worlds; `envsched_qwen3_8b` (what `make rehearsal` writes) needs the benchmark data.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from .chat_template import reference_chat_template
from .pretrained import load_pretrained_qwen3
from .qwen3 import Policy, build_tiny_qwen3
from .tokenizer import build_offline_tokenizer

if TYPE_CHECKING:
    from envsched_lightning.envs.base import Environment

REHEARSAL_QWEN3 = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=128,  # Qwen3-8B's; vLLM's CPU attention supports it (not 16)
    max_position_embeddings=32768,
    tie_word_embeddings=False,
)
THINK_TOKENS = ("<think>", "</think>")  # single tokens in Qwen3's vocabulary; appended after the BPE vocab
# how the rehearsal checkpoint is trained and prompted next to vLLM: LoRA on every projection (vLLM
# serves base weights plus an adapter), chat template without thinking (as conf/model/qwen3_8b.yaml)
REHEARSAL_LORA = dict(r=8, alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                     "down_proj"])  # fmt: skip
REHEARSAL_TEMPLATE_KW = {"enable_thinking": False}
# the vLLM engine next to that training model: fp32 as the training model, room for its adapter, eager
REHEARSAL_VLLM = dict(dtype="float32", max_lora_rank=REHEARSAL_LORA["r"], enforce_eager=True)


def rehearsal_policy(envs: Sequence[Environment], vocab_size: int = 2048, seed: int = 0) -> Policy:
    """Offline tokenizer with Qwen3's template and special tokens, and a tiny Qwen3 sized to it."""
    tok = build_offline_tokenizer(envs, vocab_size=vocab_size)
    tok.add_tokens(list(THINK_TOKENS), special_tokens=True)
    tok.chat_template = reference_chat_template("qwen3")
    model = build_tiny_qwen3(len(tok), seed=seed, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                             bos_token_id=None, **REHEARSAL_QWEN3)  # fmt: skip
    model.generation_config.eos_token_id = [tok.eos_token_id, tok.convert_tokens_to_ids("<|endoftext|>")]
    model.generation_config.pad_token_id = tok.pad_token_id
    return Policy(model, tok)


def warm_up(policy: Policy, envs: Sequence[Environment], steps: int, chat_template_kwargs: dict[str, Any]) -> list[float]:
    """Supervised steps on the scripted episodes of `envs` (those that have a script), as the module's warm start."""
    from envsched_lightning.module import GRPOModule

    from envsched_lightning.rollout import ChatRenderer

    module = GRPOModule(policy, grpo=dict(max_seq_len=1024), warm_start=dict(steps=steps, lr=3e-3, batch_size=16),
                        chat_template_kwargs=chat_template_kwargs)  # fmt: skip
    # tasks whose prompt alone passes 512 tokens (BFCL multi-turn: about 2,000) are left out: they
    # would make every padded batch ten times slower, and the format they teach is in the short ones
    renderer = ChatRenderer(policy.tokenizer, chat_template_kwargs)
    items = [(task, env) for env in envs for task in env.tasks()[:64] if len(renderer.prompt(task, env)) <= 512]
    return module.warm_start(items)


def load_rehearsal_policy(folder: str | Path, lora: Mapping[str, Any] | None = REHEARSAL_LORA) -> Policy:
    """A written rehearsal checkpoint as the training model vLLM is compared with: fp32, `REHEARSAL_LORA` (or
    `lora=None`: every weight trained, as a full-parameter run)."""
    return load_pretrained_qwen3(str(folder), dtype="float32", lora=None if lora is None else dict(lora),
                                 gradient_checkpointing=False)  # fmt: skip


def write_checkpoint(out_dir: str | Path, envs: Sequence[Environment], sft_steps: int = 150, seed: int = 0,
                     chat_template_kwargs: dict[str, Any] | None = None) -> Path:  # fmt: skip
    """Build, warm up and save the tiny Qwen3; returns the folder."""
    out = Path(out_dir)
    torch.manual_seed(seed)
    policy = rehearsal_policy(envs, seed=seed)
    losses = warm_up(policy, envs, sft_steps, dict(chat_template_kwargs or {})) if sft_steps else []
    out.mkdir(parents=True, exist_ok=True)
    policy.model.save_pretrained(out)
    policy.tokenizer.save_pretrained(out)
    (out / "rehearsal.json").write_text(json.dumps({"sft_loss_first": losses[:1], "sft_loss_last": losses[-1:],
                                                    "envs": [e.name for e in envs]}, indent=1))  # fmt: skip
    return out


def experiment_envs(experiment: str, overrides: Sequence[str] = ()) -> tuple[list[Environment], dict[str, Any]]:
    """The environments (and chat-template options) an experiment trains on, built from its config."""
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    conf = Path(__file__).resolve().parents[2] / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose("train", overrides=[f"experiment={experiment}", *overrides])
    envs = [instantiate(node) for node in cfg.env.values() if "_target_" in node]  # not options of unselected ones
    template = cfg.model.get("chat_template_kwargs")
    kwargs = {} if template is None else OmegaConf.to_container(template, resolve=True)
    return envs, kwargs


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--experiment", default="tiny_cpu")
    parser.add_argument("--sft-steps", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    envs, kwargs = experiment_envs(args.experiment)
    out = write_checkpoint(args.out_dir, envs, args.sft_steps, args.seed, kwargs)
    print(f"tiny Qwen3 checkpoint: {out} ({len(envs)} environments in its tokenizer corpus)")


if __name__ == "__main__":
    main()
