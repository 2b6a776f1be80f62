"""Rollouts with an in-process `vllm.LLM` serving the frozen base plus the current LoRA adapter.

vLLM keeps its own copy of the base weights; the trainer only changes the LoRA adapter, so
`sync_weights` saves the adapter to a fresh directory and the next `generate` passes a new
`LoRARequest(name, id, path)`: a new id is what makes vLLM load the adapter instead of reusing its
cached one. vLLM is imported lazily (it does not install on CPU machines); `api` lets tests pass a
stand-in namespace with `LLM`, `SamplingParams` and `LoRARequest`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from .engine import Completion, SamplingConfig
from .hf import make_completion, stop_token_ids


def import_vllm() -> SimpleNamespace:
    """The three vLLM names this engine uses, imported only when an engine is first used."""
    try:
        from vllm import LLM, SamplingParams
        from vllm.lora.request import LoRARequest
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "rollout=vllm needs the GPU extra: pip install 'envsched-lightning[vllm]' (vllm==0.32.0, "
            "built for torch 2.13.0). On CPU use rollout=hf."
        ) from err
    return SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams, LoRARequest=LoRARequest)


class VLLMEngine:
    """`RolloutEngine` over `vllm.LLM(enable_lora=True)`; adapters are re-synced every `sync_every` calls.

    Built like every engine, ``engine(training_model, tokenizer)``; `model_path` is the local base
    checkpoint vLLM loads (the same weights the training model was loaded from).
    """

    def __init__(
        self,
        model: torch.nn.Module | None,
        tokenizer: PreTrainedTokenizerBase,
        model_path: str,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.5,
        max_lora_rank: int = 16,
        max_model_len: int | None = None,
        dtype: str = "bfloat16",
        enable_prefix_caching: bool = True,
        seed: int = 0,
        sync_every: int = 1,
        adapter_dir: str | None = None,
        api: Any = None,
        **llm_kwargs: Any,
    ) -> None:
        if sync_every < 1:
            raise ValueError(f"sync_every must be >= 1, got {sync_every}")
        self.tokenizer = tokenizer
        self.sync_every = sync_every
        self.adapter_dir = Path(adapter_dir) if adapter_dir else None  # a temporary one at the first sync
        self.llm_args = dict(
            model=model_path,
            tokenizer=model_path,
            enable_lora=True,
            max_lora_rank=max_lora_rank,
            max_loras=1,
            tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            dtype=dtype,
            enable_prefix_caching=enable_prefix_caching,
            seed=seed,
            **llm_kwargs,
        )
        self._api = api
        self._llm: Any = None
        self.lora_id = 0  # 0 = no adapter synced yet: generate with the base model
        self.lora_request: Any = None
        self._calls = 0

    @property
    def api(self) -> Any:
        if self._api is None:
            self._api = import_vllm()
        return self._api

    @property
    def llm(self) -> Any:
        if self._llm is None:
            self._llm = self.api.LLM(**self.llm_args)
        return self._llm

    def sync_weights(self, module: torch.nn.Module) -> None:
        """Save the LoRA adapter of `module` to a new directory and point later requests at it."""
        self._calls += 1
        if self._calls % self.sync_every:
            return
        if not hasattr(module, "peft_config"):
            raise TypeError("VLLMEngine syncs LoRA adapters only: build the model with `lora:` set")
        if self.adapter_dir is None:
            self.adapter_dir = Path(tempfile.mkdtemp(prefix="envsched-lora-"))
        self.lora_id += 1
        path = self.adapter_dir / f"adapter-{self.lora_id:06d}"
        module.save_pretrained(str(path))
        self.lora_request = self.api.LoRARequest(f"policy-{self.lora_id}", self.lora_id, str(path))

    def _sampling_params(self, sampling: SamplingConfig) -> Any:
        greedy = sampling.temperature <= 0.0
        return self.api.SamplingParams(
            n=1,
            max_tokens=sampling.max_new_tokens,
            temperature=0.0 if greedy else sampling.temperature,
            top_p=1.0 if greedy else sampling.top_p,
            top_k=-1 if greedy or sampling.top_k <= 0 else sampling.top_k,
            seed=sampling.seed,
            stop_token_ids=sorted(stop_token_ids(self.tokenizer)),
            logprobs=0,  # the sampled token's log-probability only
            skip_special_tokens=False,
        )

    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingConfig) -> list[Completion]:
        requests = [{"prompt_token_ids": list(p)} for p in prompts]
        outputs = self.llm.generate(
            requests, self._sampling_params(sampling), use_tqdm=False, lora_request=self.lora_request
        )
        stops = stop_token_ids(self.tokenizer)
        completions = []
        for out in outputs:
            sample = out.outputs[0]
            ids = list(sample.token_ids)
            lps = None
            if getattr(sample, "logprobs", None):
                lps = [step[tok].logprob for step, tok in zip(sample.logprobs, ids)]
            completions.append(make_completion(self.tokenizer, ids, stops, lps))
        return completions
