"""`EnvSchedSampler` against a real verl install: RLHFDataset, StatefulDataLoader, DataProto.

Run by scripts/verl_check.sh in its own environment (verl pins an older transformers); the
batches are built as `RayPPOTrainer.fit` builds them: collate, `DataProto.from_single_dict`, a
``uid`` per prompt, ``repeat(n, interleave=True)``, then ``token_level_scores`` [rollouts, tokens].
test_verl_fit.py runs the sampler inside verl's own ``fit``.
"""

from __future__ import annotations

import uuid

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf
from torchdata.stateful_dataloader import StatefulDataLoader
from verl import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

from envsched_lightning.adapters.mapping import spec_record
from envsched_lightning.adapters.verl import EnvSchedSampler
from envsched_lightning.envs import make_env

N_ROLLOUTS, BATCH, RESPONSE_LEN = 3, 4, 5


def _write_parquet(path, with_ids: bool = True, duplicate: bool = False) -> str:
    """verl's data layout (data_source, prompt, ability, reward_model, extra_info) for one env's tasks."""
    env = make_env("banking", num_tasks=8, seed=0)
    rows = []
    for i, task in enumerate(env.tasks()):
        info = {**spec_record(task.spec), "split": "train", "index": i} if with_ids else {"split": "train"}
        rows.append({"data_source": "banking", "prompt": [dict(m) for m in task.messages], "ability": "tools",
                     "reward_model": {"style": "rule", "ground_truth": ""}, "extra_info": info})  # fmt: skip
    if duplicate:
        rows.append(rows[0])
    rows = [rows[i] for i in np.random.default_rng(5).permutation(len(rows))]  # ids, not positions, matter
    pd.DataFrame(rows).to_parquet(path)
    return str(path)


def _config(tmp_path, **sampler):
    return OmegaConf.create({
        "train_batch_size": BATCH, "dataloader_num_workers": 0, "prompt_key": "prompt",
        "filter_overlong_prompts": False, "cache_dir": str(tmp_path / "cache"),
        "sampler": {"class_path": "pkg://envsched_lightning.adapters.verl", "class_name": "EnvSchedSampler",
                    "scheduler": "envsched", "scheduler_kwargs": {"seed": 0}, **sampler},
    })  # fmt: skip


def _setup(tmp_path, **sampler):
    config = _config(tmp_path, **sampler)
    dataset = RLHFDataset(_write_parquet(tmp_path / "train.parquet"), tokenizer=None, config=config)
    sampler = EnvSchedSampler(data_source=dataset, data_config=config)
    loader = StatefulDataLoader(dataset, batch_size=BATCH, num_workers=0, drop_last=True, collate_fn=collate_fn,
                                sampler=sampler)  # fmt: skip
    return dataset, sampler, loader


def _scored(batch_dict, rewards_of) -> DataProto:
    """What `RayPPOTrainer.fit` holds when the step's rewards are in: one row per rollout."""
    batch = DataProto.from_single_dict(batch_dict)
    batch.non_tensor_batch["uid"] = np.array([str(uuid.uuid4()) for _ in range(len(batch.batch))], dtype=object)
    batch = batch.repeat(repeat_times=N_ROLLOUTS, interleave=True)
    scores = torch.zeros(len(batch.batch), RESPONSE_LEN)
    for r, info in enumerate(batch.non_tensor_batch["extra_info"]):
        scores[r, -1] = rewards_of(info["task_id"], r % N_ROLLOUTS)  # reward on the last response token
    batch.batch["token_level_scores"] = scores
    return batch


def _reward(task_id: str, k: int) -> float:
    return (hash(task_id) % 3 + k) % 2 * 0.5


class Recorder:
    def __init__(self, scheduler) -> None:
        self.events: list[tuple[str, object]] = []
        select, update = scheduler.select, scheduler.update
        scheduler.select = lambda n: self._log("select", select(n))
        scheduler.update = lambda groups: (update(groups), self._log("update", list(groups)))

    def _log(self, kind, value):
        self.events.append((kind, value))
        return value


def test_update_maps_ids_and_scores_to_groups(tmp_path):
    dataset, sampler, loader = _setup(tmp_path)
    recorder = Recorder(sampler.scheduler)
    keys = [(s.env, s.task_id) for s in sampler.scheduler.specs]
    steps = 0
    for batch_dict in loader:  # one epoch: 8 tasks / 4 per batch = 2 steps
        batch = _scored(batch_dict, _reward)
        sampler.update(batch)
        chosen, groups = recorder.events[-2][1], recorder.events[-1][1]
        drawn = [(s, i["task_id"]) for s, i in zip(batch_dict["data_source"], batch_dict["extra_info"])]
        assert drawn == [keys[i] for i in chosen]  # the rows served are the ones chosen, in order
        assert [g.index for g in groups] == chosen
        assert [list(g.rewards) for g in groups] == [[_reward(keys[i][1], k) for k in range(N_ROLLOUTS)]
                                                     for i in chosen]  # fmt: skip
        steps += 1
    assert steps == 2
    assert [kind for kind, _ in recorder.events] == ["select", "update"] * 2
    assert int(sampler.scheduler.history.step) == 2


def test_generator_reads_live_state_at_every_draw(tmp_path):
    dataset, sampler, _ = _setup(tmp_path)
    recorder = Recorder(sampler.scheduler)
    it = iter(sampler)  # verl's __iter__ call at epoch start: nothing is chosen yet
    assert recorder.events == []
    first = [next(it) for _ in range(2)]  # half a batch drawn
    assert [kind for kind, _ in recorder.events] == ["select"]
    rows = sampler._rows
    chosen = recorder.events[0][1]
    assert first == [rows[i] for i in chosen[:2]]
    batch = _scored(collate_fn([dataset[r] for r in first]), lambda t, k: float(k % 2))
    sampler.update(batch)  # feedback mid-epoch: what is left of the old choice is dropped
    nxt = next(it)
    assert [kind for kind, _ in recorder.events] == ["select", "update", "select"]
    assert nxt == rows[recorder.events[-1][1][0]]


def test_duplicate_and_missing_ids_and_bad_rewards_raise(tmp_path):
    config = _config(tmp_path)
    dup = RLHFDataset(_write_parquet(tmp_path / "dup.parquet", duplicate=True), tokenizer=None, config=config)
    with pytest.raises(ValueError, match="unique"):
        EnvSchedSampler(data_source=dup, data_config=config)
    anon = RLHFDataset(_write_parquet(tmp_path / "anon.parquet", with_ids=False), tokenizer=None, config=config)
    with pytest.raises(ValueError, match="never by row position"):
        EnvSchedSampler(data_source=anon, data_config=config)
    with pytest.raises(ValueError, match="dataloader_num_workers"):
        EnvSchedSampler(data_source=dup, data_config=OmegaConf.merge(config, {"dataloader_num_workers": 2}))

    dataset, sampler, loader = _setup(tmp_path)
    batch_dict = next(iter(loader))
    before = sampler.state_dict()
    twice = DataProto.concat([_scored(batch_dict, _reward), _scored(batch_dict, _reward)])  # each task in 2 uids
    with pytest.raises(ValueError, match="two groups"):
        sampler.update(twice)
    with pytest.raises(ValueError, match="non-finite"):
        sampler.update(_scored(batch_dict, lambda t, k: float("nan")))
    after = sampler.state_dict()
    assert after["scheduler"]["history"]["step"] == before["scheduler"]["history"]["step"] == 0  # nothing applied


def test_reward_range_maps_onto_the_unit_interval_and_clips(tmp_path, caplog):
    dataset, sampler, loader = _setup(tmp_path, reward_range=[-1.0, 1.0])
    recorder = Recorder(sampler.scheduler)
    it = iter(loader)
    sampler.update(_scored(next(it), lambda t, k: [-1.0, 0.0, 1.0][k]))
    assert all(list(g.rewards) == [0.0, 0.5, 1.0] for g in recorder.events[-1][1])
    assert sampler.metrics["sched/reward_clipped_frac"] == 0.0
    sampler.update(_scored(next(it), lambda t, k: [-3.0, 0.0, 2.0][k]))  # outside: clipped, counted, warned once
    assert all(list(g.rewards) == [0.0, 0.5, 1.0] for g in recorder.events[-1][1])
    assert sampler.metrics["sched/reward_clipped_frac"] == pytest.approx(2 / 3)
    assert sampler.rewards_clipped == 2 * BATCH and "reward_range [-1, 1]" in caplog.text
    with pytest.raises(ValueError, match="lo < hi"):
        _setup(tmp_path, reward_range=[1.0, 1.0])


def test_checkpoint_round_trip_through_stateful_dataloader(tmp_path):
    _, sampler, loader = _setup(tmp_path)
    it = iter(loader)
    sampler.update(_scored(next(it), _reward))
    saved = loader.state_dict()  # what verl writes to data.pt
    expected = next(it)["index"].tolist()

    _, fresh, fresh_loader = _setup(tmp_path)
    fresh_loader.load_state_dict(saved)
    resumed = next(iter(fresh_loader))["index"].tolist()
    assert resumed == expected  # the restored scheduler chooses what the live one chose
    with pytest.raises(StopIteration):  # and the epoch resumes at its position: one batch was left
        next(iter(fresh_loader))


def test_a_step_reported_twice_counts_once(tmp_path):
    """verl 0.7 calls ``update`` after its checkpoint, CurriculumFeedback before it: the repeat is ignored."""
    _, sampler, loader = _setup(tmp_path)
    batch = _scored(next(iter(loader)), _reward)
    sampler.update(batch)
    state, metrics = sampler.state_dict(), dict(sampler.metrics)
    sampler.update(batch)
    assert _same(sampler.state_dict(), state) and sampler.metrics == metrics
    assert int(sampler.scheduler.history.step) == 1


def test_update_sets_the_steps_sched_metrics(tmp_path):
    _, sampler, loader = _setup(tmp_path)
    recorder = Recorder(sampler.scheduler)
    sampler.update(_scored(next(iter(loader)), lambda t, k: float(t.startswith("b") and k == 0)))
    groups = recorder.events[-1][1]
    m = sampler.metrics
    assert m["sched/env_count/banking"] == BATCH
    assert m["sched/zero_var_frac"] == sum(not g.informative for g in groups) / len(groups)
    assert {"sched/pred_mean", "sched/realised_mean", "sched/zero_var_frac/banking"} <= m.keys()
    assert all(k.startswith("sched/") for k in m)


def _same(a, b) -> bool:
    """Equality for nested state dicts holding arrays and tensors."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray | torch.Tensor):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b
