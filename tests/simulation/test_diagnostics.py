"""Prediction-quality diagnostics: the AUC and classmate references they rest on, and a short run."""

import math

import numpy as np

from envsched_lightning.scheduling import TaskSpec
from envsched_lightning.simulation import make_world
from envsched_lightning.simulation.diagnostics import classmate_mean, prediction_quality, rank_auc, spec_classes


def test_rank_auc_counts_pairs_and_half_ties():
    assert rank_auc(np.array([0.1, 0.2, 0.8, 0.9]), np.array([0, 0, 1, 1])) == 1.0
    assert rank_auc(np.array([0.9, 0.8, 0.2, 0.1]), np.array([0, 0, 1, 1])) == 0.0
    assert rank_auc(np.ones(6), np.array([0, 1, 0, 1, 0, 1])) == 0.5
    # positives {2, 3} vs negatives {1, 2}: 2>1, 2=2 (half), 3>1, 3>2 -> 3.5 of 4 pairs
    assert rank_auc(np.array([1.0, 2.0, 2.0, 3.0]), np.array([0, 1, 0, 1])) == 0.875
    assert math.isnan(rank_auc(np.array([0.3, 0.4]), np.array([1, 1])))


def test_classmates_leave_the_task_itself_out():
    specs = [TaskSpec("a", f"t{i}", tools=("x",), state_keys=("s",)) for i in range(3)] + [
        TaskSpec("a", "lone", tools=("x",), state_keys=("other",))]
    classes = spec_classes(specs)
    assert classes.tolist() == [0, 0, 0, 1]
    values = np.array([1.0, 0.0, 0.5, 9.0])
    members = np.array([True, True, False, True])  # task 2 was never observed
    out = classmate_mean(values, classes, members, fallback=-1.0)
    assert out.tolist() == [0.0, 1.0, 0.5, -1.0]  # task 3 has no classmate: fallback


def test_tried_tasks_rank_better_than_their_classmates_say_and_the_ceiling_sits_above_untried():
    rows = prediction_quality(make_world("default"), seed=0, checkpoints=(10,))
    untried, tried = rows
    assert (untried["group"], tried["group"]) == ("untried", "tried") and untried["step"] == 10
    assert untried["tasks"] + tried["tasks"] == len(make_world("default").specs)
    # a tried task's own outcome beats what its classmates showed
    assert tried["envsched"] > tried["observed_classmates"] + 0.05
    # never-tried tasks: propagation carries information, and knowing siblings' truth would carry more
    assert 0.55 < untried["envsched"] < untried["true_classmates (ceiling)"]


def test_the_gnn_column_is_there_only_when_the_gnn_is_on():
    world = make_world("default")
    assert "gnn" not in prediction_quality(world, seed=0, checkpoints=(2,))[0]
    row = prediction_quality(world, seed=0, checkpoints=(2,), use_gnn=True)[1]
    assert 0.0 <= row["gnn"] <= 1.0
