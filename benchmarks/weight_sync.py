"""Weights to vLLM each GRPO step: the adapter through a folder (before) and in memory (after), full weights in
memory; and generated tokens/s of the vLLM and transformers engines on the same requests.

    make setup-vllm smollm2 && .venv-vllm/bin/python -m benchmarks.weight_sync [--models rehearsal smollm2] [--rounds 3]

Per model and row: `--rounds` rounds of (move every trainable weight, as an optimiser step does; `sync_weights`;
one rollout of the same requests through the agent loop), after one unmeasured round that starts the engine.
The table gives the sync's median milliseconds, the rollout's median seconds, the sync's share of sync +
rollout (a training step also has its update, so its share of a whole step is lower) and generated tokens/s.
`adapter merged` serves the LoRA model as full weights with the adapter merged at each sync
(`rollout.merge_lora=true`). The `hf` row runs the same requests with the transformers engine on the same training model (it shares the
weights: nothing to sync). `rehearsal` is the `make rehearsal` checkpoint shape written fresh (tiny Qwen3,
LoRA r 8); `smollm2` is SmolLM2-135M-Instruct from `make smollm2` (LoRA r 16 on every projection, as
experiment=smollm2_cpu without `top_layers`), skipped when its folder is missing. fp32, in one process, one
vLLM engine at a time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

import torch  # noqa: E402

from envsched_lightning.envs import make_env  # noqa: E402
from envsched_lightning.models import Policy, load_pretrained_policy  # noqa: E402
from envsched_lightning.models.checkpoint import (  # noqa: E402
    REHEARSAL_LORA,
    REHEARSAL_TEMPLATE_KW,
    REHEARSAL_VLLM,
    load_rehearsal_policy,
    write_checkpoint,
)
from envsched_lightning.rollout import HFEngine, SamplingConfig, run_agent_loop  # noqa: E402
from envsched_lightning.rollout.vllm_engine import VLLMEngine  # noqa: E402

ROWS = {  # row -> (LoRA?, engine, weight_sync, merge_lora)
    "adapter, folder (before)": (True, "vllm", "disk", False),
    "adapter, in memory": (True, "vllm", "memory", False),
    "adapter merged, in memory": (True, "vllm", "memory", True),
    "full weights, in memory": (False, "vllm", "memory", False),
    "hf engine (shares the weights)": (True, "hf", None, False),
}


class Model:
    """A benchmark model: its folder, how to load it with or without LoRA, and its chat settings."""

    def __init__(self, name: str, folder: Path, load: Callable[[bool], Policy], template_kw: dict[str, Any],
                 vllm_kw: dict[str, Any]) -> None:  # fmt: skip
        self.name, self.folder, self.load, self.template_kw, self.vllm_kw = name, folder, load, template_kw, vllm_kw


def models(names: list[str], worlds, smollm2: Path) -> list[Model]:
    found = []
    for name in names:
        if name == "rehearsal":
            folder = write_checkpoint(tempfile.mkdtemp(prefix="tiny-qwen3-"), worlds, sft_steps=100,
                                      chat_template_kwargs=REHEARSAL_TEMPLATE_KW)  # fmt: skip
            found.append(Model(name, folder, lambda lora, f=folder: load_rehearsal_policy(f, REHEARSAL_LORA if lora else None),
                               REHEARSAL_TEMPLATE_KW, dict(REHEARSAL_VLLM)))  # fmt: skip
        elif not (smollm2 / "config.json").is_file():
            print(f"{name}: no model at {smollm2} (make smollm2): skipped")
        else:
            lora = dict(r=16, alpha=32, dropout=0.0, target_modules="all")
            found.append(Model(name, smollm2, lambda use, f=smollm2: load_pretrained_policy(
                str(f), dtype="float32", lora=lora if use else None, gradient_checkpointing=False),
                {}, dict(dtype="float32", max_lora_rank=16, enforce_eager=True)))  # fmt: skip
    return found


def move(model: torch.nn.Module, seed: int) -> None:
    """An optimiser step's worth of change on every trainable weight (the sync cost does not depend on its size)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn(p.shape, generator=gen) * 1e-4)


def run_row(model: Model, row: str, items, args) -> dict[str, float]:
    lora, kind, sync, merge = ROWS[row]
    policy = model.load(lora)
    trainable = sum(p.numel() for p in policy.model.parameters() if p.requires_grad)
    if kind == "hf":
        engine: Any = HFEngine(policy.model, policy.tokenizer)
    else:
        engine = VLLMEngine(policy.model, policy.tokenizer, model_path=str(model.folder), max_model_len=4096,
                            weight_sync=sync, merge_lora=merge, **model.vllm_kw)  # fmt: skip
    sampling = SamplingConfig(max_new_tokens=args.max_new_tokens, temperature=1.0, seed=0)
    rounds = []
    try:
        for r in range(args.rounds + 1):  # round 0 starts the engine: not measured
            move(policy.model, seed=r)
            t0 = time.perf_counter()
            engine.sync_weights(policy.model)
            t1 = time.perf_counter()
            batch = run_agent_loop(engine, policy.tokenizer, items, args.group, sampling, max_seq_len=4096,
                                   chat_template_kwargs=model.template_kw)  # fmt: skip
            t2 = time.perf_counter()
            if r:
                rounds.append((t1 - t0, t2 - t1, sum(e.gen_tokens for e in batch.episodes)))
    finally:
        if isinstance(engine, VLLMEngine):
            engine.shutdown()
    sync_s = statistics.median(s for s, _, _ in rounds)
    rollout_s = statistics.median(g for _, g, _ in rounds)
    tokens_s = statistics.median(n / g for _, g, n in rounds)
    print(f"{model.name} / {row}: sync {1000 * sync_s:.1f} ms, rollout {rollout_s:.2f} s, {tokens_s:.0f} tokens/s", flush=True)
    return {"trainable_m": trainable / 1e6, "sync_ms": 1000 * sync_s, "rollout_s": rollout_s,
            "share": sync_s / (sync_s + rollout_s), "tokens_s": tokens_s}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["rehearsal", "smollm2"], choices=["rehearsal", "smollm2"])
    parser.add_argument("--smollm2", type=Path, default=Path(os.environ.get("SMOLLM2_PATH", "models/SmolLM2-135M-Instruct")))
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--tasks-per-world", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args(argv)

    worlds = [make_env(n) for n in ("banking", "calendar", "filesystem")]
    items = [(t, env) for env in worlds for t in env.tasks()[: args.tasks_per_world]]
    table = []
    for model in models(args.models, worlds, args.smollm2):
        for row in args.rows:
            table.append((model.name, row, run_row(model, row, items, args)))
    print(f"\n{len(items)} tasks x {args.group} rollouts, <= {args.max_new_tokens} new tokens per turn, fp32, "
          f"{torch.get_num_threads()} threads, median of {args.rounds} rounds\n")
    print("| model | row | trainable params | sync ms | rollout s | sync share of sync + rollout | generated tokens/s | x hf |")
    print("|---|---|---|---|---|---|---|---|")
    for name, row, m in table:
        hf = next((x for n, r, x in table if n == name and ROWS[r][1] == "hf"), None)
        ratio = f"{m['tokens_s'] / hf['tokens_s']:.2f}" if hf else "-"
        sync = "-" if ROWS[row][1] == "hf" else f"{m['sync_ms']:.1f}"
        share = "-" if ROWS[row][1] == "hf" else f"{100 * m['share']:.1f}%"
        print(f"| {name} | {row} | {m['trainable_m']:.2f}M | {sync} | {m['rollout_s']:.2f} | {share} | {m['tokens_s']:.0f} | {ratio} |")


if __name__ == "__main__":
    main()
