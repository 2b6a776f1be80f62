"""A few GRPO steps of the real training path on one GPU: tiny Qwen3 (head_dim 128, LoRA), bf16, HF engine.

Needs torch, transformers, peft, lightning and torch-geometric only (no vLLM, no network). Prints the
peak GPU memory and the seconds per step (rollout and training split), measured after the first
step (CUDA warm-up). `--device cpu` runs the same path in fp32 on the CPU, to check the script
itself on a machine without a GPU.

    bash scripts/gpu_smoke.sh [--steps 6] [--device cuda]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from functools import partial

import lightning as L
import torch
from torch.utils.data import DataLoader, IterableDataset

from envsched_lightning.envs import make_env
from envsched_lightning.models import tiny_qwen3_policy
from envsched_lightning.module import GRPOModule, TaskBatch

WORLDS = ("banking", "calendar", "messaging")
SHAPE = dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, head_dim=128)  # fmt: skip
LORA = dict(r=16, alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])


class Batches(IterableDataset):
    def __init__(self, items, steps: int, batch: int) -> None:
        self.items, self.steps, self.batch = items, steps, batch

    def __iter__(self):
        rng = random.Random(0)
        for _ in range(self.steps):
            idx = rng.sample(range(len(self.items)), self.batch)
            yield TaskBatch(idx, [self.items[i][0] for i in idx], [self.items[i][1] for i in idx])


class Data(L.LightningDataModule):
    def __init__(self, items, steps: int, batch: int) -> None:
        super().__init__()
        self.items, self.steps, self.batch = items, steps, batch

    def train_dataloader(self):
        return DataLoader(Batches(self.items, self.steps, self.batch), batch_size=None)

    def report(self, groups) -> None:
        pass

    def warm_start_items(self):
        return self.items


class StepClock(L.Callback):
    """Wall time of each training step (CUDA synchronised) and what the module logged for it."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.logged: list[dict[str, float]] = []

    def _sync(self, module) -> None:
        if module.device.type == "cuda":
            torch.cuda.synchronize(module.device)

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        self._sync(module)
        self._t0 = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        self._sync(module)
        self.seconds.append(time.perf_counter() - self._t0)
        self.logged.append({k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith(("rollout/", "train/", "time/"))})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--batch", type=int, default=8, help="tasks per step")
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--warm-steps", type=int, default=40, help="supervised warm-start steps before GRPO")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run on a GPU machine, or pass --device cpu to check the script")

    L.seed_everything(0)
    worlds = [make_env(name, num_tasks=24) for name in WORLDS]
    items = [(task, env) for env in worlds for task in env.tasks()]
    policy = tiny_qwen3_policy(envs=worlds, seed=0, lora=LORA, gradient_checkpointing=True, **SHAPE)
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    policy.model.to(dtype)  # bf16 weights and adapters on the GPU, as conf/model/qwen3_8b.yaml loads them
    module = GRPOModule(policy, optimizer=partial(torch.optim.AdamW, lr=1e-4), sampling=dict(max_new_tokens=args.max_new_tokens),
                        grpo=dict(group_size=args.group, max_seq_len=2048, micro_batch_size=16),
                        warm_start=dict(steps=args.warm_steps, lr=3e-3, batch_size=16))  # fmt: skip
    clock = StepClock()
    trainer = L.Trainer(max_steps=args.steps, accelerator="gpu" if args.device == "cuda" else "cpu", devices=1,
                        precision="bf16-true" if args.device == "cuda" else "32-true", logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        callbacks=[clock], num_sanity_val_steps=0)  # fmt: skip
    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    trainer.fit(module, datamodule=Data(items, args.steps, args.batch))
    total = time.perf_counter() - t0

    steady = clock.seconds[1:] or clock.seconds
    trained = sum(1 for m in clock.logged if m.get("train/skipped", 1.0) == 0.0)
    print(f"device: {torch.cuda.get_device_name() if args.device == 'cuda' else 'cpu'}, dtype {dtype}, "
          f"{sum(p.numel() for p in policy.model.parameters()) / 1e6:.1f}M parameters, head_dim 128, LoRA r=16")  # fmt: skip
    print(f"steps: {len(clock.seconds)} ({trained} with an optimiser update), {args.batch} tasks x {args.group} rollouts")
    print(f"seconds per step after the first: median {statistics.median(steady):.2f} "
          f"(first {clock.seconds[0]:.2f}; fit incl. warm start {total:.1f})")  # fmt: skip
    for key in ("rollout/gen_tokens_per_s", "train/train_tokens_per_s", "rollout/reward_mean"):
        values = [m[key] for m in clock.logged[1:] if key in m]
        if values:
            print(f"{key}: median {statistics.median(values):.1f}")
    if args.device == "cuda":
        print(f"peak GPU memory allocated: {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB "
              f"(reserved {torch.cuda.max_memory_reserved() / 2**30:.2f} GiB)")  # fmt: skip
    if trained == 0:
        raise SystemExit("no step had an informative group: the training half of the path did not run")


if __name__ == "__main__":
    main()
