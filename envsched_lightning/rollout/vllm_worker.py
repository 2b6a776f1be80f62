"""Methods added to vLLM's worker (`LLM(worker_extension_cls=...)`) so weights reach it as tensors, never files.

`VLLMEngine` calls them with `llm.collective_rpc(name, args=...)`. In-process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`,
the CPU set-up) the tensors are handed over by reference; with a separate engine process vLLM serialises them
over its own IPC. Nothing here imports vLLM at module import: the worker imports this module by its qualified
name, inside vLLM.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import torch

EXTENSION = "envsched_lightning.rollout.vllm_worker.WeightSyncExtension"


class WeightSyncExtension:
    """Mixed into vLLM's worker class: `self` is the worker, `self.model_runner` its model runner."""

    def envsched_install_adapter(self, adapter_id: int, tensors: Mapping[str, torch.Tensor], config: Mapping[str, Any]) -> list[int]:
        """Build a LoRA adapter from `tensors` (PEFT's names) and `config` (PEFT's adapter config) as vLLM's own
        loader would from a folder, drop every adapter held before, and keep this one under `adapter_id`.

        The next request naming `adapter_id` finds it loaded, so vLLM never looks at the request's path.
        Returns the ids held afterwards (one)."""
        from vllm.lora.lora_model import LoRAModel
        from vllm.lora.peft_helper import PEFTHelper

        manager = self.model_runner.lora_manager  # type: ignore[attr-defined]
        helper = PEFTHelper.from_dict({**config, "vllm_max_position_embeddings": manager.max_position_embeddings})
        helper.validate_legal(manager.lora_config)
        adapters = manager._adapter_manager
        model = adapters.model
        mapper = getattr(model, "hf_to_vllm_mapper", None)
        lora = LoRAModel.from_lora_tensors(
            lora_model_id=adapter_id, tensors=dict(tensors), peft_helper=helper, device="cpu",
            dtype=manager.lora_config.lora_dtype, model_vocab_size=manager.vocab_size,
            weights_mapper=None if mapper is None else mapper.get_rename_mapper(),
            skip_prefixes=getattr(model, "lora_skip_prefixes", None),
        )  # fmt: skip
        unknown = sorted({name.rsplit(".", 1)[-1] for name in lora.loras} - _expected_modules(adapters))
        if unknown:
            raise ValueError(f"adapter {adapter_id}: vLLM cannot apply LoRA to {unknown} in this model")
        for held in list(manager.list_adapters()):
            manager.remove_adapter(held)
        adapters.add_adapter(lora)
        return sorted(manager.list_adapters())

    def envsched_load_weights(self, weights: Sequence[tuple[str, torch.Tensor]]) -> int:
        """Load full parameters (Hugging Face names) into the served model in place through vLLM's own reload path
        (`Worker.reload_weights`: the checkpoint-format loaders, then the same post-load processing as at start,
        e.g. the CPU build's weight packing). Each call must hold whole layers (the engine sends whole decoder
        blocks); layers it does not name keep their weights, which vLLM reports per layer: silenced here, as
        a chunked sync names only some layers by design. Returns how many tensors were given."""
        quiet = [logging.getLogger(f"vllm.model_executor.model_loader.reload.{m}") for m in ("layerwise", "inplace")]
        levels = [logger.level for logger in quiet]
        for logger in quiet:
            logger.setLevel(logging.ERROR)
        try:
            self.reload_weights(weights_iterator=list(weights), is_checkpoint_format=True)  # type: ignore[attr-defined]
        finally:
            for logger, level in zip(quiet, levels):
                logger.setLevel(level)
        return len(weights)

    def envsched_adapters(self) -> list[int]:
        """The adapter ids the worker holds (empty without LoRA): what tests watch for growth."""
        manager = getattr(self.model_runner, "lora_manager", None)  # type: ignore[attr-defined]
        return [] if manager is None else sorted(manager.list_adapters())


def _expected_modules(adapters: Any) -> set[str]:
    """The module names vLLM can hold LoRA weights for in this model, packed modules expanded (q/k/v, gate/up)."""
    names: set[str] = set()
    for module in adapters.supported_lora_modules:
        names.update(adapters.packed_modules_mapping.get(module, [module]))
    return names
