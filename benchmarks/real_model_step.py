"""Seconds per GRPO step of a real pretrained model on CPU, and what each cost option saves.

    make smollm2 && .venv/bin/python -m benchmarks.real_model_step [--rounds 2] [--threads 2]
    make setup-vllm && VLLM_ENABLE_V1_MULTIPROCESSING=0 .venv-vllm/bin/python -m benchmarks.real_model_step

One step = the agent loop's rollouts of 8 tasks x G = 4 (three built-in worlds, up to 64 new tokens
per turn, transformers generation) plus the update over all 32 episodes (the worst case: groups
with equal rewards, which a real step skips, get advantages of +-1 here so every row trains the same
amount). Rows switch the options on one at a time, then together:

- ``lora all layers``: the baseline, LoRA on every projection of all 30 blocks;
- ``top_layers=8``: LoRA on the last 8 blocks only (backward stops below them);
- ``compact schemas``: one signature line per tool in the system prompt instead of JSON schemas;
- ``reuse logprobs``: pi_old from the sampler (the same model, reported by `HFEngine`) instead of a
  second forward pass;
- ``top_layers=8 + compact, bfloat16``: the weights in bfloat16 (the adapters stay float32; CPUs with
  AVX512-BF16 / AMX run bf16 matmuls several times faster than fp32). pi_old is recomputed: in bf16
  the sampler's log-probs are not the trainer's (the gap column says how far; they serve the
  truncated importance weights instead);
- ``... + gqa + static cache``: attention over grouped key/value heads without copying them
  (``attn_implementation=sdpa_gqa``) and a preallocated generation cache (``rollout.cache=static``);
- ``... + shared prefill``: each group's prompt prefilled once for its G rows (``rollout.share_prefill``);
- ``vllm, top_layers=8 + compact`` (when vLLM is installed: run it from .venv-vllm): vLLM's CPU build
  generates, the adapter handed to it in memory after the update (vLLM's log-probs are not pi_old, so
  they are not reused);
- ``vllm merged, top_layers=8 + compact + gqa``: the same, vLLM serving the adapter merged into full
  weights (``rollout.merge_lora=true``: no LoRA kernels in vLLM; the 8 adapted blocks reloaded per sync),
  the update's forward with ``sdpa_gqa``.

Each row starts from the same base weights and seed; rows alternate by round so machine noise hits
all of them, and the table gives the median seconds and the ratio to the baseline of the same run.
"pi_old gap" is the mean and largest |sampler log-prob - training forward's log-prob| over the
generated tokens (measured between rollout and update, untimed): how far the sampler's log-probs are
from the pi_old a recomputation gives, for rows whose sampler reports them.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import statistics
import time
from functools import partial
from typing import Any

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")

import torch  # noqa: E402

from envsched_lightning.envs import make_env  # noqa: E402
from envsched_lightning.grpo import group_advantages  # noqa: E402
from envsched_lightning.rollout.types import pack_sequences  # noqa: E402
from envsched_lightning.models import Policy, apply_lora, load_pretrained_policy  # noqa: E402
from envsched_lightning.module import GRPOModule, TaskBatch  # noqa: E402
from envsched_lightning.rollout import HFEngine  # noqa: E402

ROWS: dict[str, dict[str, Any]] = {
    "lora all layers": {},
    "top_layers=8": dict(top_layers=8),
    "compact schemas": dict(tool_schemas="compact"),
    "reuse logprobs": dict(reuse=True),
    "all three": dict(top_layers=8, tool_schemas="compact", reuse=True),
    "top_layers=8 + compact, bfloat16": dict(top_layers=8, tool_schemas="compact", dtype="bfloat16"),
    "all three + gqa + static cache": dict(top_layers=8, tool_schemas="compact", reuse=True, attn="sdpa_gqa",
                                           cache="static"),
    "all three + gqa + static cache + shared prefill": dict(top_layers=8, tool_schemas="compact", reuse=True,
                                                            attn="sdpa_gqa", cache="static", share=True),
    "bfloat16 + gqa + static cache + shared prefill": dict(top_layers=8, tool_schemas="compact", dtype="bfloat16",
                                                           attn="sdpa_gqa", cache="static", share=True),
    "vllm, top_layers=8 + compact": dict(top_layers=8, tool_schemas="compact", vllm=True),
    "vllm merged, top_layers=8 + compact + gqa": dict(top_layers=8, tool_schemas="compact", vllm=True, merge=True,
                                                      attn="sdpa_gqa"),
}
HAS_VLLM = importlib.util.find_spec("vllm") is not None


def build(base: Policy, folder: str, top_layers: int | None = None, tool_schemas: str = "json", reuse: bool = False,
          vllm: bool = False, dtype: str = "float32", attn: str | None = None, cache: str = "dynamic", share: bool = False,
          merge: bool = False) -> GRPOModule:  # fmt: skip
    model = copy.deepcopy(base.model).to(getattr(torch, dtype))
    if attn:
        model.set_attn_implementation(attn)
    model = apply_lora(model, dict(r=16, alpha=32, target_modules="all", top_layers=top_layers))
    engine = partial(HFEngine, cache=cache, share_prefill=share, return_logprobs=dtype != "float32")
    if vllm:
        from envsched_lightning.rollout import VLLMEngine

        engine = partial(VLLMEngine, model_path=folder, dtype="float32", max_model_len=1024, enforce_eager=True,
                         merge_lora=merge)  # fmt: skip
    module = GRPOModule(Policy(model, base.tokenizer), engine=engine,
                        optimizer=partial(torch.optim.AdamW, lr=1e-4), sampling=dict(max_new_tokens=64),
                        grpo=dict(group_size=4, micro_batch_size=8, max_seq_len=1024, reuse_sampling_logprobs=reuse),
                        tool_format="prompt", tool_schemas=tool_schemas)  # fmt: skip
    # outside a Trainer: the optimiser and backward Lightning would hand the module, nothing else
    opt = module.configure_optimizers()
    module.optimizers = lambda: opt  # type: ignore[method-assign]
    module.manual_backward = lambda loss: loss.backward()  # type: ignore[method-assign]
    module.engine.sync_weights(module.model)  # as at fit start; an engine starts here, not in the timed step
    module.engine.generate([[1, 2, 3]], module.sampling.greedy())
    return module


def one_step(module: GRPOModule, batch: TaskBatch, seed: int) -> dict[str, float]:
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    rollouts = module._rollouts(batch, module.grpo.group_size, module.sampling)
    rollout_s = time.perf_counter() - t0
    eps = rollouts.episodes
    gap_mean, gap_max = pi_old_gap(module, eps)  # untimed, on the weights that sampled
    t1 = time.perf_counter()
    adv = group_advantages(rollouts.rewards(), module.grpo.scale_rewards)
    forced = torch.tensor([1.0, -1.0] * (module.grpo.group_size // 2) + [0.0] * (module.grpo.group_size % 2))
    advantages = torch.where(adv.zero_var[:, None], forced, adv.advantages).flatten()  # [B * G]
    module._optimise(eps, advantages)
    module.engine.sync_weights(module.model)  # the next step samples the new adapter (vLLM: handed over in memory)
    train_s = time.perf_counter() - t1
    return dict(total_s=rollout_s + train_s, rollout_s=rollout_s, train_s=train_s,
                turns=sum(e.turns for e in eps) / len(eps), gen_tokens=sum(e.gen_tokens for e in eps),
                mean_len=sum(len(e.token_ids) for e in eps) / len(eps), reward=sum(e.reward for e in eps) / len(eps),
                gap_mean=gap_mean, gap_max=gap_max)  # fmt: skip


@torch.no_grad()
def pi_old_gap(module: GRPOModule, episodes: list) -> tuple[float, float]:
    """Mean and max |sampler log-prob - training forward's log-prob| over generated tokens, on the
    weights that sampled them (nan when the sampler does not report log-probs)."""
    seqs = pack_sequences(episodes, module.tokenizer.pad_token_id, module.loop_kwargs["max_seq_len"])
    if seqs.sample_logprobs is None:
        return float("nan"), float("nan")
    mask = seqs.loss_mask.bool()
    diff = (module._logprobs(seqs) - seqs.sample_logprobs)[mask].abs()
    return diff.mean().item(), diff.max().item()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="models/SmolLM2-135M-Instruct")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rows", nargs="*", default=[r for r in ROWS if HAS_VLLM or "vllm" not in r], choices=list(ROWS))
    parser.add_argument("--json", help="also write the per-round numbers here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    base = load_pretrained_policy(args.model, dtype="float32", lora=None, gradient_checkpointing=False)
    worlds = [make_env(n) for n in ("banking", "calendar", "messaging")]
    items = [(t, env) for env in worlds for t in env.tasks()[:3]][:8]
    batch = TaskBatch(list(range(len(items))), [t for t, _ in items], [e for _, e in items])
    results: dict[str, list[dict[str, float]]] = {row: [] for row in args.rows}
    for r in range(args.rounds):
        for row in args.rows if r % 2 == 0 else reversed(args.rows):
            module = build(base, args.model, **ROWS[row])
            results[row].append(one_step(module, batch, seed=r))
            print(f"round {r + 1} {row}: {results[row][-1]['total_s']:.1f} s", flush=True)
            del module

    med = {row: {k: statistics.median(x[k] for x in runs) for k in runs[0]} for row, runs in results.items()}
    first = med[args.rows[0]]["total_s"]
    print(f"\n8 tasks x G=4, <=64 new tokens per turn, {args.threads} threads, median of {args.rounds} rounds")
    print("| option | step s | rollout s | train s | x baseline | turns/episode | tokens/episode | pi_old gap mean / max |")
    print("|---|---|---|---|---|---|---|---|")
    for row, m in med.items():
        gap = "-" if m["gap_mean"] != m["gap_mean"] else f"{m['gap_mean']:.1e} / {m['gap_max']:.1e}"
        print(f"| {row} | {m['total_s']:.1f} | {m['rollout_s']:.1f} | {m['train_s']:.1f} | {m['total_s'] / first:.2f} "
              f"| {m['turns']:.2f} | {m['mean_len']:.0f} | {gap} |")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
