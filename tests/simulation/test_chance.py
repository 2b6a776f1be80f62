"""Rewards decided by chance: flaky verifiers and stochastic environments in the simulated worlds,
what they cost a variance-seeking scheduler, and the signals that tell them apart: learning progress,
and whether a task's reward depends on its trajectory."""

from dataclasses import replace

import numpy as np
import pytest

from benchmarks.world_family import main as family
from envsched_lightning.scheduling import RolloutGroup, build_scheduler
from envsched_lightning.scheduling.dependence import DependenceTracker
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
    plain = run_scheduler(world, "envsched", 0, steps=60, progress=False)
    tracked = run_scheduler(world, "envsched", 0, steps=60, setup=lambda s: kept.setdefault("s", s))  # the default
    assert np.mean(tracked.flaky_share[20:]) < np.mean(plain.flaky_share[20:])
    sched = kept["s"]
    assert all("learnability" in row for row in sched.last_decision().rows)  # the decisions log records it
    state = sched.state_dict()
    again = build_scheduler("envsched", world.specs, seed=0)
    again.load_state_dict(state)
    np.testing.assert_array_equal(again.progress.learnability(), sched.progress.learnability())
    old_state = build_scheduler("envsched", world.specs, seed=0, progress=False).state_dict()
    assert old_state["extra"]["progress"] is None  # a checkpoint written with it off (or before it existed) ...
    resumed = build_scheduler("envsched", world.specs, seed=0)
    resumed.load_state_dict(old_state)  # ... resumes with trends judged from here on
    assert not resumed.progress.n.any()


def test_progress_by_environment_discounts_the_coins_environment_not_a_pool_that_learns_slowly():
    rng = np.random.default_rng(0)
    env_ids = np.repeat(np.arange(4), 25)
    slow = ProgressTracker(100, min_picks=4, floor=0.05, env_ids=env_ids)
    pooled = ProgressTracker(100, min_picks=4, floor=0.05)
    coins = ProgressTracker(100, min_picks=4, floor=0.05, env_ids=env_ids)
    for pick in range(8):  # slow: every task creeps up 0.01 a pick (flat to the eye); coins: environment 0's
        groups = [group(i, 0.4 + 0.01 * pick, rng) for i in range(100)]
        slow.observe(groups)
        pooled.observe(groups)
        coins.observe([group(i, 0.5 if i < 25 else 0.2 + 0.1 * pick, rng) for i in range(100)])
    assert pooled.null_share() > 0.8 and pooled.learnability().mean() < 0.55  # pooled, a slow pool looks like coins
    # by environment, only as far as sampling noise makes an environment look flatter than the least flat
    assert slow.learnability().mean() > 0.7
    factor = coins.learnability()
    assert factor[:25].mean() < 0.4 and factor[25:].mean() > 0.95


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


def _length_reward_correlation(world, tasks, seed=0, picks=40):
    """Mean correlation of reward and trajectory length within the groups of `tasks` whose rewards vary."""
    learner = SimLearner(world, seed=seed)
    corr = [np.corrcoef(g.rewards, g.lengths)[0, 1] for _ in range(picks) for g in learner.rollout(tasks.tolist())
            if g.std > 0 and np.std(g.lengths) > 0]  # fmt: skip
    return float(np.mean(corr))


def test_a_judges_coin_leaves_the_trajectory_to_the_policy():
    """Chance within the episode (the default: a stochastic simulated user) moves the trajectory with
    the outcome; a judge's coin (`flaky_judge`) is cast after it, so a coin-flip task's trajectory
    length no longer goes with its reward, while a task the policy decides keeps that link."""
    episode, judged = make_world(FLAKY), make_world(replace(FLAKY, flaky_judge=True))
    coins = np.flatnonzero(episode.flaky[episode.train_idx])[:16]
    p = SimLearner(judged, seed=0).pass_rate(judged.train_idx)
    policy = np.flatnonzero(~judged.flaky[judged.train_idx] & (judged.chance[judged.train_idx] == 0) & (abs(p - 0.5) < 0.3))
    assert policy.size >= 8
    assert _length_reward_correlation(episode, coins) < -0.2  # the trajectory follows the coin
    assert abs(_length_reward_correlation(judged, coins)) < 0.1
    assert _length_reward_correlation(judged, policy) < -0.2
    np.testing.assert_array_equal(judged.flaky_p, episode.flaky_p)  # the same coins, cast at another time


def lengths_group(i: int, p: float, rng: np.random.Generator, depends: bool, g: int = 8) -> RolloutGroup:
    """A group whose failures take a turn longer when the policy decides the reward, or whose
    lengths ignore a coin's reward."""
    rewards = (rng.random(g) < p).astype(float)
    failed = 1.0 - (rewards if depends else (rng.random(g) < p).astype(float))
    return RolloutGroup(i, rewards.tolist(), (3.0 + failed + rng.integers(0, 2, g)).tolist())


def test_dependence_discounts_a_task_whose_reward_ignores_its_trajectory():
    rng = np.random.default_rng(0)
    tracker = DependenceTracker(100, min_groups=2, floor=0.05)
    for _ in range(4):  # tasks 0-59: failures run longer; 60-99: the reward is a coin the lengths ignore
        tracker.observe([lengths_group(i, 0.5, rng, depends=i < 60) for i in range(100)])
    factor = tracker.learnability()  # 40% of the pool independent: a coin is discounted by 40% at most
    assert factor[:60].mean() > 0.95 and factor[60:].mean() < 0.8
    assert np.median(tracker.z_score()[60:]) < 1.0 < np.median(tracker.z_score()[:60])
    mostly_coins = DependenceTracker(100, min_groups=2, floor=0.05)
    for _ in range(4):
        mostly_coins.observe([lengths_group(i, 0.5, rng, depends=i < 10) for i in range(100)])
    factor = mostly_coins.learnability()  # where independence is the rule, a coin keeps about half
    assert factor[:10].mean() > 0.95 and factor[10:].mean() < 0.6
    quiet = DependenceTracker(3)
    quiet.observe([RolloutGroup(0, [1.0, 0.0] * 4), RolloutGroup(1, [1.0] * 8, [3.0] * 8),
                   RolloutGroup(2, [1.0, 0.0] * 4, [2.0] * 8)])  # no lengths, constant rewards, constant lengths
    assert (quiet.n == 0).all() and (quiet.learnability() == 1.0).all()  # no evidence: no verdict
    with pytest.raises(ValueError, match="min_groups must be >= 1"):
        DependenceTracker(3, min_groups=0)


def test_envsched_with_dependence_spends_less_on_judged_coins_and_resumes_its_state():
    world = make_world(replace(FLAKY, flaky_judge=True))
    kept = {}
    plain = run_scheduler(world, "envsched", 0, steps=60, progress=False)  # dependence alone, against neither
    tracked = run_scheduler(world, "envsched", 0, steps=60, setup=lambda s: kept.setdefault("s", s), dependence=True,
                            progress=False)  # fmt: skip
    assert np.mean(tracked.flaky_share[20:]) < 0.7 * np.mean(plain.flaky_share[20:])
    sched = kept["s"]
    assert all("learnability" in row for row in sched.last_decision().rows)
    again = build_scheduler("envsched", world.specs, seed=0, dependence=True, progress=False)
    again.load_state_dict(sched.state_dict())
    np.testing.assert_array_equal(again.dependence.learnability(), sched.dependence.learnability())
    assert again.select(8) == sched.select(8)
    without = build_scheduler("envsched", world.specs, seed=0).state_dict()
    with pytest.raises(ValueError, match="no dependence state.*scheduler.dependence=false"):
        build_scheduler("envsched", world.specs, seed=0, dependence=True).load_state_dict(without)
