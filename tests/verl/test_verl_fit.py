"""verl's real training loop, `RayPPOTrainer.fit()`, choosing its prompts through `verl_main`.

Everything on the driver is verl 0.9.1's own code: Hydra composes its ``ppo_trainer`` config with
`verl_main.DEFAULTS`, its ``TaskRunner.run`` builds the datasets, tokenizer and trainer, and ``fit``
runs GRPO steps (advantages, batch balancing, metrics, checkpoints, resume). Only what would run
in Ray workers is replaced, at the objects ``init_workers`` would have built:

- ``async_rollout_manager.generate_sequences``: the agent loop's output layout, with a deterministic
  reward per (task, rollout) in ``rm_scores``;
- ``actor_rollout_wg``: ``compute_log_prob`` returns zeros in the no-padding layout,
  ``update_actor`` records the tasks and advantages it was handed, ``save_checkpoint`` /
  ``load_checkpoint`` make / record the actor's folder (verl itself writes ``data.pt``);
- ``checkpoint_manager``: weight sync to the rollout replicas, a no-op.

verl's ``Tracking.log`` is wrapped to record each step's metrics. No Ray cluster is started
(``init_workers`` is the only trainer method replaced, and the TaskRunner runs in-process), so this
checks the wiring ``python -m envsched_lightning.adapters.verl_main`` uses.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import torch
from hydra import compose, initialize_config_dir
from tensordict import TensorDict
from verl import DataProto
from verl.utils import tensordict_utils as tu
from verl.utils.tracking import Tracking

from envsched_lightning.adapters import verl_main
from envsched_lightning.adapters.mapping import spec_record
from envsched_lightning.checkpoints import read_state
from envsched_lightning.adapters.verl import SAMPLER_FILE
from envsched_lightning.envs import make_env

ENVS, TASKS_PER_ENV, BATCH, N = ("banking", "calendar"), 4, 4, 3  # 8 tasks, 2 steps per epoch, 3 rollouts each
PROMPT_LEN, RESPONSE_LEN = 6, 4


def reward(task_id: str, k: int) -> float:
    """Rollout k's reward on a task: some groups all 0 or all 1 (zero variance), others mixed."""
    kind = sum(map(ord, task_id)) % 3
    return [0.0, 1.0, float(k % 2)][kind]


# -- the pieces Ray workers would provide ----------------------------------------------------------


class Rollouts:
    """`AgentLoopManager.generate_sequences`: left-padded prompts, right-padded responses, rm_scores."""

    def __init__(self) -> None:
        self.calls = 0

    def generate_sequences(self, gen_batch: DataProto) -> DataProto:
        self.calls += 1
        uids, infos = gen_batch.non_tensor_batch["uid"], gen_batch.non_tensor_batch["extra_info"]
        n = len(uids)
        k = [sum(1 for u in uids[:r] if u == uids[r]) for r in range(n)]  # rollout index within its group
        resp_len = [1 + (r % RESPONSE_LEN) for r in range(n)]
        prompts = torch.arange(1, PROMPT_LEN + 1).repeat(n, 1)  # [n, P]
        responses = torch.zeros(n, RESPONSE_LEN, dtype=torch.long)  # [n, R]
        response_mask = torch.zeros(n, RESPONSE_LEN, dtype=torch.long)  # [n, R]
        rm_scores = torch.zeros(n, RESPONSE_LEN)  # [n, R] the reward on the last response token
        for r in range(n):
            responses[r, : resp_len[r]] = 7
            response_mask[r, : resp_len[r]] = 1
            rm_scores[r, resp_len[r] - 1] = reward(infos[r]["task_id"], k[r])
        attention_mask = torch.cat([torch.ones(n, PROMPT_LEN, dtype=torch.long), response_mask], dim=1)  # [n, P+R]
        batch = TensorDict({
            "prompts": prompts, "responses": responses, "response_mask": response_mask,
            "input_ids": torch.cat([prompts, responses], dim=1), "attention_mask": attention_mask,
            "position_ids": (attention_mask.cumsum(-1) - 1).clamp(min=0), "rm_scores": rm_scores,
        }, batch_size=n)  # fmt: skip
        non_tensor = {"__num_turns__": np.full(n, 2, dtype=np.int32),
                      "multi_modal_inputs": np.array([{} for _ in range(n)], dtype=object)}  # fmt: skip
        return DataProto(batch=batch, non_tensor_batch=non_tensor,
                         meta_info={"timing": {}, "reward_extra_keys": []})  # fmt: skip


class ActorWorkers:
    """The actor/rollout worker group: log-probs, the PPO update, checkpoints."""

    def __init__(self) -> None:
        self._dispatch_info: dict = {}
        self.trained: list[list[tuple[str, str]]] = []  # per update_actor call: each rollout's task
        self.advantages: list[torch.Tensor] = []
        self.loaded: list[str] = []

    def _query_dispatch_info(self, role: str) -> list[int]:
        return [0]  # one data-parallel rank

    def compute_log_prob(self, batch_td: TensorDict) -> TensorDict:
        ids = batch_td["input_ids"]  # nested [n, (seq)]
        zeros = torch.nested.nested_tensor_from_jagged(torch.zeros(ids.values().shape), offsets=ids.offsets())
        return tu.get_tensordict({"log_probs": zeros, "entropy": zeros.clone()},
                                 non_tensor_dict={"metrics": {"mfu": 0.0}})  # fmt: skip

    def update_actor(self, batch_td: TensorDict) -> TensorDict:
        infos = tu.get(batch_td, "extra_info")
        self.trained.append([(i["env"], i["task_id"]) for i in infos])
        self.advantages.append(batch_td["advantages"])
        return tu.get_tensordict({}, non_tensor_dict={"metrics": {"mfu": 0.0, "pg_loss": 0.0}})

    def save_checkpoint(self, local_path, hdfs_path=None, global_step=0, max_ckpt_to_keep=None) -> None:
        os.makedirs(local_path, exist_ok=True)

    def load_checkpoint(self, local_path, del_local_after_load=False) -> None:
        self.loaded.append(local_path)


class WeightSync:
    def update_weights(self, global_steps: int) -> None:
        pass

    def sleep_replicas(self) -> None:
        pass


# -- setup -------------------------------------------------------------------------------------------


def _write_parquet(path) -> str:
    rows = []
    for env_name in ENVS:
        for i, task in enumerate(make_env(env_name, num_tasks=TASKS_PER_ENV, seed=0).tasks()):
            rows.append({"data_source": env_name, "prompt": [dict(m) for m in task.messages], "ability": "tools",
                         "reward_model": {"style": "rule", "ground_truth": ""},
                         "extra_info": {**spec_record(task.spec), "split": "train", "index": i}})  # fmt: skip
    pd.DataFrame(rows).to_parquet(path)
    return str(path)


def _write_model(folder) -> str:
    """A tokenizer and a model config: all the driver reads from ``actor_rollout_ref.model.path``."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config

    vocab = {t: i for i, t in enumerate(["<pad>", "<unk>", "<eos>", *"abcdefghijklmnopqrstuvwxyz"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>")
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}"
    tokenizer.save_pretrained(folder)
    Qwen2Config(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                num_attention_heads=2, num_key_value_heads=1,
                architectures=["Qwen2ForCausalLM"]).save_pretrained(folder)  # fmt: skip
    return str(folder)


def _config(tmp_path, steps: int, save_freq: int):
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = _write_parquet(tmp_path / "train.parquet")
    model = _write_model(tmp_path / "model")
    overrides = [
        *verl_main.DEFAULTS,
        f"data.train_files={data}", f"data.val_files={data}", f"data.train_batch_size={BATCH}",
        "data.max_prompt_length=64", f"data.max_response_length={RESPONSE_LEN}",
        "+data.sampler.scheduler=envsched", "+data.sampler.scheduler_kwargs.seed=0",
        f"actor_rollout_ref.model.path={model}", f"actor_rollout_ref.rollout.n={N}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={BATCH}",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.actor.use_kl_loss=false", "algorithm.use_kl_in_reward=false",
        "algorithm.adv_estimator=grpo", "trainer.device=cpu", "trainer.n_gpus_per_node=1", "trainer.nnodes=1",
        "trainer.logger=[console]", "trainer.val_before_train=false", "trainer.test_freq=-1",
        f"trainer.total_training_steps={steps}", f"trainer.save_freq={save_freq}",
        f"trainer.default_local_dir={tmp_path / 'ckpt'}",
    ]  # fmt: skip
    with initialize_config_dir(config_dir=verl_main.VERL_CONFIG_DIR, version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


class Run:
    """One `TaskRunner.run` (dataset, tokenizer, trainer, fit), recording what the trainer did."""

    def __init__(self, monkeypatch, config) -> None:
        self.rollouts, self.actor, self.logged = Rollouts(), ActorWorkers(), []
        self.picks: list[list[int]] = []
        self.updates: list[list] = []
        run = self

        def init_workers(trainer) -> None:  # what init_workers builds, minus Ray
            run.trainer = trainer
            trainer.actor_rollout_wg = trainer.ref_policy_wg = run.actor
            trainer.async_rollout_manager, trainer.checkpoint_manager = run.rollouts, WeightSync()
            scheduler = trainer.train_dataloader.sampler.scheduler
            select, update = scheduler.select, scheduler.update
            scheduler.select = lambda n: run.picks.append(list(select(n))) or run.picks[-1]
            scheduler.update = lambda groups: (update(groups), run.updates.append(list(groups)))[0]

        monkeypatch.setattr(verl_main.EnvSchedPPOTrainer, "init_workers", init_workers)
        monkeypatch.setattr(Tracking, "log", lambda tracker, data, step, **kw: run.logged.append((step, dict(data))))
        verl_main.EnvSchedTaskRunnerImpl().run(config)

    @property
    def sampler(self):
        return self.trainer.train_dataloader.sampler

    def keys(self, indices) -> list[tuple[str, str]]:
        return [self.sampler.task_index.keys[i] for i in indices]


def test_fit_trains_on_the_schedulers_picks_and_reports_each_step_once(tmp_path, monkeypatch):
    steps = 3  # one epoch and a half: the sampler's generator spans the epoch boundary
    run = Run(monkeypatch, _config(tmp_path, steps=steps, save_freq=-1))

    assert type(run.trainer) is verl_main.EnvSchedPPOTrainer
    assert run.rollouts.calls == len(run.actor.trained) == len(run.picks) == len(run.updates) == steps
    for picks, trained, groups in zip(run.picks, run.actor.trained, run.updates):
        assert Counter(trained) == Counter({k: N for k in run.keys(picks)})  # the chosen tasks, n rollouts each
        assert sorted(g.index for g in groups) == sorted(picks)  # one group per chosen task, once
        for g in groups:
            task_id = run.sampler.task_index.keys[g.index][1]
            assert sorted(g.rewards) == sorted(reward(task_id, k) for k in range(N))
    assert int(run.sampler.scheduler.history.step) == steps
    for trained, advantages in zip(run.actor.trained, run.actor.advantages):  # verl's GRPO on those rewards
        for (_, task_id), row in zip(trained, advantages):  # row: [R]
            assert bool(row.abs().sum() > 0) == (len({reward(task_id, k) for k in range(N)}) > 1)

    assert [s for s, _ in run.logged] == list(range(1, steps + 1))
    for (step, metrics), picks, groups in zip(run.logged, run.picks, run.updates):
        envs = Counter(k[0] for k in run.keys(picks))
        assert {e: metrics[f"sched/env_count/{e}"] for e in ENVS} == {e: envs.get(e, 0) for e in ENVS}
        zero = [len(set(g.rewards)) == 1 for g in groups]
        assert metrics["sched/zero_var_frac"] == pytest.approx(sum(zero) / len(zero))
        assert "sched/pred_mean" in metrics and "sched/realised_mean" in metrics
        assert "actor/pg_loss" in metrics and "critic/advantages/mean" in metrics  # verl's own, still there


def test_checkpoints_hold_the_steps_rewards_and_resume_continues_the_run(tmp_path, monkeypatch):
    steps = 4
    full = Run(monkeypatch, _config(tmp_path / "full", steps=steps, save_freq=-1))

    # the same run, stopped after step 3 (mid-epoch) with a checkpoint each step, then resumed
    first = Run(monkeypatch, _config(tmp_path / "cut", steps=3, save_freq=1))
    ckpt = tmp_path / "cut" / "ckpt"
    for step in (1, 2, 3):
        folder = ckpt / f"global_step_{step}"
        ours = read_state(folder / SAMPLER_FILE)
        verls = torch.load(folder / "data.pt", weights_only=False)
        assert int(ours["scheduler"]["history"]["step"]) == step  # the step's own rewards are in
        assert int(_find(verls, "scheduler")["history"]["step"]) == step  # and verl's data.pt agrees
    assert first.picks == full.picks[:3]

    resumed = Run(monkeypatch, _config(tmp_path / "cut", steps=steps, save_freq=1))
    assert resumed.actor.loaded == [str(ckpt / "global_step_3" / "actor")]
    assert resumed.picks == full.picks[3:]  # the restored scheduler chooses what the uninterrupted one chose
    assert int(resumed.sampler.scheduler.history.step) == steps


def test_resume_at_an_epoch_boundary_restores_the_scheduler(tmp_path, monkeypatch):
    full = Run(monkeypatch, _config(tmp_path / "full", steps=3, save_freq=-1))
    Run(monkeypatch, _config(tmp_path / "cut", steps=2, save_freq=2))  # 2 steps = one epoch: verl skips data.pt
    resumed = Run(monkeypatch, _config(tmp_path / "cut", steps=3, save_freq=-1))
    assert resumed.picks == full.picks[2:]
    assert int(resumed.sampler.scheduler.history.step) == 3


def test_cli_puts_the_legacy_trainer_first_and_refuses_v1(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(verl_main, "run_ppo", lambda config, task_runner_class: ran.append((config, task_runner_class)))
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")  # Hydra re-raises instead of exiting
    monkeypatch.setattr("sys.argv", ["verl_main"])
    args = [f"hydra.run.dir={tmp_path}", "trainer.device=cpu", "algorithm.adv_estimator=grpo",
            f"actor_rollout_ref.model.path={_write_model(tmp_path / 'model')}",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1"]  # fmt: skip
    verl_main.cli(args)
    (config, runner), = ran
    assert runner is verl_main.EnvSchedTaskRunner
    assert config.trainer.use_v1 is False and config.data.dataloader_num_workers == 0
    verl_main.cli([*args, "data.dataloader_num_workers=2"])
    assert ran[-1][0].data.dataloader_num_workers == 2  # the command line wins (and the sampler refuses it)
    with pytest.raises(ValueError, match="use_v1"):
        verl_main.cli([*args, "trainer.use_v1=true"])
    assert len(ran) == 2


def _find(tree, key):
    """The first value under `key` anywhere in a nested dict (the sampler state inside data.pt)."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        for value in tree.values():
            found = _find(value, key)
            if found is not None:
                return found
    return None
