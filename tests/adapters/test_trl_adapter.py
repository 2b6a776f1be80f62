"""TRL's real GRPOTrainer on CPU, prompts chosen by an EnvSched scheduler, rewards fed back once."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

import torch  # noqa: E402
from accelerate.data_loader import BatchSamplerShard  # noqa: E402
from datasets import Dataset  # noqa: E402
from torch.utils.data import BatchSampler  # noqa: E402
from trl import GRPOConfig  # noqa: E402
from trl.trainer.utils import RepeatSampler  # noqa: E402

from envsched_lightning.adapters.mapping import RewardRange, repeat_layout  # noqa: E402
from envsched_lightning.checkpoints import read_state  # noqa: E402
from envsched_lightning.adapters.tasks import EnvReward, prompt_records, specs_of  # noqa: E402
from envsched_lightning.adapters.trl import SCHEDULER_FILE, EnvSchedGRPOTrainer  # noqa: E402
from envsched_lightning.envs import make_env  # noqa: E402
from envsched_lightning.models import tiny_qwen3_policy  # noqa: E402
from envsched_lightning.scheduling import TaskSpec, build_scheduler  # noqa: E402


@pytest.fixture(scope="module")
def world():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a hidden-64 model: more threads only contend, badly so on a busy machine
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        env = make_env("banking", num_tasks=8, seed=0)
        items = [(task, env) for task in env.tasks()]
        policy = tiny_qwen3_policy(envs=[env], vocab_size=1024, seed=0)
        yield items, policy
    torch.set_num_threads(threads)


class Recorder:
    """Wraps a scheduler's select/update to log the order and content of every call."""

    def __init__(self, scheduler) -> None:
        self.events: list[tuple[str, object]] = []
        select, update = scheduler.select, scheduler.update

        def rec_select(n):
            out = select(n)
            self.events.append(("select", list(out)))
            return out

        def rec_update(groups):
            update(groups)
            self.events.append(("update", list(groups)))

        scheduler.select, scheduler.update = rec_select, rec_update


class RecordingReward(EnvReward):
    """The environment reward, remembering what it was asked to score and what it returned."""

    def __init__(self, items) -> None:
        super().__init__(items)
        self.calls: list[tuple[list[str], list[tuple[str, str]], list[float]]] = []
        self.lengths: list[list[int]] = []  # completion tokens of each scored rollout, per call

    def __call__(self, prompts, completions, completion_ids, env, task_id, **kwargs):
        out = super().__call__(completions, env, task_id, **kwargs)
        self.calls.append((list(prompts), list(zip(env, task_id)), out))
        self.lengths.append([len(ids) for ids in completion_ids])
        return out


def _config(tmp_path, **overrides) -> GRPOConfig:
    base = dict(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, report_to=[], seed=0,
                per_device_train_batch_size=4, num_generations=2, max_completion_length=12, beta=0.0,
                learning_rate=1e-4, logging_steps=1, save_strategy="no", dataloader_num_workers=0,
                disable_tqdm=True)  # fmt: skip
    return GRPOConfig(**{**base, **overrides})


def _run(world, tmp_path, name, resume=None, extra_rewards=(), trainer_kwargs=None, **overrides):
    items, policy = world
    records = prompt_records(items, policy.tokenizer)
    # shuffled rows: the adapter must find tasks by their env/task_id columns, not by position
    order = torch.randperm(len(records), generator=torch.Generator().manual_seed(3)).tolist()
    dataset = Dataset.from_list([records[i] for i in order])
    scheduler = build_scheduler(name, specs_of(items), seed=0)
    recorder = Recorder(scheduler)
    reward = RecordingReward(items)
    trainer = EnvSchedGRPOTrainer(model=policy.model, reward_funcs=[reward, *extra_rewards],
                                  args=_config(tmp_path, **overrides), train_dataset=dataset,
                                  processing_class=policy.tokenizer, task_scheduler=scheduler,
                                  **(trainer_kwargs or {}))  # fmt: skip
    trainer.train(resume_from_checkpoint=resume)
    return trainer, scheduler, recorder, reward, {(r["env"], r["task_id"]): r["prompt"] for r in records}


def _logged(trainer, key):
    """The values `key` took in the trainer's own log history (what report_to loggers receive)."""
    return [entry[key] for entry in trainer.state.log_history if key in entry]


@pytest.mark.parametrize(
    ("name", "overrides", "generations"),
    [
        # 4 optimizer steps, one generation per step (steps_per_generation = gradient_accumulation_steps = 2)
        ("envsched", dict(gradient_accumulation_steps=2, max_steps=4), 4),
        # each generation reused for 2 iterations: 4 optimizer steps, 2 generations, each reported once
        ("random", dict(gradient_accumulation_steps=2, num_iterations=2, max_steps=4), 2),
    ],
)
def test_grpo_trains_on_scheduled_prompts_and_reports_each_group_once(world, tmp_path, name, overrides, generations):
    trainer, scheduler, recorder, reward, prompt_of = _run(world, tmp_path, name, **overrides)
    g, b = trainer.num_generations, trainer.prompts_per_generation
    assert b == 4  # generation batch of 8 rollouts = 4 prompts x 2 generations

    # strictly online: every generation's rewards reach update before the next select
    kinds = [kind for kind, _ in recorder.events]
    assert kinds == ["select", "update"] * generations
    assert trainer.generations == generations
    assert len(reward.calls) == generations  # scored once per generation, reuse never rescored

    keys = [(s.env, s.task_id) for s in scheduler.specs]
    for k in range(generations):
        chosen = recorder.events[2 * k][1]
        groups = recorder.events[2 * k + 1][1]
        prompts, scored, rewards = reward.calls[k]
        # the prompts trained are the ones chosen, each repeated num_generations times in a row
        assert scored == [keys[i] for i in chosen for _ in range(g)]
        assert prompts == [prompt_of[keys[i]] for i in chosen for _ in range(g)]
        # every chosen task's group, with exactly the rewards its rollouts earned, and their lengths
        assert [grp.index for grp in groups] == chosen
        assert [list(grp.rewards) for grp in groups] == [rewards[j * g:(j + 1) * g] for j in range(b)]
        assert [list(grp.lengths) for grp in groups] == [reward.lengths[k][j * g:(j + 1) * g] for j in range(b)]
    assert scheduler.history.step == generations  # one update per generation, nothing else
    assert scheduler.history.ema_len.max() > 0  # the graph's log1p(ema_len) feature is fed

    # the scheduler's metrics are in TRL's own log history, one value per generation
    counts = _logged(trainer, "sched/env_count/banking")
    assert len(counts) == generations and set(counts) == {float(b)}
    zero = [sum(not grp.informative for grp in groups) / b for kind, groups in recorder.events if kind == "update"]
    assert _logged(trainer, "sched/zero_var_frac") == pytest.approx(zero)
    assert _logged(trainer, "sched/zero_var_frac/banking") == pytest.approx(zero)
    assert set(_logged(trainer, "sched/reward_clipped_frac")) == {0.0}
    assert len(_logged(trainer, "sched/pred_mean")) == (generations if name == "envsched" else 0)


def test_scheduler_state_is_saved_with_each_checkpoint(world, tmp_path):
    trainer, scheduler, _, _, _ = _run(world, tmp_path, "envsched", max_steps=2, save_strategy="steps", save_steps=2)
    path = tmp_path / "out" / "checkpoint-2" / SCHEDULER_FILE
    assert path.is_file()
    fresh = build_scheduler("envsched", scheduler.specs, seed=0)
    fresh.load_state_dict(read_state(path))  # what the adapter itself reads: plain data only
    assert fresh.select(4) == scheduler.select(4)  # the restored scheduler chooses as the live one

    resumed, rescheduler, recorder, _, _ = _run(world, tmp_path, "envsched", resume=str(path.parent), max_steps=4)
    # the two generations before the checkpoint are in the resumed scheduler; two more were added
    assert [kind for kind, _ in recorder.events] == ["select", "update"] * 2
    assert rescheduler.history.step == 4
    assert int(rescheduler.history.count.sum()) == 4 * resumed.prompts_per_generation


@pytest.mark.parametrize(("per_device", "spg", "processes", "g"), [(4, 2, 2, 2), (3, 4, 2, 3), (2, 1, 4, 4)])
def test_layout_matches_repeat_sampler_sharded_over_ranks(per_device, spg, processes, g):
    """What each rank generates from equals what TRL's RepeatSampler + Accelerate sharding would give it."""
    b = per_device * spg * processes // g
    chosen = [7, 2, 9, 4, 0, 5, 8, 1, 3, 6, 11, 10][:b]
    sampler = RepeatSampler(chosen, mini_repeat_count=g, batch_size=b, repeat_count=1, shuffle=False)
    batches = BatchSampler(sampler, batch_size=per_device * spg, drop_last=True)
    for rank in range(processes):
        shard = list(BatchSamplerShard(batches, num_processes=processes, process_index=rank))
        assert len(shard) == 1
        assert [chosen[i] for i in shard[0]] == repeat_layout(chosen, g, processes, rank)


def test_bad_dataset_is_rejected(world, tmp_path):
    items, policy = world
    records = prompt_records(items, policy.tokenizer)
    scheduler = build_scheduler("random", specs_of(items), seed=0)
    kwargs = dict(model=policy.model, reward_funcs=[EnvReward(items)], args=_config(tmp_path, max_steps=1),
                  processing_class=policy.tokenizer, task_scheduler=scheduler)  # fmt: skip
    with pytest.raises(ValueError, match="no row"):
        EnvSchedGRPOTrainer(train_dataset=Dataset.from_list(records[:-1]), **kwargs)
    with pytest.raises(ValueError, match="unique"):
        EnvSchedGRPOTrainer(train_dataset=Dataset.from_list(records + records[:1]), **kwargs)
    with pytest.raises(ValueError, match="column"):
        EnvSchedGRPOTrainer(train_dataset=Dataset.from_list([{"prompt": r["prompt"]} for r in records]), **kwargs)


def _signed(completions, **_):
    """+1 / -1 by the parity of the completion's length: a signed reward, as TRL users write them."""
    return [1.0 if len(c) % 2 else -1.0 for c in completions]


def test_rewards_of_any_declared_range_reach_the_scheduler_scaled(world, tmp_path):
    """Two reward functions (TRL's weighted sum) of which one is signed: with reward_range declared,
    the scheduler hears (sum - lo) / (hi - lo), and nothing is clipped."""
    trainer, _, recorder, reward, _ = _run(world, tmp_path, "random", max_steps=2, extra_rewards=[_signed],
                                           trainer_kwargs=dict(reward_range=(-1.0, 2.0)))  # fmt: skip
    assert trainer.reward_range == RewardRange(-1.0, 2.0)
    updates = [groups for kind, groups in recorder.events if kind == "update"]
    assert len(updates) == 2 == len(reward.calls)
    for groups, (_, _, env_rewards) in zip(updates, reward.calls):
        unit = [r for grp in groups for r in grp.rewards]
        signed = [3.0 * u - 1.0 - e for u, e in zip(unit, env_rewards)]  # u = (env + signed - lo) / (hi - lo)
        assert signed == pytest.approx([1.0 if s > 0 else -1.0 for s in signed], abs=1e-5)
    assert set(_logged(trainer, "sched/reward_clipped_frac")) == {0.0}


@pytest.mark.parametrize(("value", "metric", "share"),
                         [(2.0, "sched/reward_clipped_frac", 1.0), (None, "sched/unscored_frac", 1.0),
                          ("half", "sched/unscored_frac", 0.5)])  # fmt: skip
def test_bad_rewards_never_stop_training(world, tmp_path, caplog, value, metric, share):
    """A reward outside the range is clipped, one nothing scored (None, NaN in TRL) is left out of its
    group: training goes on, a warning says so once, and a metric counts every one."""
    items, policy = world
    scheduler = build_scheduler("random", specs_of(items), seed=0)

    def bad_reward(completions, **_):
        if value == "half":  # the first rollout of every group unscored
            return [None if i % 2 == 0 else 1.0 for i in range(len(completions))]
        return [value] * len(completions)

    trainer = EnvSchedGRPOTrainer(model=policy.model, reward_funcs=[bad_reward], args=_config(tmp_path, max_steps=2),
                                  train_dataset=Dataset.from_list(prompt_records(items, policy.tokenizer)),
                                  processing_class=policy.tokenizer, task_scheduler=scheduler)  # fmt: skip
    with caplog.at_level("WARNING", logger="envsched_lightning.adapters.trl"):
        trainer.train()
    assert trainer.state.global_step == 2
    assert _logged(trainer, metric) == [share, share]
    warned = [r.message for r in caplog.records if r.name == "envsched_lightning.adapters.trl"]
    assert len(warned) == 1 and ("clipped" in warned[0] if value == 2.0 else "no reward" in warned[0])
    if value is None:  # no evidence: nothing reaches the scheduler
        assert scheduler.history.step == 0 and trainer.generations == 0
    elif value == "half":  # each group keeps its scored rollout, with its length
        assert scheduler.history.step == 2
        assert [(g.rewards, len(g.lengths)) for g in trainer.last_groups] == [((1.0,), 1)] * trainer.prompts_per_generation
    else:  # 2.0 clipped to the top of the default range [0, 1]
        assert scheduler.history.step == 2 and trainer.last_groups[0].rewards == (1.0, 1.0)


def test_reward_range_is_settled_when_the_trainer_is_built(world, tmp_path):
    items, policy = world
    records = Dataset.from_list(prompt_records(items, policy.tokenizer))

    def build(specs=None, funcs=2, **kwargs):
        scheduler = build_scheduler("envsched", specs or specs_of(items), seed=0)
        return EnvSchedGRPOTrainer(model=policy.model, reward_funcs=[EnvReward(items), _signed][:funcs],
                                   args=_config(tmp_path, max_steps=1, reward_weights=kwargs.pop("weights", None)),
                                   train_dataset=records, processing_class=policy.tokenizer,
                                   task_scheduler=scheduler, **kwargs)  # fmt: skip

    # by default each reward function is assumed in [0, 1]: the weighted sum's range follows the weights
    assert build(funcs=1).reward_range == RewardRange(0.0, 1.0)
    assert build().reward_range == RewardRange(0.0, 2.0)
    assert build(weights=[1.0, -0.5]).reward_range == RewardRange(-0.5, 1.0)
    assert build(scheduler_reward="env_reward").reward_range == RewardRange(0.0, 1.0)
    assert build(reward_range=[-1, 1]).reward_range == RewardRange(-1.0, 1.0)
    for bad in ((1.0, 1.0), (0.0, float("nan")), (0.0,)):
        with pytest.raises(ValueError, match="reward_range"):
            build(reward_range=bad)
    with pytest.raises(ValueError, match="reward_range"):
        build(weights=[0.0, 0.0])
    with pytest.raises(ValueError, match="scheduler_reward"):
        build(scheduler_reward="nope")
    # specs with nothing but env and task_id: envsched would only see environments, and says so
    with pytest.warns(UserWarning, match="no structure beyond the environment"):
        build(specs=[TaskSpec(s.env, s.task_id) for s in specs_of(items)])
