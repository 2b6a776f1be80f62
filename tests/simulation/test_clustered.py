"""The third world mechanism: near-copies that teach less together, environments that interfere and
forget, and rollouts whose cost in tokens differs by task and environment."""

from dataclasses import replace

import numpy as np
import pytest

from benchmarks.world_family import main as family
from envsched_lightning.scheduling import RolloutGroup
from envsched_lightning.simulation import SimLearner, SimWorldConfig
from envsched_lightning.simulation.clustered import (
    CLUSTERED_RANGES,
    ClusteredWorldConfig,
    make_clustered_world,
)
from envsched_lightning.simulation.family import build_world, make_world_family
from envsched_lightning.simulation.loop import oracle_batch

BASE = SimWorldConfig(num_envs=3, tasks_per_env=(40, 60), heldout_per_env=8, skills_per_env=2, patterns_per_env=2,
                      tasks_per_template=10, seed=5)  # fmt: skip
CFG = ClusteredWorldConfig(base=BASE, copy_share=0.4, cluster_size=(20, 30), copy_decay=0.25, hurt_envs=0.34,
                           hurt_strength=(0.8, 0.8), help_strength=0.0, forgetting=0.0)  # fmt: skip
SPREAD = [0.0, 1.0] * 4  # a group with reward std 0.5


def groups_for(world, tasks) -> list[RolloutGroup]:
    """Groups with equal spread for these tasks (indices into `world.train_idx`)."""
    return [RolloutGroup(int(i), SPREAD) for i in tasks]


def spec_positions(world, where) -> np.ndarray:
    return np.flatnonzero(where[world.train_idx])


def test_near_copies_share_progress_and_the_kth_copy_in_a_batch_teaches_less():
    world = make_clustered_world(CFG)
    copies = world.cluster[world.train_idx]
    c = np.bincount(copies[copies >= 0]).argmax()
    first, second, third = spec_positions(world, world.cluster == c)[:3]
    assert world.bonus_of[world.train_idx[first]] == world.bonus_of[world.train_idx[third]]  # one progress for all
    assert (world.cluster[world.heldout_idx] == -1).all()  # a held-out copy learns on its own

    together = SimLearner(world, seed=0)
    together.learn(groups_for(world, [first, second, third]))
    alone = SimLearner(world, seed=0)
    alone.learn(groups_for(world, [first]), batch_size=3)
    bonus = world.bonus_of[world.train_idx[first]]
    # three copies in one batch: 1 + 0.25 + 0.25^2 of one copy's step, not 3
    np.testing.assert_allclose(together.task_bonus[bonus], alone.task_bonus[bonus] * (1 + 0.25 + 0.0625))
    p = together.policy_pass_rate(world.train_idx[[first, third]])
    q = SimLearner(world, seed=0).policy_pass_rate(world.train_idx[[first, third]])
    assert (p > q).all()  # the third copy moved although only the first three were trained


def test_training_a_hurting_environment_lowers_its_victims_held_out_score():
    world = make_clustered_world(CFG)
    hurter = int(np.flatnonzero((world.interference < 0).any(1))[0])
    victims = np.flatnonzero(world.interference[hurter] < 0)
    mine = spec_positions(world, world.env_of == hurter)[:8]

    def victims_score(w) -> float:
        learner = SimLearner(w, seed=0)
        for _ in range(5):
            learner.learn(groups_for(w, mine))
        held = w.heldout_idx[np.isin(w.env_of[w.heldout_idx], victims)]
        return float(learner.policy_pass_rate(held).mean()), float(SimLearner(w, seed=0).policy_pass_rate(held).mean())

    hurt, before = victims_score(world)
    assert hurt < before - 0.01
    calm = make_clustered_world(CFG)
    calm.interference[:] = 0.0
    helped, _ = victims_score(calm)
    assert helped >= before  # without interference only the shared execution patterns reach them


def test_an_environment_absent_from_a_step_forgets_a_share_of_its_progress():
    world = make_clustered_world(replace(CFG, hurt_envs=0.0, forgetting=0.5))
    learner = SimLearner(world, seed=0)
    learner.learn(groups_for(world, spec_positions(world, world.env_of == 0)[:8]))
    skills = world.private_skills[0]
    gained = learner.level[skills] - world.skill_init[skills]
    assert (gained >= 0).all() and gained.sum() > 0
    learner.learn(groups_for(world, spec_positions(world, world.env_of == 1)[:8]))
    np.testing.assert_allclose(learner.level[skills] - world.skill_init[skills], 0.5 * gained)


def test_rollouts_report_their_turns_and_the_learner_counts_tokens():
    world = make_clustered_world(CFG)
    learner = SimLearner(world, seed=0)
    picked = list(range(0, len(world.specs), 7))
    groups = learner.rollout(picked)
    expected = sum(sum(g.lengths) * world.tokens_per_turn[world.env_of[world.train_idx[g.index]]] for g in groups)
    assert learner.tokens == pytest.approx(expected)
    for g in groups:
        turns = world.n_calls[world.train_idx[g.index]]
        assert all(turns <= n <= 1.5 * turns for n in g.lengths)  # a failed rollout takes up to half again
    assert world.n_calls.max() <= CFG.max_turns


def test_the_oracle_spreads_its_batch_over_clusters():
    world = make_clustered_world(replace(CFG, copy_decay=0.01))
    learner = SimLearner(world, seed=0)
    picked = oracle_batch(learner, 16, np.random.default_rng(0))
    value = learner.learnable_variance()
    top = np.argsort(-value)[:16]
    most = lambda idx: np.bincount(world.cluster[world.train_idx[idx]] + 1)[1:].max(initial=0)  # noqa: E731
    assert len(set(picked)) == 16 and most(np.asarray(picked)) <= most(top)
    assert most(np.asarray(picked)) <= 2


def test_the_clustered_family_is_reproducible_in_range_and_reported_in_tokens():
    a, b = make_world_family(4, seed=2, mechanism="clustered"), make_world_family(4, seed=2, mechanism="clustered")
    assert a == b and a != make_world_family(4, seed=3, mechanism="clustered")
    for cfg in a:
        assert CLUSTERED_RANGES["copy_share"][0] <= cfg.copy_share <= CLUSTERED_RANGES["copy_share"][1]
        assert CLUSTERED_RANGES["copy_decay"][0] <= cfg.copy_decay <= CLUSTERED_RANGES["copy_decay"][1]
        world = build_world(cfg)
        assert (world.cluster >= 0).any() and len(world.specs) == len(world.train_idx)
    out = family(["--worlds", "2", "--seeds", "1", "--steps", "8", "--no-named", "--mechanism", "clustered",
                  "--labels", "random", "envsched", "oracle"])  # fmt: skip
    rows = {r["scheduler"]: r for r in out["family"]}
    assert all(np.isfinite(r["token_ratio_median"]) and r["token_ratio_median"] > 0 for r in rows.values())
    # uniform pays about the same tokens every step: its ratio in tokens follows its ratio in steps
    assert rows["random"]["token_ratio_median"] == pytest.approx(rows["random"]["ratio_median"], rel=0.3)
