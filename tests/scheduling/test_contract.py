"""The contract every registered scheduler keeps (loops over the registry, so new ones are covered)."""

import copy
import math
import pickle

import numpy as np
import pytest
import torch

from envsched_lightning.scheduling import RolloutGroup, TaskSpec, build_scheduler, scheduler_names


def make_specs(n_envs: int = 3, per_env: int = 20) -> list[TaskSpec]:
    specs = []
    for e in range(n_envs):
        for t in range(per_env):
            tools = (f"e{e}.tool{t % 4}", f"e{e}.tool{(t + 1) % 4}")
            specs.append(TaskSpec(env=f"env{e}", task_id=f"t{t}", tools=tools, state_keys=(f"tab{t % 2}",),
                                  verifier="state_match", features={"n_calls": float(1 + t % 3)}))
    return specs


def fake_groups(indices, step, g=4):
    rng = np.random.default_rng(1000 + step)
    return [RolloutGroup(i, (rng.random(g) < (i % 5) / 4).astype(float).tolist()) for i in indices]


def drive(sched, steps, batch=6, start=0):
    out = []
    for s in range(start, start + steps):
        idx = sched.select(batch)
        out.append(idx)
        sched.update(fake_groups(idx, s))
    return out


NAMES = scheduler_names()


def same_state(a, b) -> bool:
    """Deep equality over nested dicts/lists of numpy arrays, tensors and scalars."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_state(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_state(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def test_registry_has_the_baselines():
    assert {"random", "plr", "mopps", "greso", "sec"} <= set(NAMES)


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError) as err:
        build_scheduler("nope", make_specs())
    for name in NAMES:
        assert name in str(err.value)


@pytest.mark.parametrize("name", NAMES)
def test_select_distinct_and_exact_size(name):
    specs = make_specs()
    sched = build_scheduler(name, specs, seed=3)
    for batch in drive(sched, 8, batch=7):
        assert len(batch) == 7 and len(set(batch)) == 7
        assert all(isinstance(i, int) and 0 <= i < len(specs) for i in batch)
    assert sorted(sched.select(len(specs))) == list(range(len(specs)))


@pytest.mark.parametrize("name", NAMES)
def test_batch_larger_than_pool_raises(name):
    sched = build_scheduler(name, make_specs(1, 5))
    with pytest.raises(ValueError, match="exceeds"):
        sched.select(6)
    with pytest.raises(ValueError):
        sched.select(0)


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_for_a_seed(name):
    a = drive(build_scheduler(name, make_specs(), seed=7), 6)
    b = drive(build_scheduler(name, make_specs(), seed=7), 6)
    assert a == b


@pytest.mark.parametrize("name", NAMES)
def test_state_round_trip_resumes_exactly(name):
    specs = make_specs()
    full = build_scheduler(name, specs, seed=5)
    drive(full, 4)
    state = pickle.loads(pickle.dumps(full.state_dict()))  # what a checkpoint does
    rest = drive(full, 5, start=4)
    resumed = build_scheduler(name, specs, seed=99)  # a different seed: the state must carry everything
    resumed.load_state_dict(state)
    assert drive(resumed, 5, start=4) == rest


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "bad, match",
    [
        (RolloutGroup(10_000, [1.0]), "out of range"),
        (RolloutGroup(0, []), "empty"),
        (RolloutGroup(0, [0.5, math.nan]), "non-finite"),
        (RolloutGroup(0, [math.inf]), "non-finite"),
        (RolloutGroup(-1, [1.0]), "out of range"),
    ],
)
def test_bad_groups_rejected_without_state_change(name, bad, match):
    sched = build_scheduler(name, make_specs(), seed=1)
    drive(sched, 2)
    before = copy.deepcopy(sched.state_dict())
    good = RolloutGroup(1, [1.0, 0.0])
    with pytest.raises(ValueError, match=match) as err:
        sched.update([good, bad])
    assert "group 1" in str(err.value)
    assert same_state(sched.state_dict(), before)


def test_state_refuses_another_task_pool():
    a = build_scheduler("random", make_specs(3, 20))
    b = build_scheduler("random", make_specs(3, 21))
    with pytest.raises(ValueError, match="different task pool"):
        b.load_state_dict(a.state_dict())


def test_continuous_rewards_accepted():
    sched = build_scheduler("random", make_specs())
    sched.update([RolloutGroup(0, [0.25, 0.75, 0.5])])
    assert sched.history.count[0] == 1 and abs(sched.history.last_std[0] - 0.2041) < 1e-3
