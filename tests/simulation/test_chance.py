"""Rewards decided by chance: flaky verifiers and stochastic environments in the simulated worlds,
what they cost a variance-seeking scheduler, and the learning-progress signal that tells them apart."""

import numpy as np
import pytest

from benchmarks.world_family import main as family
from envsched_lightning.scheduling import RolloutGroup, build_scheduler
from envsched_lightning.scheduling.progress import ProgressTracker
from envsched_lightning.simulation import SimLearner, SimWorldConfig, make_world, run_noise_told, run_oracle, run_scheduler

FLAKY = SimWorldConfig(num_envs=4, tasks_per_env=(60, 80), heldout_per_env=10, flaky_envs=0.5, flaky_tasks=0.5,
                       stochastic_envs=0.25, seed=3)  # fmt: skip


def test_a_flaky_task_rewards_by_its_coin_whatever_the_policy_learns():
    world = make_world(FLAKY)
    learner = SimLearner(world, seed=0)
    flaky = np.flatnonzero(world.flaky[world.train_idx])
    assert len(np.unique(world.env_of[world.train_idx][flaky])) == 2  # half the environments, about half their tasks
    before = learner.pass_rate(world.train_idx[flaky]).copy()
    for _ in range(20):  # train on the flaky tasks only: their groups vary, the policy learns nothing from them
        groups = learner.rollout(flaky[:32].tolist())
        assert np.mean([g.std for g in groups]) > 0.2
        learner.learn(groups)
    np.testing.assert_array_equal(learner.pass_rate(world.train_idx[flaky]), before)
    assert np.array_equal(learner.level, world.skill_init)
    rewards = np.concatenate([learner.rollout([int(i)])[0].rewards for i in flaky[:5] for _ in range(200)])
    assert rewards.mean() == pytest.approx(np.nanmean(world.flaky_p[world.train_idx][flaky[:5]]), abs=0.03)
    assert (learner.learnable_variance()[flaky] == 0).all()  # what the oracle ranks by: none of it learnable


def test_a_stochastic_environment_leaves_part_of_each_reward_to_chance():
    world = make_world(FLAKY)
    noisy = world.chance[world.train_idx] > 0
    assert noisy.any() and (world.chance[world.train_idx][noisy] >= 0.2).all()
    learner = SimLearner(world, seed=0)
    tasks = world.train_idx[noisy]
    c = world.chance[tasks]
    np.testing.assert_allclose(learner.pass_rate(tasks), (1 - c) * learner.policy_pass_rate(tasks) + c / 2)


def test_the_oracle_never_pays_for_a_coin():
    res = run_oracle(make_world(FLAKY), seed=0, steps=10)
    assert max(res.flaky_share) == 0.0


def group(i: int, p: float, rng: np.random.Generator, g: int = 8) -> RolloutGroup:
    return RolloutGroup(i, (rng.random(g) < p).astype(float).tolist())


def test_progress_discounts_a_task_that_only_scatters_and_keeps_one_that_learns():
    rng = np.random.default_rng(0)
    tracker = ProgressTracker(100, min_picks=4, floor=0.05)
    for pick in range(8):  # tasks 0-49 climb 0.2 -> 0.9 as they are trained; 50-99 are coins
        tracker.observe([group(i, 0.2 + 0.1 * pick, rng) for i in range(50)] + [group(i, 0.5, rng) for i in range(50, 100)])
    factor = tracker.learnability()
    assert 0.3 < tracker.null_share() < 0.8  # about half the pool is flat: a flat trend is discounted by half at most
    assert factor[:50].mean() > 0.95 and factor[50:].mean() < 0.8
    mostly_coins = ProgressTracker(100, min_picks=4, floor=0.05)
    for pick in range(8):  # where flat tasks are the rule, a flat one is discounted nearly to the floor
        mostly_coins.observe([group(i, 0.2 + 0.1 * pick, rng) for i in range(10)] + [group(i, 0.5, rng) for i in range(10, 100)])
    factor = mostly_coins.learnability()
    assert factor[:10].mean() > 0.95 and factor[10:].mean() < 0.45
    fresh = ProgressTracker(3)
    fresh.observe([group(0, 0.5, rng)] * 3)
    assert (fresh.learnability() == 1.0).all()  # under min_picks: no verdict either way
    everyone_slow = ProgressTracker(50, floor=0.05)
    for _ in range(8):  # nobody moves: a flat trend is no evidence of a coin against the rest of the pool
        everyone_slow.observe([group(i, 0.5, rng) for i in range(50)])
    assert everyone_slow.null_share() > 0.9
    with pytest.raises(ValueError, match="min_picks must be >= 3"):
        ProgressTracker(3, min_picks=2)


def test_envsched_with_progress_spends_less_on_coins_and_resumes_its_state():
    world = make_world(FLAKY)
    kept = {}
    plain = run_scheduler(world, "envsched", 0, steps=60)
    tracked = run_scheduler(world, "envsched", 0, steps=60, setup=lambda s: kept.setdefault("s", s), progress=True,
                            progress_floor=0.05)  # fmt: skip
    assert np.mean(tracked.flaky_share[20:]) < np.mean(plain.flaky_share[20:])
    sched = kept["s"]
    assert all("learnability" in row for row in sched.last_decision().rows)  # the decisions log records it
    state = sched.state_dict()
    again = build_scheduler("envsched", world.specs, seed=0, progress=True, progress_floor=0.05)
    again.load_state_dict(state)
    np.testing.assert_array_equal(again.progress.learnability(), sched.progress.learnability())
    old = build_scheduler("envsched", world.specs, seed=0)
    old_state = old.state_dict()
    old_state["extra"].pop("progress")  # a checkpoint from before the option existed
    with pytest.raises(ValueError, match="no progress state.*scheduler.progress=false"):
        build_scheduler("envsched", world.specs, seed=0, progress=True).load_state_dict(old_state)
    old.load_state_dict(old_state)  # and without the option it still loads


def test_the_family_benchmark_reports_what_chance_costs(capsys):
    out = family(["--worlds", "2", "--seeds", "1", "--steps", "10", "--no-named", "--chance",
                  "--labels", "random", "envsched", "oracle"])  # fmt: skip
    rows = {r["scheduler"]: r for r in out["family"]}
    assert rows["oracle"]["flaky_rollouts"] == 0.0 and rows["random"]["flaky_rollouts"] > 0.0
    assert {"zero_var", "gain/1k_rollouts"} <= set(rows["envsched"])
    assert "with flaky verifiers and stochastic environments" in capsys.readouterr().out


def test_told_the_reward_noise_envsched_stops_paying_for_coins():
    """The `noise_told` reference (each prediction times the share of the reward the policy
    decides): what perfect noise detection would buy, so its coin share falls to what coverage
    alone still draws (0.35 -> 0.01 here)."""
    world = make_world(FLAKY)
    plain = run_scheduler(world, "envsched", 0, steps=60)
    told = run_noise_told(world, 0, steps=60)
    assert told.name == "noise_told" and len(told.scores) == 61
    assert np.mean(told.flaky_share[20:]) < 0.2 * np.mean(plain.flaky_share[20:])
