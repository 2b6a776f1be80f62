"""GPU memory and work per step of an experiment, on paper, before renting the GPU.

    python -m envsched_lightning.models.budget [experiment=envsched_qwen3_8b] [gpu_gb=141] [other overrides]

Reads the experiment's config (model, LoRA, GRPO batch shape, sampling, vLLM settings) and the model's
architecture (``config.json`` under ``model_path`` when it is on this machine, else Qwen3-8B's published
one), and prints one table: the trainer's share (bf16 weights, LoRA with its fp32 gradients and AdamW
state, the checkpointed activations of one micro-batch at ``max_seq_len``, one recomputed layer, the
log-prob chunk), vLLM's share (``gpu_memory_utilization`` of the GPU: weights, LoRA slots, KV cache), the
margin, and rollouts and tokens per step. Estimates are upper bounds for full-length sequences: they
are what must fit, not what a typical step uses.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GB = 1e9

QWEN3_8B = dict(
    vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
    num_attention_heads=32, num_key_value_heads=8, head_dim=128, tie_word_embeddings=False,
)  # fmt: skip
"""Qwen3-8B's `config.json` (the architecture fields this estimate needs)."""

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


@dataclass(frozen=True)
class Architecture:
    """The Qwen3 shape fields that decide memory."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    tie_word_embeddings: bool = False

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Architecture:
        fields = {k: config[k] for k in cls.__dataclass_fields__ if k in config}
        fields.setdefault("head_dim", config["hidden_size"] // config["num_attention_heads"])
        return cls(**fields)

    def projections(self) -> dict[str, tuple[int, int]]:
        """(in, out) features of each linear layer of one decoder layer, by its module name."""
        h, q, kv, i = self.hidden_size, self.num_attention_heads * self.head_dim, self.num_key_value_heads * self.head_dim, self.intermediate_size  # fmt: skip
        return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
                "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h)}  # fmt: skip

    def parameters(self) -> int:
        """All parameters: embeddings, LM head (unless tied), decoder layers with their norms."""
        per_layer = sum(a * b for a, b in self.projections().values()) + 2 * self.hidden_size + 2 * self.head_dim
        head = 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size
        return self.vocab_size * self.hidden_size + head + self.num_hidden_layers * per_layer + self.hidden_size

    def lora_parameters(self, r: int, target_modules: Sequence[str]) -> int:
        """A (r x in) plus B (out x r) for every targeted projection of every layer."""
        per_layer = sum(r * (a + b) for name, (a, b) in self.projections().items() if name in target_modules)
        return self.num_hidden_layers * per_layer

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        return 2 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim * dtype_bytes


@dataclass(frozen=True)
class Budget:
    """Bytes by line item (trainer and vLLM), and the work of one step."""

    trainer: dict[str, float]
    vllm: dict[str, float]
    gpu_bytes: float
    sleep_mode: bool
    step: dict[str, float]

    @property
    def trainer_total(self) -> float:
        return sum(self.trainer.values())

    @property
    def vllm_total(self) -> float:
        return sum(self.vllm.values())

    @property
    def peak(self) -> float:
        """Both resident (no sleep mode) or the larger of the two phases (sleep level 1 keeps vLLM's LoRA slots only)."""
        if self.sleep_mode:
            return max(self.trainer_total + self.vllm["LoRA slots"], self.vllm_total + self.trainer["weights (bf16)"]
                       + self.trainer["LoRA + grads + AdamW (fp32)"])  # fmt: skip
        return self.trainer_total + self.vllm_total


def estimate(arch: Architecture, cfg: Mapping[str, Any], gpu_gb: float) -> Budget:
    """Memory line items from the architecture and an experiment's resolved config (`cfg` as a dict)."""
    model, grpo, rollout, sampling, data = (cfg.get(k) or {} for k in ("model", "grpo", "rollout", "sampling", "data"))
    grpo = {**(model.get("grpo") or {}), **grpo}
    sampling = {**(model.get("sampling") or {}), **sampling}
    policy = model.get("policy") or {}
    lora = policy.get("lora") or {}
    wbytes = DTYPE_BYTES[str(policy.get("dtype", "bfloat16"))]
    micro, seq = int(grpo.get("micro_batch_size", 4)), int(grpo.get("max_seq_len", 8192))
    chunk = int(grpo.get("logprob_chunk_size", 1024))
    h, i, v = arch.hidden_size, arch.intermediate_size, arch.vocab_size
    tokens = micro * seq
    lora_params = arch.lora_parameters(int(lora.get("r", 16)), lora.get("target_modules", ())) if lora else 0
    checkpointed = policy.get("gradient_checkpointing", True)
    layer_acts = tokens * wbytes * (4 * h + 2 * arch.num_attention_heads * arch.head_dim + 4 * i)  # one layer, live
    trainer = {
        "weights (bf16)": arch.parameters() * wbytes,
        "LoRA + grads + AdamW (fp32)": lora_params * 4 * 4,  # peft keeps adapters fp32: weight, grad, 2 moments
        "activations (checkpoints)": (arch.num_hidden_layers + 1) * tokens * h * wbytes if checkpointed
        else arch.num_hidden_layers * layer_acts,
        "activations (one layer recomputed)": layer_acts if checkpointed else 0.0,
        "log-prob chunk (fp32 logits x3)": 3 * min(chunk, tokens) * v * 4,
        "CUDA context + allocator slack": 3 * GB,
    }
    util = float(rollout.get("gpu_memory_utilization", 0.45))
    vllm_share = util * gpu_gb * GB
    weights = arch.parameters() * wbytes
    slots = lora_params * wbytes * int(rollout.get("max_loras", 1))
    runtime = 2 * GB  # sampler, activations of one forward, CUDA graphs
    vllm = {"weights": weights, "LoRA slots": slots, "runtime": runtime,
            "KV cache": max(vllm_share - weights - slots - runtime, 0.0)}  # fmt: skip
    batch, group = int(data.get("batch_size", 32)), int(grpo.get("group_size", 8))
    rollouts = batch * group
    new_tokens = int(sampling.get("max_new_tokens", 1024))
    kv_tokens = vllm["KV cache"] / arch.kv_bytes_per_token(wbytes)
    step = {
        "rollouts per step": rollouts,
        "micro-batches per step": -(-rollouts // micro) * int(grpo.get("ppo_epochs", 1)),
        "sequence tokens per step (max)": rollouts * seq,
        "generated tokens per model turn (max)": rollouts * new_tokens,
        "KV-cache tokens": kv_tokens,
        "full-length sequences resident in KV": kv_tokens / seq,
    }
    sleep = rollout.get("sleep_mode")
    return Budget(trainer, vllm, gpu_gb * GB, bool(True if sleep is None else sleep), step)


def table(b: Budget) -> str:
    rows = ["| item | GB |", "|---|---|"]
    rows += [f"| trainer: {k} | {v / GB:.1f} |" for k, v in b.trainer.items()]
    rows += [f"| **trainer total** | **{b.trainer_total / GB:.1f}** |"]
    rows += [f"| vLLM: {k} | {v / GB:.1f} |" for k, v in b.vllm.items()]
    rows += [f"| **vLLM total** | **{b.vllm_total / GB:.1f}** |"]
    both = b.trainer_total + b.vllm_total
    rows += [f"| both resident | {both / GB:.1f} |",
             f"| peak ({'sleep mode level 1' if b.sleep_mode else 'no sleep mode'}) | {b.peak / GB:.1f} |",
             f"| **margin on {b.gpu_bytes / GB:.0f} GB, both resident** | **{(b.gpu_bytes - both) / GB:.1f}** |"]  # fmt: skip
    rows += ["", "| per step | |", "|---|---|"]
    rows += [f"| {k} | {v:,.0f} |" for k, v in b.step.items()]
    return "\n".join(rows)


def load_architecture(model_path: str | None) -> tuple[Architecture, str]:
    config = Path(model_path or "") / "config.json"
    if model_path and config.is_file():
        return Architecture.from_config(json.loads(config.read_text())), str(config)
    return Architecture.from_config(QWEN3_8B), "Qwen3-8B's published config (no config.json at model_path)"


def main(argv: Sequence[str] | None = None) -> None:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    args = list(sys.argv[1:] if argv is None else argv)
    gpu_gb = float(next((a.split("=", 1)[1] for a in args if a.startswith("gpu_gb=")), 141))
    overrides = [a for a in args if not a.startswith("gpu_gb=")]
    if not any(a.startswith("experiment=") for a in overrides):
        overrides.insert(0, "experiment=envsched_qwen3_8b")
    conf = Path(__file__).resolve().parents[2] / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose("train", overrides=overrides)
    plain = OmegaConf.to_container(OmegaConf.masked_copy(cfg, ["model", "rollout", "data"]), resolve=False)
    plain["model"]["policy"]["dtype"] = OmegaConf.select(cfg, "model.policy.dtype")
    plain["rollout"]["gpu_memory_utilization"] = OmegaConf.select(cfg, "rollout.gpu_memory_utilization")
    plain["rollout"]["sleep_mode"] = OmegaConf.select(cfg, "rollout.sleep_mode")
    arch, source = load_architecture(OmegaConf.select(cfg, "model_path", default=None))
    print(f"{' '.join(overrides)} on {gpu_gb:.0f} GB; architecture from {source}\n")
    print(table(estimate(arch, plain, gpu_gb)))


if __name__ == "__main__":
    main()
