"""Two-process DDP run (gloo, CPU) of the DataModule, recording what each rank trained on.

Run as a script (`python ddp_probe.py OUT_DIR [grpo]`): Lightning's DDP launcher re-runs this file
for rank 1. By default the module is a stand-in for `GRPOModule` that keeps its contract
(TaskBatch in, one `report(groups)` per step) with deterministic fake rewards and a one-layer
model, so the schedule plumbing is checked in seconds; with `grpo` it is the real `GRPOModule` on
the tiny Qwen3, whose ranks must stay in lock-step although their groups differ.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import lightning as L
import torch

from datamodules.envsched_datamodule import EnvSchedDataModule
from envsched_lightning.distributed import end_process_group
from envsched_lightning.envs import make_env
from envsched_lightning.module import TaskBatch
from envsched_lightning.scheduling import RolloutGroup, build_scheduler

STEPS = 4


class StandInModule(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)
        self.seen: list[dict] = []

    def training_step(self, batch: TaskBatch, batch_idx: int) -> torch.Tensor:
        dm = self.trainer.datamodule
        step = dm.step
        groups = [RolloutGroup(i, tuple(float((i + step + g) % 3 == 0) for g in range(4))) for i in batch.indices]
        dm.report(groups)
        self.seen.append({"step": step, "shard": batch.indices, "decision": dm.last_decision.indices})
        return self.layer(torch.ones(len(batch), 1)).pow(2).mean()  # every rank: one backward, one all-reduce

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return batch


def real_module(envs: dict) -> L.LightningModule:
    from envsched_lightning.models import tiny_qwen3_policy
    from envsched_lightning.module import GRPOModule

    return GRPOModule(tiny_qwen3_policy(envs=list(envs.values()), seed=0), sampling=dict(max_new_tokens=8),
                      grpo=dict(group_size=4, num_mini_batches=2), warm_start=dict(steps=30, batch_size=8),
                      optimizer=functools.partial(torch.optim.AdamW, lr=1e-3))  # fmt: skip


def main(out: Path, grpo: bool) -> None:
    L.seed_everything(0)
    envs = {n: make_env(n, num_tasks=8, seed=0) for n in ("banking", "calendar")}
    dm = EnvSchedDataModule(envs, functools.partial(build_scheduler, "envsched"), batch_size=4,
                            steps_per_epoch=STEPS, eval_per_env=1)  # fmt: skip
    module = real_module(envs) if grpo else StandInModule()
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, limit_val_batches=0,
                        enable_model_summary=False)  # fmt: skip
    trainer.fit(module, datamodule=dm)
    params = [p.detach().double() for p in module.parameters() if p.requires_grad]
    record = {"seen": getattr(module, "seen", []), "updates": dm.scheduler.history.step,
              "weight": sum(float(p.square().sum()) for p in params),
              "zero_var": float(trainer.callback_metrics.get("rollout/zero_var_frac", -1))}  # fmt: skip
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps(record))
    end_process_group()  # gloo's threads must not outlive the interpreter (abort at exit)


if __name__ == "__main__":
    main(Path(sys.argv[1]), grpo=sys.argv[2:] == ["grpo"])
