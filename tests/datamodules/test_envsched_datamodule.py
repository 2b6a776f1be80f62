"""The DataModule's step protocol without a Trainer: split, select/report guard, state round trip."""

from __future__ import annotations

import functools

import pytest

from datamodules.envsched_datamodule import EnvSchedDataModule
from datamodules.task_pool import build_pool, split_held_out
from envsched_lightning.envs import make_env
from envsched_lightning.module import TaskBatch
from envsched_lightning.scheduling import RolloutGroup, build_scheduler


@pytest.fixture(scope="module")
def envs():
    return {n: make_env(n, num_tasks=10, seed=0) for n in ("banking", "calendar")}


def make_dm(envs, name: str = "envsched", **kw) -> EnvSchedDataModule:
    args = dict(batch_size=4, steps_per_epoch=5, eval_per_env=2) | kw
    return EnvSchedDataModule(envs, functools.partial(build_scheduler, name), **args)


def groups_for(batch: TaskBatch, step: int) -> list[RolloutGroup]:
    """Deterministic fake rewards that differ by task and step."""
    return [RolloutGroup(i, tuple(float((i * 7 + step + g) % 3 == 0) for g in range(4))) for i in batch.indices]


def test_held_out_split_is_per_env_deterministic_and_order_free(envs):
    tasks = envs["banking"].tasks()
    train, held = split_held_out(tasks, 3)
    train_r, held_r = split_held_out(list(reversed(tasks)), 3)
    assert len(held) == 3 and {t.spec.key for t in held} == {t.spec.key for t in held_r}
    assert not {t.spec.key for t in train} & {t.spec.key for t in held}
    pool = build_pool(envs, 2)
    assert len(pool.held_out) == 4 and len(pool.train) == 16
    assert {t.spec.env for t, _ in pool.held_out} == {"banking", "calendar"}


def test_eval_only_envs_are_held_out_never_scheduled(envs):
    dm = make_dm(envs, eval_envs={"messaging": make_env("messaging", num_tasks=12, seed=0)}, eval_env_tasks=5)
    held = [t.spec.env for t, _ in dm.pool.held_out]
    assert held.count("messaging") == 5 and held.count("banking") == 2
    assert "messaging" not in {s.env for s in dm.specs}  # the scheduler never sees it
    again = make_dm(envs, eval_envs={"messaging": make_env("messaging", num_tasks=12, seed=0)}, eval_env_tasks=5)
    assert [t.spec.key for t, _ in again.pool.held_out] == [t.spec.key for t, _ in dm.pool.held_out]


def test_every_fetch_asks_the_scheduler_and_every_step_updates_once(envs):
    dm = make_dm(envs)
    calls = []
    update = dm.scheduler.update
    dm.scheduler.update = lambda gs: (calls.append(len(gs)), update(gs))
    for step in range(3):
        batch = dm.next_batch()
        assert len(batch) == 4 and batch.indices == dm.last_decision.indices
        assert all(t.spec == dm.specs[i] for i, t in zip(batch.indices, batch.tasks))
        dm.report(groups_for(batch, step))
    assert calls == [4, 4, 4] and dm.step == 3 and dm.scheduler.history.step == 3


def test_second_report_or_early_fetch_raises(envs):
    dm = make_dm(envs)
    batch = dm.next_batch()
    with pytest.raises(RuntimeError, match="requested before"):
        dm.next_batch()
    with pytest.raises(ValueError, match="scheduled"):
        dm.report(groups_for(batch, 0)[:2])
    dm.report(groups_for(batch, 0))
    with pytest.raises(RuntimeError, match="called twice"):
        dm.report(groups_for(batch, 0))
    assert dm.scheduler.history.step == 1


def test_a_refill_is_one_more_select_and_update_within_the_same_step(envs):
    """Dynamic sampling's refill: the scheduler learns from each round, the GRPO step counts once."""
    dm = make_dm(envs, total_steps=1)
    with pytest.raises(RuntimeError, match="refill"):
        dm.refill(2)  # no step reported yet
    first = dm.next_batch()
    with pytest.raises(RuntimeError, match="refill"):
        dm.refill(2)  # the first round's groups not reported yet
    dm.report(groups_for(first, 0))
    extra = dm.refill(3)
    assert len(extra) == 3 and dm.last_decision.indices == first.indices  # the step's decision is the first round's
    with pytest.raises(ValueError, match="scheduled"):
        dm.report(groups_for(first, 0))  # a refill's report must carry the refill's tasks
    dm.report(groups_for(extra, 0))
    assert dm.step == 1 and dm.scheduler.history.step == 2 and dm.finished()
    assert [d.indices for d, _ in dm.step_rounds] == [first.indices, extra.indices]
    assert [g.index for g in dm.last_groups] == first.indices + extra.indices
    whole = dm.refill(99)
    assert len(whole) == len(dm.pool.train)  # at most the whole pool
    dm.report(groups_for(whole, 1))
    dm.next_batch()
    assert dm.step_rounds == [] and dm.last_groups == []  # a new step starts with no rounds


def test_state_dict_resumes_the_same_schedule(envs):
    a, b = make_dm(envs), make_dm(envs)
    for step in range(3):
        batch = a.next_batch()
        a.report(groups_for(batch, step))
    b.load_state_dict(a.state_dict())
    assert b.step == 3
    for step in range(3, 6):
        ba, bb = a.next_batch(), b.next_batch()
        assert ba.indices == bb.indices
        a.report(groups_for(ba, step))
        b.report(groups_for(bb, step))


@pytest.mark.parametrize("reported", [False, True])
def test_an_abandoned_step_leaves_the_schedule_as_if_it_never_began(envs, reported):
    """A stopped run drops its step after the select, or after the report (refill rounds, the update):
    the scheduler, the step counter and the RNG go back, so the next step selects what it would have."""
    a, b = make_dm(envs, "random"), make_dm(envs, "random")
    for step in range(2):
        for dm in (a, b):
            dm.report(groups_for(dm.next_batch(), step))
    dropped = a.next_batch()
    if reported:
        a.report(groups_for(dropped, 99))
    a.abandon_step()
    assert a.step == 2 and a.scheduler.history.step == 2
    state = a.state_dict()  # no longer inside a step: a checkpoint may be taken
    assert state["step"] == 2
    for step in range(2, 4):
        ba, bb = a.next_batch(), b.next_batch()
        assert ba.indices == bb.indices
        a.report(groups_for(ba, step))
        b.report(groups_for(bb, step))


def test_val_loader_serves_held_out_tasks(envs):
    dm = make_dm(envs, val_batch_size=3)
    batches = list(dm.val_dataloader())
    assert all(isinstance(b, TaskBatch) for b in batches)
    keys = [t.spec.key for b in batches for t in b.tasks]
    assert len(keys) == 4 and not set(keys) & {s.key for s in dm.specs}


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(batch_size=17), "data.batch_size=17 exceeds the training task pool"),
        (dict(eval_per_env=10), "data.eval_per_env=10 leaves no training task in env.banking"),
        (dict(batch_size=0), "data.batch_size must be a positive int"),
        (dict(name="nope"), "scheduler: unknown scheduler 'nope'"),
    ],
)
def test_bad_settings_name_their_key(envs, kw, match):
    with pytest.raises(ValueError, match=match):
        make_dm(envs, **kw)
