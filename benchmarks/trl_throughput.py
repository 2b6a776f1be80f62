"""Seconds per GRPO step, rollout and train tokens/s: our GRPO step against TRL's `GRPOTrainer`, one run.

    .venv/bin/python -m benchmarks.trl_throughput [--steps 6] [--batch 8] [--group 4] [--max-new-tokens 32]
    .venv-vllm/bin/python -m benchmarks.trl_throughput --model rehearsal   # + our step on the vLLM CPU engine

Both trainers get the same tiny Qwen3 (same seed, same offline tokenizer), the same prompts
(single-turn tool calls from the built-in `banking` world, rendered by the same chat template),
the same group size G, completion length, tasks per step, AdamW learning rate, one optimiser step
per GRPO step (TRL: `steps_per_generation=1`, `num_iterations=1`; ours: `ppo_epochs=1`,
`num_mini_batches=1`), no KL term, sampling at temperature 1, one torch thread. Ours: the
`GRPOModule` training step under a Lightning `Trainer` with the HF engine (the episode ends after
its first model turn, as TRL's completion does). TRL: `GRPOTrainer.train()` scored by the same
environment's verifier (`adapters.tasks.EnvReward`). The first step is excluded (warm-up); the table
gives medians over the rest and the ratio to TRL.

`--model tiny` (default): the in-memory tiny Qwen3 (head_dim 16), every weight trained. `--model
rehearsal`: the `make rehearsal` checkpoint shape (head_dim 128, Qwen3's chat template, a short SFT
so it writes tool calls), written to a temporary folder and loaded with the same LoRA adapter by
every row (TRL trains the adapter of the same PEFT model); where vLLM is installed, a third row runs
our step with the vLLM CPU engine (base weights from the folder, the adapter synced after each
optimiser step), since vLLM's CPU attention rejects head_dim 16.

Where the time goes is printed too: generation vs the rest (log-probs, loss, backward, optimiser;
TRL's reward scoring included). Our step skips the backward pass for groups whose rewards are all
equal (they carry no gradient), so its train tokens count only informative groups; TRL trains on
every completion. Tokens/s are therefore given per token actually processed, and seconds per step
is the end-to-end figure to compare.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time
from functools import partial
from typing import Any

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process (as make test-vllm)
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB: a tiny model's cache

import torch  # noqa: E402

from envsched_lightning.console import quiet_known_noise  # noqa: E402
from envsched_lightning.envs import make_env  # noqa: E402
from envsched_lightning.models import Policy, tiny_qwen3_policy  # noqa: E402
from envsched_lightning.models.checkpoint import (  # noqa: E402
    REHEARSAL_TEMPLATE_KW,
    REHEARSAL_VLLM,
    load_rehearsal_policy,
    write_checkpoint,
)

WORLD = "banking"


def _items(tasks: int) -> list[tuple[Any, Any]]:
    env = make_env(WORLD, num_tasks=tasks, seed=0)
    return [(dataclasses.replace(t, max_turns=1), env) for t in env.tasks()]  # single turn, as TRL generates


def _policy(a: argparse.Namespace, env: Any) -> Policy:
    """The model every row starts from: the tiny in-memory Qwen3, or the rehearsal checkpoint with LoRA."""
    if a.model_dir is None:
        return tiny_qwen3_policy(envs=[env], seed=0)
    torch.manual_seed(0)  # the same adapter initialisation in every row
    return load_rehearsal_policy(a.model_dir)


def _template_kwargs(a: argparse.Namespace) -> dict[str, Any]:
    return dict(REHEARSAL_TEMPLATE_KW) if a.model_dir is not None else {}


def vllm_available() -> bool:
    try:
        import vllm  # noqa: F401
    except ImportError:
        return False
    return True


def run_ours(a: argparse.Namespace, engine: str = "hf") -> list[dict[str, float]]:
    import lightning as L
    from torch.utils.data import DataLoader

    from envsched_lightning.module import GRPOModule, TaskBatch

    items = _items(a.batch * a.steps)
    policy = _policy(a, items[0][1])
    factory = None
    if engine == "vllm":
        from envsched_lightning.rollout.vllm_engine import VLLMEngine

        factory = partial(VLLMEngine, model_path=a.model_dir, max_model_len=2048, seed=0, **REHEARSAL_VLLM)
    module = GRPOModule(policy, optimizer=partial(torch.optim.AdamW, lr=a.lr), engine=factory,
                        sampling=dict(max_new_tokens=a.max_new_tokens, temperature=1.0, top_p=1.0, top_k=0),
                        grpo=dict(group_size=a.group, micro_batch_size=a.batch * a.group, max_seq_len=1024),
                        chat_template_kwargs=_template_kwargs(a))  # fmt: skip
    rows: list[dict[str, float]] = []

    class Clock(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            self.t0 = time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            m = {k: float(v) for k, v in trainer.callback_metrics.items()}
            seconds = time.perf_counter() - self.t0
            gen_tokens = m["rollout/tokens"]
            gen_s = gen_tokens / max(m["rollout/gen_tokens_per_s"], 1e-9)
            trained = not m.get("train/skipped", 1.0)
            rows.append({"seconds": seconds, "gen_s": gen_s, "gen_tokens": gen_tokens,
                         "rollout_tok_s": m["rollout/gen_tokens_per_s"],
                         "train_tok_s": m["train/train_tokens_per_s"] if trained else float("nan"),
                         "reward": m["rollout/reward_mean"]})  # fmt: skip

    class Data(L.LightningDataModule):
        def train_dataloader(self):
            return DataLoader([(i, t, e) for i, (t, e) in enumerate(items)], batch_size=a.batch,
                              collate_fn=TaskBatch.collate)  # fmt: skip

        def report(self, groups) -> None:  # no scheduler here: uniform order, as TRL's sampler
            pass

    L.seed_everything(0)
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, callbacks=[Clock()],
                        num_sanity_val_steps=0, limit_val_batches=0)  # fmt: skip
    trainer.fit(module, datamodule=Data())
    return rows


def run_trl(a: argparse.Namespace) -> list[dict[str, float]]:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from envsched_lightning.adapters.tasks import EnvReward, prompt_records

    items = _items(a.batch * a.steps)
    policy = _policy(a, items[0][1])
    dataset = Dataset.from_list(prompt_records(items, policy.tokenizer, _template_kwargs(a)))
    rows: list[dict[str, float]] = []
    gen = {"s": 0.0}

    class Timed(GRPOTrainer):
        def _generate_single_turn(self, *args, **kw):
            t0 = time.perf_counter()
            out = super()._generate_single_turn(*args, **kw)
            gen["s"] += time.perf_counter() - t0
            return out

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw) -> None:
            self.t0, gen["s"] = time.perf_counter(), 0.0

        def on_step_end(self, args, state, control, **kw) -> None:
            rows.append({"seconds": time.perf_counter() - self.t0, "gen_s": gen["s"]})

    with tempfile.TemporaryDirectory() as out:
        cfg = GRPOConfig(output_dir=out, use_cpu=True, bf16=False, report_to=[], seed=0, logging_steps=1,
                         per_device_train_batch_size=a.batch * a.group, num_generations=a.group,
                         max_completion_length=a.max_new_tokens, temperature=1.0, top_p=1.0, beta=0.0,
                         learning_rate=a.lr, lr_scheduler_type="constant", max_steps=a.steps,
                         steps_per_generation=1, num_iterations=1, save_strategy="no",
                         dataloader_num_workers=0, disable_tqdm=True)  # fmt: skip
        trainer = Timed(model=policy.model, reward_funcs=[EnvReward(items)], args=cfg, train_dataset=dataset,
                        processing_class=policy.tokenizer, callbacks=[Clock()])  # fmt: skip
        trainer.train()
    logs = [h for h in trainer.state.log_history if "completions/mean_length" in h]
    n = a.batch * a.group
    for row, h in zip(rows, logs):
        gen_tokens = h["completions/mean_length"] * n
        prompt_tokens = h.get("num_tokens", 0.0)  # cumulative prompt + completion tokens seen
        row |= {"gen_tokens": gen_tokens, "rollout_tok_s": gen_tokens / max(row["gen_s"], 1e-9),
                "reward": h.get("reward", float("nan")), "tokens_seen": prompt_tokens}  # fmt: skip
    seen = [r.get("tokens_seen", 0.0) for r in rows]
    for i, row in enumerate(rows):  # train tokens of this step = growth of TRL's cumulative count
        step_tokens = seen[i] - (seen[i - 1] if i else 0.0)
        row["train_tok_s"] = step_tokens / max(row["seconds"] - row["gen_s"], 1e-9)
    return rows


def _median(rows: list[dict[str, float]], key: str) -> float:
    values = [r[key] for r in rows[1:] if key in r and r[key] == r[key]]  # first step excluded, NaN skipped
    return statistics.median(values) if values else float("nan")


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=8, help="tasks per step")
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--model", choices=("tiny", "rehearsal"), default="tiny",
                   help="tiny: in-memory, full-parameter; rehearsal: head_dim-128 checkpoint with LoRA (+ vLLM row)")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    quiet_known_noise()  # the same console as train.py's
    runs = [("TRL GRPOTrainer", run_trl), ("ours (HF engine)", run_ours)]
    with tempfile.TemporaryDirectory(prefix="tiny-qwen3-") as folder:
        a.model_dir = None
        if a.model == "rehearsal":
            a.model_dir = str(write_checkpoint(folder, [make_env(WORLD)], sft_steps=100,
                                               chat_template_kwargs=REHEARSAL_TEMPLATE_KW))  # fmt: skip
            if vllm_available():
                runs.append(("ours (vLLM CPU engine)", partial(run_ours, engine="vllm")))
        results = {}
        for name, run in runs:
            t0 = time.perf_counter()
            rows = run(a)
            results[name] = {k: _median(rows, k) for k in ("seconds", "gen_s", "rollout_tok_s", "train_tok_s", "gen_tokens")}
            results[name]["wall"] = time.perf_counter() - t0
    base = results["TRL GRPOTrainer"]["seconds"]
    model = "rehearsal checkpoint, LoRA r8" if a.model == "rehearsal" else "tiny Qwen3, full-parameter"
    print(f"{WORLD}, {model}, {a.batch} tasks x G{a.group}, {a.max_new_tokens} new tokens, {a.steps} steps "
          "(first excluded), 1 thread")  # fmt: skip
    print("| trainer | s/step | ratio to TRL (lower is faster) | generation s | rollout tok/s | train tok/s | tokens generated |")
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['seconds']:.2f} | {r['seconds'] / base:.2f} | {r['gen_s']:.2f} | {r['rollout_tok_s']:.0f} | "
              f"{r['train_tok_s']:.0f} | {r['gen_tokens']:.0f} |")  # fmt: skip
    return results


if __name__ == "__main__":
    main()
