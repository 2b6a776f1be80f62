"""The simulator's reference rows: the oracle ceiling above uniform, the class-informed row above envsched at the start."""

import numpy as np

from envsched_lightning.simulation import make_world, run_class_informed, run_oracle, run_scheduler


def test_oracle_ceiling_beats_uniform_and_wastes_fewer_groups():
    world = make_world("default")
    oracle = run_oracle(world, seed=0, steps=30)
    uniform = run_scheduler(world, "random", 0, steps=30)
    assert len(oracle.scores) == 31 and oracle.rollouts[-1] == uniform.rollouts[-1]  # same budget
    assert oracle.scores[30] > uniform.scores[30] + 0.02
    assert np.mean(oracle.zero_var) < 0.5 * np.mean(uniform.zero_var)


def test_class_informed_reference_picks_better_untried_tasks_than_envsched_can_at_the_start():
    """Before any rollout every task is untried: envsched has only its prior, the class-informed
    reference has each class's true value, so its first batches waste far fewer groups."""
    world = make_world("default")
    informed = run_class_informed(world, seed=0, steps=3)
    blind = run_scheduler(world, "envsched", 0, steps=3)
    assert informed.name == "class_informed" and informed.rollouts[-1] == blind.rollouts[-1]
    assert np.mean(informed.zero_var) < np.mean(blind.zero_var) - 0.2
