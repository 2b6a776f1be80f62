"""Shared set-up of the real-vLLM tests: environment variables (before vLLM is imported), loaders, checks.

vLLM is imported unconditionally: without it the tests fail to collect instead of skipping. The engine runs in-process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`) with a 1 GiB
CPU KV cache, and serves tiny Qwen3 checkpoints written as Hugging Face folders (head_dim 128, Qwen3's
own chat template, fp32), one engine per checkpoint for the whole session.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
os.environ.setdefault("TMPDIR", str(REPO / ".tmp"))
Path(os.environ["TMPDIR"]).mkdir(parents=True, exist_ok=True)
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

import torch  # noqa: E402

from envsched_lightning.grpo.logprobs import masked_token_logprobs  # noqa: E402
from envsched_lightning.models.checkpoint import REHEARSAL_TEMPLATE_KW, REHEARSAL_VLLM, load_rehearsal_policy  # noqa: E402
from envsched_lightning.rollout import SamplingConfig, run_agent_loop  # noqa: E402
from envsched_lightning.rollout.types import pack_sequences  # noqa: E402
from envsched_lightning.rollout.vllm_engine import VLLMEngine, import_vllm  # noqa: E402

import_vllm()  # collection fails here, loudly, when vLLM is missing

TOL = 1e-4
"""Largest |vLLM log-prob - training-model log-prob| accepted per sampled token (both fp32)."""


def load_policy(path: Path, adapter_scale: float = 0.0, seed: int = 0, full: bool = False):
    """The checkpoint as the training model (fp32, LoRA; `full`: no LoRA, every weight trainable). `adapter_scale`
    > 0 moves it off the base: a drawn adapter (LoRA's B), or drawn noise on every projection (`full`)."""
    from envsched_lightning.models.checkpoint import REHEARSAL_LORA

    policy = load_rehearsal_policy(path, lora=None if full else REHEARSAL_LORA)
    if adapter_scale:
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in policy.model.named_parameters():
                if (name.endswith("proj.weight") if full else "lora_B" in name):
                    p.add_(torch.randn(p.shape, generator=gen) * adapter_scale)
    return policy


def make_engine(path: Path, policy, **kwargs) -> VLLMEngine:
    return VLLMEngine(policy.model, policy.tokenizer, model_path=str(path), max_model_len=4096, seed=0,
                      **REHEARSAL_VLLM, **kwargs)  # fmt: skip


def close(engine: VLLMEngine) -> None:
    """Free an in-process engine so the next checkpoint's engine can start."""
    engine.shutdown()


def logprob_gap(model: torch.nn.Module, seqs, temperature: float) -> torch.Tensor:
    """|training-model log-prob - vLLM's sampling log-prob| [M] over every generated token of `seqs`."""
    assert seqs.sample_logprobs is not None, "the engine reported no sampling log-probs"
    with torch.no_grad():
        ours = masked_token_logprobs(model, seqs.tokens, seqs.attention_mask, seqs.loss_mask, temperature)
    picked = seqs.loss_mask.bool()
    return (ours - seqs.sample_logprobs)[picked].abs()


ROLLOUT_GROUP = 4
"""Rollouts per task in `rollouts`."""


def items(worlds, per_world: int = 3):
    return [(task, env) for env in worlds for task in env.tasks()[:per_world]]


def rollouts(engine, policy, worlds, temperature: float, seed: int = 0):
    """Whole multi-turn episodes of the first tasks of `worlds`, sampled by `engine`, and their packed sequences."""
    sampling = SamplingConfig(max_new_tokens=96, temperature=temperature, seed=seed)
    batch = run_agent_loop(engine, policy.tokenizer, items(worlds), ROLLOUT_GROUP, sampling, max_seq_len=4096,
                           chat_template_kwargs=REHEARSAL_TEMPLATE_KW)  # fmt: skip
    return batch, pack_sequences(batch.episodes, policy.tokenizer.pad_token_id)
