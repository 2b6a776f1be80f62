"""EnvSched's relations earn their weight online: a relation whose propagation predicts held-back
groups worse than leaving it out is turned down, one that predicts them better keeps its weight."""

import numpy as np
import pytest

from envsched_lightning.scheduling import RolloutGroup, TaskSpec, build_scheduler


def klass(env, name, n, tools, pattern):
    return [TaskSpec(env=env, task_id=f"{name}{i}", tools=tools, state_keys=(name,), verifier="state_match",
                     features={"n_calls": 2.0, f"pattern_{pattern}": 1.0}) for i in range(n)]


def drive(specs, informative, steps=40, seed=0, **options):
    """Select and feed groups: an informative task passes half its rollouts, the rest all of them."""
    sched = build_scheduler("envsched", specs, seed=seed, use_gnn=False, quota=False, penalty=0.0, copy_decay=1.0,
                            gnn_min_observations=20, **options)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        idx = sched.select(8)
        sched.update([RolloutGroup(i, (rng.random(8) < (0.5 if informative[i] else 1.0)).astype(float).tolist())
                      for i in idx])
    return sched


def test_cross_relation_is_turned_down_where_it_joins_opposite_outcomes_and_kept_where_it_joins_skills():
    # misleading: pattern x is learnable in env a and saturated in env b (y the other way round);
    # cross edges join the same pattern, intra edges the same tools, so only intra is right
    mislead = (klass("a", "p", 25, ("t1",), "x") + klass("a", "r", 25, ("t2",), "y")
               + klass("b", "q", 25, ("u1",), "x") + klass("b", "s", 25, ("u2",), "y"))
    bad = drive(mislead, np.repeat([True, False, False, True], 25))
    # helpful: pattern x learnable in both environments, y saturated in both
    helpful = (klass("a", "p", 25, ("t1",), "x") + klass("a", "r", 25, ("t1",), "y")
               + klass("b", "q", 25, ("u1",), "x") + klass("b", "s", 25, ("u1",), "y"))
    good = drive(helpful, np.repeat([True, False, True, False], 25))
    w_bad, w_good = bad.relation_weights(), good.relation_weights()
    assert set(w_bad) == {"none", "intra", "cross"} and sum(w_bad.values()) == pytest.approx(1.0)
    assert w_bad["cross"] < w_bad["intra"] and w_bad["cross"] < 0.4
    assert w_good["cross"] > w_good["intra"] and w_good["cross"] > 0.5
    assert bad.gate_err["cross"] > bad.gate_err["intra"]


def test_gate_starts_on_the_full_graph_and_can_be_switched_off():
    specs = klass("a", "p", 10, ("t1",), "x") + klass("b", "q", 10, ("u1",), "x")
    sched = build_scheduler("envsched", specs, use_gnn=False)
    assert sched.relation_weights() == {"none": 0.0, "intra": 0.0, "cross": 1.0}  # before any held-back group
    off = drive(specs, np.ones(20, bool), steps=5, gate=False)
    assert off.relation_weights() == {"cross": 1.0} and off.ppr_intra is None
    no_cross = build_scheduler("envsched", specs, use_gnn=False, cross_edges=False)
    assert set(no_cross.relation_weights()) == {"none", "intra"}
    with pytest.raises(ValueError, match="gate_temperature"):
        build_scheduler("envsched", specs, gate_temperature=0.0)


def test_gate_state_survives_a_checkpoint():
    specs = klass("a", "p", 20, ("t1",), "x") + klass("b", "q", 20, ("u1",), "x")
    sched = drive(specs, np.repeat([True, False], 20), steps=10)
    again = build_scheduler("envsched", specs, seed=0, use_gnn=False, quota=False, penalty=0.0, gnn_min_observations=20)
    again.load_state_dict(sched.state_dict())
    assert again.gate_err == sched.gate_err and again.relation_weights() == sched.relation_weights()
    np.testing.assert_allclose(again.predict(), sched.predict(), atol=1e-6)


def test_untried_exploration_is_off_by_default_and_only_moves_never_tried_tasks():
    specs = klass("a", "p", 20, ("t1",), "x") + klass("b", "q", 20, ("u1",), "x")
    sched = drive(specs, np.repeat([True, False], 20), steps=3, explore_untried=0.5)
    draw = sched._posterior_draw(sched.predict())
    assert (draw[sched.history.observed] == 0).all() and np.abs(draw[~sched.history.observed]).max() > 0
    assert build_scheduler("envsched", specs).explore_untried == 0.0
    with pytest.raises(ValueError, match="explore_untried"):
        build_scheduler("envsched", specs, explore_untried=-1.0)
