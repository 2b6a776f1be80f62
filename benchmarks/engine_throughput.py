"""Rollout tokens/s of the two engines on the same tiny Qwen3 (head_dim 128, LoRA) and the same episodes.

    make setup-vllm && .venv-vllm/bin/python -m benchmarks.engine_throughput [--rounds 3] [--group 8]

Both engines run the agent loop (multi-turn, tool turns, Qwen3's chat template) over the same tasks
of three built-in worlds with the same sampling settings, alternating engine by round so machine
noise hits both; the table gives generated tokens per second (median over rounds) and the ratio
to the HF engine measured in the same run. The model is the `make rehearsal` checkpoint shape
(written fresh to a temporary folder with a short SFT so it writes tool calls), fp32, one thread
pool shared by both.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

from envsched_lightning.envs import make_env  # noqa: E402
from envsched_lightning.models.checkpoint import (  # noqa: E402
    REHEARSAL_TEMPLATE_KW,
    REHEARSAL_VLLM,
    load_rehearsal_policy,
    write_checkpoint,
)
from envsched_lightning.rollout import HFEngine, SamplingConfig, run_agent_loop  # noqa: E402
from envsched_lightning.rollout.vllm_engine import VLLMEngine  # noqa: E402


def measure(engine, tokenizer, items, group: int, sampling: SamplingConfig) -> tuple[float, int]:
    t0 = time.perf_counter()
    batch = run_agent_loop(engine, tokenizer, items, group, sampling, max_seq_len=4096,
                           chat_template_kwargs=REHEARSAL_TEMPLATE_KW)  # fmt: skip
    seconds = time.perf_counter() - t0
    return seconds, sum(e.gen_tokens for e in batch.episodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--tasks-per-world", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    args = parser.parse_args()

    worlds = [make_env(n) for n in ("banking", "calendar", "filesystem")]
    items = [(t, env) for env in worlds for t in env.tasks()[: args.tasks_per_world]]
    folder = write_checkpoint(tempfile.mkdtemp(prefix="tiny-qwen3-"), worlds, sft_steps=100,
                              chat_template_kwargs=REHEARSAL_TEMPLATE_KW)  # fmt: skip
    policy = load_rehearsal_policy(folder)
    engines = {
        "hf": HFEngine(policy.model, policy.tokenizer),
        "vllm": VLLMEngine(policy.model, policy.tokenizer, model_path=str(folder), max_model_len=4096,
                           **REHEARSAL_VLLM),
    }  # fmt: skip
    for eng in engines.values():
        eng.sync_weights(policy.model)
    sampling = SamplingConfig(max_new_tokens=args.max_new_tokens, temperature=1.0, seed=0)
    start = time.perf_counter()
    measure(engines["vllm"], policy.tokenizer, items[:2], 2, sampling)  # engine start and first-call set-up
    print(f"vLLM engine start and first call: {time.perf_counter() - start:.1f} s")

    rates: dict[str, list[float]] = {name: [] for name in engines}
    for r in range(args.rounds):
        for name in (list(engines) if r % 2 == 0 else list(reversed(engines))):
            seconds, tokens = measure(engines[name], policy.tokenizer, items, args.group, sampling)
            rates[name].append(tokens / seconds)
            print(f"round {r} {name}: {tokens} tokens in {seconds:.2f} s")
    base = statistics.median(rates["hf"])
    print(f"\n{len(items)} tasks x {args.group} rollouts, up to {args.max_new_tokens} tokens per turn, fp32 CPU\n")
    print("| engine | generated tokens/s (median) | ratio to HF |\n|---|---|---|")
    for name, values in rates.items():
        print(f"| {name} | {statistics.median(values):.0f} | {statistics.median(values) / base:.2f} |")


if __name__ == "__main__":
    main()
