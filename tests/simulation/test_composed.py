"""The second world mechanism: tasks compose latent skills, and every step must succeed."""

import numpy as np
import pytest

from benchmarks.world_family import main as family
from envsched_lightning.scheduling import RolloutGroup
from envsched_lightning.simulation import SimLearner, run_oracle, run_scheduler
from envsched_lightning.simulation.composed import (
    COMPOSED_RANGES,
    ComposedWorldConfig,
    make_composed_world,
    sample_composed_params,
)
from envsched_lightning.simulation.family import build_world, make_world_family

CFG = ComposedWorldConfig(num_envs=4, tasks_per_env=(60, 90), heldout_per_env=10, shared_pool=3, shared_per_env=2,
                          composition_mean=2.5, tool_reveal=0.7, signature_reveal=0.6, seed=4)  # fmt: skip


def test_a_task_passes_only_if_every_one_of_its_steps_does():
    world = make_composed_world(CFG)
    learner = SimLearner(world, seed=0)
    tasks = world.train_idx
    step, real = learner.step_success(tasks)
    np.testing.assert_allclose(learner.pass_rate(tasks), np.where(real, step, 1.0).prod(1))
    multi = [i for i, t in enumerate(tasks) if len(world.skills[t]) >= 2]
    assert multi and all(learner.pass_rate(tasks[[i]])[0] <= step[i, real[i]].min() + 1e-12 for i in multi)


def test_training_a_task_moves_most_the_skill_that_held_it_back():
    world = make_composed_world(CFG)
    learner = SimLearner(world, seed=0)
    step, _ = learner.step_success(world.train_idx)
    spread = [i for i, t in enumerate(world.train_idx) if len(world.skills[t]) >= 2
              and np.ptp(step[i, : len(world.skills[t])]) > 0.3]  # fmt: skip
    i = spread[0]
    t = world.train_idx[i]
    weakest, strongest = (world.skills[t][j] for j in (step[i, : len(world.skills[t])].argmin(),
                                                         step[i, : len(world.skills[t])].argmax()))  # fmt: skip
    before = learner.level.copy()
    learner.learn([RolloutGroup(i, (0.0, 1.0, 0.0, 1.0))])
    moved = learner.level - before
    assert moved[weakest] > moved[strongest] > 0 and np.count_nonzero(moved) == len(world.skills[t])


def test_metadata_reveals_skills_only_partly_and_never_by_a_shared_tool_name():
    world = make_composed_world(CFG)
    envs_of_tool: dict[str, set] = {}
    for spec in world.specs:
        for tool in spec.tools:
            envs_of_tool.setdefault(tool, set()).add(spec.env)
    assert all(len(e) == 1 for e in envs_of_tool.values())  # tool names are per environment
    signatures = {}
    for spec in world.specs:
        for f in spec.features:
            if f.startswith("sig_"):
                signatures.setdefault(f, set()).add(spec.env)
    assert any(len(e) > 1 for e in signatures.values())  # a shared skill's signature shows across environments
    hidden = sum(len(s.tools) < len(world.skills[t]) for s, t in zip(world.specs, world.train_idx))
    assert 0 < hidden < len(world.specs)


def test_the_composed_family_is_reproducible_in_range_and_runs():
    a, b = make_world_family(5, seed=2, mechanism="composed"), make_world_family(5, seed=2, mechanism="composed")
    assert a == b and all(isinstance(c, ComposedWorldConfig) for c in a)
    rng = np.random.default_rng(0)
    for _ in range(30):
        c = sample_composed_params(rng)
        for name, value in dict(num_envs=c.num_envs, own_skills=c.own_skills, shared_pool=c.shared_pool,
                                composition_mean=c.composition_mean, sharpness=c.sharpness,
                                tool_reveal=c.tool_reveal, lr=c.lr, lr_task=c.lr_task).items():  # fmt: skip
            lo, hi = COMPOSED_RANGES[name]
            assert lo <= value <= hi, (name, value)
        assert c.shared_per_env <= c.shared_pool
    world = build_world(a[0])
    assert world.composition == "product" and len(world.specs) == world.train_idx.size
    res = run_scheduler(world, "envsched", 0, steps=5)
    assert len(res.scores) == 6 and all(0.0 <= s <= 1.0 for s in res.scores)
    assert run_oracle(world, 0, steps=5).scores[-1] >= res.scores[0]
    with pytest.raises(ValueError, match="mechanism must be one of"):
        make_world_family(2, mechanism="grid")


def test_the_family_benchmark_reports_each_mechanism_and_both():
    out = family(["--worlds", "2", "--seeds", "1", "--steps", "6", "--no-named", "--mechanism", "both",
                  "--labels", "random", "envsched"])  # fmt: skip
    assert {"family", "family_template", "family_composed"} <= set(out)
    assert [r["scheduler"] for r in out["family_composed"]] == ["random", "envsched"]
