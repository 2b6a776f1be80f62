"""One process of a 2-process `EnvSchedGRPOTrainer` run on CPU (gloo), launched by torchrun.

`test_trl_distributed.py` starts two torchrun "nodes" of one process each, so both processes are
their node's local rank 0: with ``save_on_each_node=True`` both save checkpoints, each into its own
``node<rank>/`` folder (as nodes with their own disks would). Each process writes what it scored
(rows, rewards, completion lengths), what its scheduler saw (rank 0 selects and updates) and the
``sched/`` entries of its log history to ``rank<rank>.json``.

Layout: 3 rows per process, 2 generations per prompt, so a generation is 3 prompts and the middle
prompt's group is split over the two processes: its rewards reach rank 0's scheduler only through
TRL's gather.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
from datasets import Dataset
from trl import GRPOConfig

from envsched_lightning.adapters.tasks import EnvReward, prompt_records, specs_of
from envsched_lightning.adapters.trl import EnvSchedGRPOTrainer
from envsched_lightning.distributed import end_process_group
from envsched_lightning.envs import make_env
from envsched_lightning.models import tiny_qwen3_policy
from envsched_lightning.scheduling import build_scheduler


def main(out: Path) -> None:
    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    env = make_env("banking", num_tasks=8, seed=0)
    items = [(task, env) for task in env.tasks()]
    policy = tiny_qwen3_policy(envs=[env], vocab_size=1024, seed=0)
    scheduler = build_scheduler("envsched", specs_of(items), seed=0)
    events: list[list] = []
    select, update = scheduler.select, scheduler.update

    def recorded_select(n):
        chosen = select(n)
        events.append(["select", list(chosen)])
        return chosen

    def recorded_update(groups):
        update(groups)
        events.append(["update", [[g.index, list(g.rewards), list(g.lengths)] for g in groups]])

    scheduler.select, scheduler.update = recorded_select, recorded_update
    scored: list[dict] = []
    env_reward = EnvReward(items)

    def reward(completions, completion_ids, env, task_id, **kwargs):
        out = env_reward(completions, env, task_id)
        scored.append({"rows": [list(k) for k in zip(env, task_id)], "rewards": out,
                       "lengths": [len(ids) for ids in completion_ids]})  # fmt: skip
        return out

    args = GRPOConfig(output_dir=str(out / f"node{rank}"), use_cpu=True, bf16=False, report_to=[], seed=0,
                      per_device_train_batch_size=3, num_generations=2, max_completion_length=8, beta=0.0,
                      learning_rate=1e-4, logging_steps=1, max_steps=4, save_strategy="steps", save_steps=2,
                      save_on_each_node=True, dataloader_num_workers=0, disable_tqdm=True)  # fmt: skip
    trainer = EnvSchedGRPOTrainer(model=policy.model, reward_funcs=[reward], args=args,
                                  train_dataset=Dataset.from_list(prompt_records(items, policy.tokenizer)),
                                  processing_class=policy.tokenizer, task_scheduler=scheduler)  # fmt: skip
    trainer.train()
    logged = [{k: v for k, v in entry.items() if k.startswith("sched/")} for entry in trainer.state.log_history]
    record = {"rank": trainer.accelerator.process_index, "world": trainer.accelerator.num_processes,
              "events": events, "scored": scored, "history_step": scheduler.history.step,
              "generations": trainer.generations, "logged": [e for e in logged if e]}  # fmt: skip
    (out / f"rank{rank}.json").write_text(json.dumps(record))
    end_process_group()  # gloo's threads must not outlive the interpreter (abort at exit)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
