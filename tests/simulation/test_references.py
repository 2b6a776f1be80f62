"""The simulator's reference rows: the oracle ceiling must sit above uniform sampling."""

import numpy as np

from envsched_lightning.simulation import make_world, run_oracle, run_scheduler


def test_oracle_ceiling_beats_uniform_and_wastes_fewer_groups():
    world = make_world("default")
    oracle = run_oracle(world, seed=0, steps=30)
    uniform = run_scheduler(world, "random", 0, steps=30)
    assert len(oracle.scores) == 31 and oracle.rollouts[-1] == uniform.rollouts[-1]  # same budget
    assert oracle.scores[30] > uniform.scores[30] + 0.02
    assert np.mean(oracle.zero_var) < 0.5 * np.mean(uniform.zero_var)
