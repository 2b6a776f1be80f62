"""Each baseline does what its paper says, on hand-made histories."""

import numpy as np

from envsched_lightning.scheduling import RolloutGroup, TaskSpec, build_scheduler


def specs(n=12, envs=1):
    return [TaskSpec(env=f"e{i % envs}", task_id=f"t{i}") for i in range(n)]


def group(i, passes, g=8):
    return RolloutGroup(i, [1.0] * passes + [0.0] * (g - passes))


def test_mopps_prefers_half_solved_task():
    sched = build_scheduler("mopps", specs(3), seed=0, pool_factor=8)
    for _ in range(5):
        sched.update([group(0, 0), group(1, 4), group(2, 8)])
    picks = [sched.select(1)[0] for _ in range(50)]
    assert picks.count(1) > 40


def test_mopps_decays_by_step_or_by_observation_and_can_sample_every_task():
    by_step = build_scheduler("mopps", specs(4), seed=0, decay=0.5)
    by_obs = build_scheduler("mopps", specs(4), seed=0, decay=0.5, decay_mode="observation", pool_factor=0)
    for sched in (by_step, by_obs):
        sched.update([group(0, 8)])  # task 0: 8 of 8 passed
        sched.update([group(1, 0)])  # then a step that observes only task 1
    # per step: task 0's evidence halves when task 1 is observed; per observation it stays put
    assert by_step.alpha[0] == 0.5 * (0.5 * 1.0 + 0.5 + 8.0) + 0.5 and by_obs.alpha[0] == 0.5 * 1.0 + 0.5 + 8.0
    assert by_obs.alpha[3] == by_obs.beta[3] == 1.0  # never observed: the prior, untouched
    assert by_obs._priorities(1)["eligible"].all() and by_step._priorities(1)["eligible"].sum() == 4  # 8 x 1 >= 4
    assert build_scheduler("mopps", specs(40), pool_factor=8)._priorities(1)["eligible"].sum() == 8
    import pytest

    with pytest.raises(ValueError, match="decay_mode must be 'step' or 'observation'"):
        build_scheduler("mopps", specs(4), decay_mode="task")


def test_greso_skips_task_after_repeated_all_failed_groups():
    sched = build_scheduler("greso", specs(10), seed=0)
    for _ in range(6):
        sched.update([group(0, 0)] + [group(i, 4) for i in range(1, 10)])
    assert sched.skip_probability()[0] > 0.9
    assert sched.skip_probability()[1] == 0.0
    picks = [sched.select(3) for _ in range(40)]
    assert sum(0 in p for p in picks) < 6  # uniform would pick it in ~12 of 40


def test_greso_skip_probability_follows_the_streak_that_runs():
    """1 - max(p ** streak, min_explore) for the running streak (an all-solved one first), 0 without."""
    sched = build_scheduler("greso", specs(400), seed=0)
    rng = np.random.default_rng(0)
    sched.streak_easy = rng.integers(0, 4, 400) * (rng.random(400) < 0.3)
    sched.streak_hard = rng.integers(0, 5, 400) * (rng.random(400) < 0.3)
    sched.p = {"easy": 0.37, "hard": 0.61}
    want = [1.0 - max(0.37 ** e, 0.01) if e else 1.0 - max(0.61 ** h, 0.01) if h else 0.0
            for e, h in zip(sched.streak_easy.tolist(), sched.streak_hard.tolist())]  # fmt: skip
    np.testing.assert_allclose(sched.skip_probability(), want, rtol=0, atol=1e-15)


def test_plr_replays_high_variance_tasks_once_all_seen():
    sched = build_scheduler("plr", specs(10), seed=0)
    sched.update([group(i, 4 if i == 3 else 0) for i in range(10)])
    picks = [sched.select(1)[0] for _ in range(40)]
    assert picks.count(3) > 30


def test_sec_favours_the_environment_with_learning_gain():
    sched = build_scheduler("sec", specs(40, envs=2), seed=0, tau=0.1)
    for _ in range(3):
        sched.update([group(i, 4) for i in range(0, 40, 2)] + [group(i, 8) for i in range(1, 40, 2)])
    envs = [sched.specs[i].env for _ in range(10) for i in sched.select(8)]
    assert envs.count("e0") > 0.8 * len(envs)


def test_random_is_uniform():
    sched = build_scheduler("random", specs(10), seed=0)
    counts = np.bincount([i for _ in range(2000) for i in sched.select(3)], minlength=10)
    assert counts.min() > 500 and counts.max() < 700
