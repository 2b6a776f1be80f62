"""The additive candidate: a task's success logit as the sum of its metadata tokens' weights."""

import math

import numpy as np
import pytest

from envsched_lightning.scheduling import RolloutGroup, TaskSpec, build_scheduler
from envsched_lightning.scheduling.additive import AdditiveModel, expected_spread


def composed_specs(n: int, rng: np.random.Generator) -> tuple[list[TaskSpec], np.ndarray]:
    """Tasks of 1-3 tools out of 12; a task's success logit is the sum of its tools' difficulties."""
    difficulty = np.linspace(-2.0, 2.0, 12)
    specs, logit = [], []
    for i in range(n):
        tools = rng.choice(12, size=rng.integers(1, 4), replace=False)
        specs.append(TaskSpec("env", f"t{i}", tools=tuple(f"tool{j}" for j in tools), verifier="v"))
        logit.append(1.0 + difficulty[tools].sum() * -1.0)
    return specs, np.asarray(logit)


def test_the_model_composes_tools_it_saw_on_other_tasks_into_tasks_never_seen():
    rng = np.random.default_rng(0)
    specs, truth = composed_specs(400, rng)
    model = AdditiveModel(specs, ridge=0.1, sweeps=200)
    tried = rng.random(400) < 0.5
    model.fit(tried, truth)
    pred = model.logits()
    assert np.corrcoef(pred[~tried], truth[~tried])[0, 1] > 0.95  # never-tried combinations of seen tools
    assert model.num_tokens == 12 + 3  # tools, the environment, the verifier, the reward type


def test_the_expected_spread_of_a_group_is_exact_at_its_ends_and_peaks_at_one_half():
    table = expected_spread(8)
    assert table[0] == 0.0 and table[-1] == pytest.approx(0.0, abs=1e-12)
    mid = len(table) // 2
    exact = sum(math.comb(8, k) * 0.5**8 * min(1.0, 2 * math.sqrt(k / 8 * (1 - k / 8))) for k in range(9))
    assert table[mid] == pytest.approx(exact) and table.argmax() == mid


def test_envsched_weighs_the_additive_candidate_in_its_gate_and_resumes_it():
    rng = np.random.default_rng(1)
    specs, truth = composed_specs(300, rng)
    p = 1 / (1 + np.exp(-truth))
    sched = build_scheduler("envsched", specs, seed=0, additive=True, gnn_min_observations=16)
    for _ in range(12):
        idx = sched.select(16)
        sched.update([RolloutGroup(i, (rng.random(8) < p[i]).astype(float).tolist()) for i in idx])
    weights = sched.relation_weights()
    assert set(weights) == {"none", "intra", "cross", "additive"} and sum(weights.values()) == pytest.approx(1.0)
    assert sched.additive.fits == 12
    again = build_scheduler("envsched", specs, seed=0, additive=True, gnn_min_observations=16)
    again.load_state_dict(sched.state_dict())
    np.testing.assert_array_equal(again.predict(), sched.predict())
    assert again.select(16) == sched.select(16)
    plain = build_scheduler("envsched", specs, seed=0).state_dict()
    with pytest.raises(ValueError, match="additive=false"):  # a checkpoint without the model says so
        build_scheduler("envsched", specs, seed=0, additive=True).load_state_dict(plain)
    with pytest.raises(ValueError, match="gate"):
        build_scheduler("envsched", specs, additive=True, gate=False)


def test_the_metadata_ceiling_benchmark_reports_each_mechanism(capsys):
    from benchmarks.metadata_ceiling import main
    from envsched_lightning.simulation.family import MECHANISMS

    rows = main(["--worlds", "1"])
    assert [r["mechanism"] for r in rows] == list(MECHANISMS)
    assert all(-1.0 <= r["spread_corr_median"] <= 1.0 and r["logit_r2_median"] <= 1.0 for r in rows)
    assert "fitted on true logits" in capsys.readouterr().out
