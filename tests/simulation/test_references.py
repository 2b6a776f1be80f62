"""The simulator's reference rows: the oracle ceiling above uniform, the informed rows above envsched."""

import numpy as np
import pytest

from envsched_lightning.scheduling import RolloutGroup, build_scheduler
from envsched_lightning.simulation import (make_world, run_class_informed, run_dynamic_sampling, run_informed, run_oracle,
                                          run_scheduler)
from envsched_lightning.simulation.learner import SimLearner
from envsched_lightning.simulation.report import summarize
from envsched_lightning.simulation.world import SimWorldConfig


def test_oracle_ceiling_beats_uniform_and_wastes_fewer_groups():
    world = make_world("default")
    oracle = run_oracle(world, seed=0, steps=30)
    uniform = run_scheduler(world, "random", 0, steps=30)
    assert len(oracle.scores) == 31 and oracle.rollouts[-1] == uniform.rollouts[-1]  # same budget
    assert oracle.scores[30] > uniform.scores[30] + 0.02
    assert np.mean(oracle.zero_var) < 0.5 * np.mean(uniform.zero_var)
    assert np.mean(oracle.group_std) > 2 * np.mean(uniform.group_std)  # and its groups spread more


def test_the_reported_group_std_is_the_reward_spread_each_step_trained_on():
    """`group_std` (and the report's column) is the mean within-group reward std of the groups a
    step trained on: dynamic sampling's discarded groups do not count, so its steps never show 0."""
    world = make_world("default")
    seen: list[float] = []

    class Recording(SimLearner):
        def learn(self, groups, batch_size=None):
            seen.append(float(np.mean([np.std(g.rewards) for g in groups])))
            super().learn(groups, batch_size)

    run = run_scheduler(world, "envsched", 0, steps=4, learner=Recording(world, seed=0))
    np.testing.assert_allclose(run.group_std, seen)
    assert summarize({"random": [run]}, horizon=4)[0]["group_std"] == pytest.approx(np.mean(seen))
    dapo = run_dynamic_sampling(world, 0, steps=4)
    assert len(dapo.group_std) == 4 and min(dapo.group_std) > 0.1


def test_class_informed_reference_picks_better_untried_tasks_than_envsched_can_at_the_start():
    """Before any rollout every task is untried: envsched has only its prior, the class-informed
    reference has each class's true value, so its first batches waste far fewer groups."""
    world = make_world("default")
    informed = run_class_informed(world, seed=0, steps=3)
    blind = run_scheduler(world, "envsched", 0, steps=3)
    assert informed.name == "class_informed" and informed.rollouts[-1] == blind.rollouts[-1]
    assert np.mean(informed.zero_var) < np.mean(blind.zero_var) - 0.2


def test_told_tried_tasks_true_values_too_the_informed_reference_wastes_fewer_groups():
    """Knowing every tried task's true current value on top of the untried classes' means the
    re-picks stop landing on tasks that saturated or still fail: fewer flat groups, same budget."""
    world = make_world("default")
    classes_only = run_class_informed(world, seed=0, steps=10)
    both = run_informed(world, seed=0, steps=10, untried="class", tried="now")
    assert both.name == "informed_untried_class_tried_now" and both.rollouts == classes_only.rollouts
    assert np.mean(both.zero_var) < np.mean(classes_only.zero_var) - 0.05


@pytest.mark.parametrize("reward_noise", [0.0, 0.1])
def test_told_values_are_what_the_learners_groups_show_on_average(reward_noise):
    """The informed rows tell envsched values on its own scale: the mean of min(1, 2 x reward std)
    over real groups of the simulated learner, binary and partial-credit tasks, with and without
    a noisy verifier (2 sqrt(p (1 - p)) would be twice too high for tasks near 0 or 1). The
    oracle ranks by each task's true reward variance, a quarter of p (1 - p) for a task scored
    as the share of 4 checks."""
    world = make_world(SimWorldConfig(num_envs=4, tasks_per_env=(40, 60), continuous_env_share=0.5,
                                      difficulty=(-1.0, 2.0), reward_noise=reward_noise, seed=3))
    learner = SimLearner(world, seed=0)
    rng = np.random.default_rng(0)
    tasks = np.concatenate([rng.choice(np.flatnonzero(world.continuous[world.train_idx] == c), 12, replace=False)
                            for c in (False, True)])
    told = learner.informativeness_at(learner.pass_rate(world.train_idx))[tasks]
    groups = [learner.rollout(tasks.tolist()) for _ in range(600)]
    seen = np.mean([[min(1.0, 2 * g.std) for g in step] for step in groups], 0)
    assert np.abs(seen - told).max() < 0.05  # 600 groups each: sampling error about 0.015
    if reward_noise == 0:
        # the oracle's ranking value: the variance of one rollout's reward
        rewards = np.array([[g.rewards for g in step] for step in groups])  # [600, tasks, G]
        variance = learner.reward_variance(learner.pass_rate(world.train_idx))[tasks]
        np.testing.assert_allclose(rewards.transpose(1, 0, 2).reshape(len(tasks), -1).var(1), variance, atol=0.01)
        # the infinite-group formula overstates binary tasks near 0 or 1
        p = learner.pass_rate(world.train_idx)[tasks]
        edge = np.minimum(p, 1 - p)
        tails = (edge > 0.005) & (edge < 0.15) & ~world.continuous[world.train_idx][tasks]
        assert tails.sum() >= 3
        assert (np.minimum(1, 2 * np.sqrt(p * (1 - p)))[tails] > 1.5 * seen[tails]).all()


@pytest.mark.parametrize("score_over", ["envs", "tasks"])
def test_held_out_gain_is_what_one_group_adds_to_the_held_out_score(score_over):
    """`heldout_gain` (what the `gain` reference weighs predictions by) is the held-out score one
    unit of a task's group std adds: the finite difference of a real `learn` step, and 0 for a task
    whose skills no held-out task is limited by."""
    world = make_world(SimWorldConfig(num_envs=3, tasks_per_env=(40, 60), score_over=score_over, seed=4))
    learner = SimLearner(world, seed=0)
    learner.level += np.random.default_rng(0).normal(0.0, 0.5, learner.level.shape)
    gain = learner.heldout_gain()
    assert gain.shape == (len(world.specs),) and (gain >= 0).all() and gain.max() > 0
    for i in [int(np.argmax(gain)), int(np.argmin(gain)), 7]:
        probe = SimLearner(world, seed=0)
        probe.level = learner.level.copy()
        group = RolloutGroup(i, [0.0, 1.0] * 4)  # reward std 0.5
        before = probe.heldout_score()
        probe.learn([group], batch_size=10_000)  # a tiny step: first order holds
        assert (probe.heldout_score() - before) / (0.5 / 10_000) == pytest.approx(gain[i], rel=1e-3, abs=1e-9)


def test_told_the_held_out_gain_too_the_reference_learns_faster_than_told_the_values_alone():
    """On `skewed` the true class means and tried tasks' values leave envsched far from the
    oracle; weighing them by each task's held-out gain closes much of that (the docs' table)."""
    world = make_world("skewed")
    values = run_informed(world, seed=0, steps=20, untried="class", tried="now")
    with_gain = run_informed(world, seed=0, steps=20, untried="class", tried="now", gain=True)
    assert with_gain.name == "informed_untried_class_tried_now_gain" and with_gain.rollouts == values.rollouts
    assert with_gain.scores[20] > values.scores[20] + 0.01


def test_informed_reference_refuses_unknown_knowledge():
    with pytest.raises(ValueError, match="tried in"):
        run_informed(make_world("default"), seed=0, steps=1, tried="future")


def test_dynamic_sampling_runs_over_any_scheduler_and_pays_for_every_round(monkeypatch):
    """DAPO over envsched: the scheduler hears every round (also the dropped groups), each step
    trains on at most a batch of informative groups, and the rollouts count every round."""
    from envsched_lightning.simulation import loop

    world = make_world("default")
    heard: list[int] = []
    trained: list[list] = []

    def counting(*args, **kw):
        sched = build_scheduler(*args, **kw)
        update = sched.update
        sched.update = lambda gs: (heard.append(len(gs)), update(gs))
        return sched

    def recording(self, groups, batch_size=None):
        trained.append(list(groups))
        return learn(self, groups, batch_size)

    learn = SimLearner.learn
    monkeypatch.setattr(loop, "build_scheduler", counting)
    monkeypatch.setattr(SimLearner, "learn", recording)
    run = loop.run_dynamic_sampling(world, 0, steps=5, scheduler="envsched", progress=True)
    assert run.name == "dapo_dynamic_sampling(envsched)" and len(trained) == 5
    assert all(len(g) <= 32 and all(x.informative for x in g) for g in trained)
    assert len(heard) > 5 and set(heard) == {32}  # refills happened, each a whole batch the scheduler heard
    assert run.rollouts[-1] == len(heard) * 32 * 8  # every round paid for
    assert run_dynamic_sampling(world, 0, steps=2).name == "dapo_dynamic_sampling"  # uniform by default


def test_the_family_benchmark_compares_dynamic_sampling_at_equal_rollouts():
    from benchmarks.world_family import main, on_rollout_axis
    from envsched_lightning.simulation import RunResult

    res = on_rollout_axis(RunResult("x", 0, scores=[0.0, 0.4, 0.8], rollouts=[2, 4]), 4, 1)
    assert res.scores == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])  # a step that cost two is two steps on the rollout axis
    out = main(["--worlds", "1", "--seeds", "1", "--steps", "6", "--no-named",
                "--labels", "random", "dapo", "dapo scheduler=envsched", "envsched"])  # fmt: skip
    rows = {r["scheduler"]: r for r in out["family"]}
    assert set(rows) == {"random", "dapo", "dapo scheduler=envsched", "envsched"}
    assert rows["dapo"]["below_best"] == "-" and rows["envsched"]["below_best"] in ("0/1", "1/1")
