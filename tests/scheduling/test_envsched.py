"""EnvSched's mechanisms on small hand-built task pools: graph, propagation, constraints."""

import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from envsched_lightning.scheduling import EnvQuota, RolloutGroup, SimilarityPenalty, TaskSpec, build_scheduler


def family(env, name, n, tools):
    return [TaskSpec(env=env, task_id=f"{name}{i}", tools=tools, state_keys=(name,), verifier="state_match",
                     features={"n_calls": 2.0}) for i in range(n)]


def group(i, passes, g=8):
    return RolloutGroup(i, [1.0] * passes + [0.0] * (g - passes))


def test_graph_has_both_relations_as_pyg_data():
    specs = family("a", "x", 6, ("t1", "t2")) + family("b", "y", 6, ("u1",))
    sched = build_scheduler("envsched", specs, use_gnn=False)
    data = sched.graph.to_data()
    assert isinstance(data, Data) and data.num_nodes == 12
    src, dst = data.edge_index
    same_env = sched.env_ids[src.numpy()] == sched.env_ids[dst.numpy()]
    assert same_env[data.edge_type.numpy() == 0].all()  # intra edges stay inside an environment
    assert (~same_env[data.edge_type.numpy() == 1]).all()  # cross edges join different environments
    assert (data.edge_type == 1).any(), "identical execution patterns across envs should be linked"


def test_unseen_task_with_high_variance_neighbours_scores_higher():
    hot = family("a", "hot", 8, ("pay", "refund"))
    cold = family("a", "cold", 8, ("search", "list"))
    sched = build_scheduler("envsched", hot + cold, use_gnn=False, quota=False, penalty=0.0)
    for _ in range(3):  # neighbours of task 0 learn (mixed rewards), neighbours of task 8 are all solved
        sched.update([group(i, 4) for i in range(1, 8)] + [group(i, 8) for i in range(9, 16)])
    pred = sched.predict()
    assert not sched.history.observed[0] and not sched.history.observed[8]
    assert pred[0] > pred[8] + 0.3


def test_exploration_moves_to_classes_nobody_looked_at_lately():
    seen = family("a", "seen", 6, ("pay", "refund"))
    dark = family("a", "dark", 6, ("search", "list"))
    sched = build_scheduler("envsched", seen + dark, use_gnn=False, quota=False, penalty=0.0, cross_edges=False)
    sched.update([group(0, 4)])  # one task of the "seen" class is observed
    bonus = sched.coverage_bonus()
    assert bonus[1] < 0.6 * bonus[6]  # its untried sibling: half the coverage of an untried "dark" task
    for _ in range(30):  # nobody looks at the class again: its siblings' coverage recovers
        sched.update([group(11, 4)])
    bonus = sched.coverage_bonus()
    assert bonus[7] < 0.6 * bonus[1]  # and now it is the "dark" class that was just looked at
    off = build_scheduler("envsched", seen + dark, use_gnn=False, quota=False, penalty=0.0, cross_edges=False,
                          sibling_halflife=0.0)
    off.update([group(0, 4)])
    assert off.coverage_bonus()[1] == pytest.approx(off.coverage_bonus()[6])
    with pytest.raises(ValueError, match="sibling_halflife"):
        build_scheduler("envsched", seen, sibling_halflife=-1.0)


def test_gnn_earns_trust_only_from_held_back_error():
    specs = family("a", "x", 40, ("t1",)) + family("b", "y", 40, ("u1",))
    sched = build_scheduler("envsched", specs, use_gnn=True, gnn_min_observations=30)
    assert sched.gnn_trust() == 0.0
    rng = np.random.default_rng(0)
    for _ in range(6):
        idx = sched.select(10)
        sched.update([group(i, int(rng.integers(0, 9)) if i < 40 else 8) for i in idx])
    assert sched.evaluated == 60 and 0.0 < sched.gnn_trust() < 1.0


def test_quota_holds_on_every_batch():
    specs = family("big", "x", 80, ("t",)) + family("small", "y", 10, ("u",)) + family("tiny", "z", 10, ("v",))
    sched = build_scheduler("envsched", specs, use_gnn=False, quota=False)
    sched.install(EnvQuota(floor=0.2, per_env={"tiny": {"min_share": 0.2}}))
    for step in range(10):
        idx = sched.select(10)
        counts = sched.last_decision().env_counts
        assert counts["big"] <= int(max(2 * 80 / 100, 0.2) * 10)
        assert counts["tiny"] >= 2
        sched.update([group(i, 8 if specs[i].env == "big" else 0) for i in idx])


def test_starving_environment_gets_a_slot():
    specs = family("a", "x", 50, ("t",)) + family("b", "y", 50, ("u",))
    sched = build_scheduler("random", specs, seed=0)
    sched.install(EnvQuota(max_share=1.0, starvation_steps=2, per_env={"a": {"max_share": 1.0}}))
    sched.quota.since_seen[:] = [0, 5]
    idx = sched.select(4)
    assert any(specs[i].env == "b" for i in idx)


def test_similarity_penalty_lowers_batch_similarity():
    specs = [s for k in range(6) for s in family("a", f"f{k}", 10, (f"tool{k}",))]
    def mean_pairwise(sched, idx):
        sim = sched.graph.combined_similarity()
        return np.mean([sim.pair(i, j) for i in idx for j in idx if i < j])
    plain = build_scheduler("envsched", specs, use_gnn=False, quota=False, penalty=0.0, copy_decay=1.0, seed=0)
    spread = build_scheduler("envsched", specs, use_gnn=False, quota=False, penalty=1.0, copy_decay=1.0, seed=0)
    assert mean_pairwise(spread, spread.select(6)) < mean_pairwise(plain, plain.select(6))


def test_penalty_works_on_any_scheduler():
    specs = [s for k in range(4) for s in family("a", f"f{k}", 10, (f"tool{k}",))]
    sched = build_scheduler("plr", specs, seed=0)
    sched.install(SimilarityPenalty(lam=5.0))
    idx = sched.select(4)
    assert len({specs[i].tools for i in idx}) == 4


@pytest.mark.parametrize(
    "specs",
    [
        family("only", "x", 12, ("t1", "t2")),  # one environment
        [TaskSpec(env=f"e{i}", task_id="t") for i in range(6)],  # one task per environment, no tools at all
        [TaskSpec(env="e", task_id=f"t{i}") for i in range(5)],  # no tools, one env
    ],
)
def test_degenerate_graphs_work(specs):
    sched = build_scheduler("envsched", specs, seed=0)
    for step in range(4):
        idx = sched.select(min(3, len(specs)))
        assert len(set(idx)) == len(idx)
        sched.update([group(i, step % 9) for i in idx])
    assert sched.last_decision().rows[0]["predicted"] >= 0.0


def test_decision_explains_choices():
    specs = family("a", "x", 10, ("t",)) + family("b", "y", 10, ("u",))
    sched = build_scheduler("envsched", specs, use_gnn=False)
    sched.select(4)
    d = sched.last_decision()
    assert sum(d.env_counts.values()) == 4
    assert {"env", "task_id", "predicted", "coverage", "penalty", "priority"} <= set(d.rows[0])


def test_core_imports_no_lightning_hydra_wandb():
    code = (
        "import sys, envsched_lightning.scheduling as s; s.build_scheduler('envsched', "
        "[s.TaskSpec(env='e', task_id='t')]); "
        "bad = [m for m in ('lightning', 'pytorch_lightning', 'hydra', 'omegaconf', 'wandb') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_incremental_ppr_equals_full_recompute():
    specs = [s for k in range(5) for s in family(f"e{k % 2}", f"f{k}", 12, (f"tool{k}",))]
    sched = build_scheduler("envsched", specs, use_gnn=False, cross_refresh_every=1000)
    rng = np.random.default_rng(0)
    for _ in range(6):
        idx = sched.select(7)
        sched.update([group(i, int(rng.integers(0, 9))) for i in idx])
    incremental = sched.ppr.f.copy()
    h = sched.history
    sched.ppr.reset(2 * h.ema_std.astype(np.float64), h.observed)
    assert np.allclose(incremental, sched.ppr.f, atol=1e-12)


def test_calibration_learns_that_nearly_solved_tasks_saturate():
    from envsched_lightning.scheduling.calibration import OutcomeCalibration

    cal = OutcomeCalibration(decay=1.0)
    spread = np.array([0.3, 0.4, 0.0])
    for _ in range(20):
        cal.observe(np.array([7 / 8, 2 / 8, 1.0]), spread, np.array([0.0, 1.0, 0.0]))
    est = cal.lookup(np.array([7 / 8, 2 / 8, 1.0, 0.5]), np.array([0.3, 0.4, 0.0, 0.3]), prior=0.5)
    assert est[0] < 0.1 and est[1] > 0.9 and est[2] < 0.1
    assert abs(est[3] - 0.5) < 1e-6  # an empty bin falls back to the prior


def test_calibration_tells_a_flat_partial_credit_group_from_one_with_spread():
    """Two tasks both at mean 0.5: one settled on a half-right answer (every rollout 0.5), one split
    between right and wrong. Only the second is worth another group, and the table must say so."""
    from envsched_lightning.scheduling.calibration import OutcomeCalibration

    cal = OutcomeCalibration(decay=1.0)
    for _ in range(20):
        cal.observe(np.array([0.5, 0.5]), np.array([0.0, 0.5]), np.array([0.0, 1.0]))
    flat, split = cal.lookup(np.array([0.5, 0.5]), np.array([0.0, 0.5]), prior=0.5)
    assert flat < 0.1 and split > 0.9


def _drive(sched, steps, start=0, batch=6):
    """Select and feed back groups whose pass counts depend on the task and the step."""
    picks = []
    for step in range(start, start + steps):
        idx = sched.select(batch)
        picks.append(idx)
        sched.update([group(i, (i * 3 + step) % 9) for i in idx])
    return picks


def _two_env_pool():
    return family("a", "x", 20, ("t1", "t2")) + family("a", "y", 10, ("t3",)) + family("b", "z", 30, ("u1",))


def test_resume_after_a_cross_edge_refresh_is_exact():
    """Cross edges are built from the history of their refresh step; a checkpoint taken later
    must restore those edges, not rebuild them from the later history."""
    opts = dict(cross_refresh_every=3, cross_refresh_fraction=0.0)
    full = build_scheduler("envsched", _two_env_pool(), seed=3, **opts)
    _drive(full, 4)
    assert full.graph.refreshes == 1
    state = pickle.loads(pickle.dumps(full.state_dict()))
    rest = _drive(full, 6, start=4)
    resumed = build_scheduler("envsched", _two_env_pool(), seed=3, **opts)
    resumed.load_state_dict(state)
    assert _drive(resumed, 6, start=4) == rest


def test_cross_edges_refresh_only_after_enough_tasks_changed():
    sched = build_scheduler("envsched", _two_env_pool(), seed=0, cross_refresh_every=1, cross_refresh_fraction=0.25)
    for step in range(20):
        _drive(sched, 1, start=step)
        changed = int(sched.history.observed.sum())  # no refresh yet: every observed task is new since
        if changed < 15:  # under a quarter of the 60 tasks
            assert sched.graph.refreshes == 0
        else:
            assert sched.graph.refreshes == 1 and step >= 2  # 6 picks a step: 15 take three steps at least
            break
    else:
        raise AssertionError("the scheduler never tried 15 distinct tasks in 20 steps")


def test_incremental_cross_refresh_keeps_unchanged_edges_and_links_tasks_that_now_behave_alike():
    from envsched_lightning.scheduling.graph import TaskGraph
    from envsched_lightning.scheduling.history import TaskHistory

    def pool(env, pattern, n):
        return [TaskSpec(env=env, task_id=f"t{i}", tools=(f"{env}.x",), features={f"pattern_{pattern}": 1.0, "n_calls": 2.0})
                for i in range(n)]

    specs = pool("a", "lookup", 30) + pool("b", "refuse", 30) + pool("c", "lookup", 30)
    env_ids = np.repeat(np.arange(3), 30)
    graph = TaskGraph(specs, env_ids, k_cross=5)
    before = graph.cross
    src, dst = before.sources(), before.indices
    assert not ((env_ids[src] == 0) & (env_ids[dst] == 1)).any()  # different patterns: not linked yet

    history = TaskHistory(len(specs))
    changed = np.r_[0:10, 30:40]  # task i of a and task i of b now score alike (10 different profiles)
    history.record([RolloutGroup(int(i), [1.0] * (1 + i % 10 % 7) + [0.0] * (7 - i % 10 % 7), [1.0 + i % 10] * 8)
                    for i in changed])
    graph.refresh_cross(history, changed)
    after = graph.cross

    src2, dst2 = after.sources(), after.indices
    linked = (env_ids[src2] == 0) & (env_ids[dst2] == 1)
    assert linked.any() and np.isin(src2[linked], changed).all() and np.isin(dst2[linked], changed).all()
    # an edge between two tasks whose statistics did not move survives, with its weight, unless
    # a changed task displaced it from both endpoints' top k
    untouched = ~np.isin(src, changed) & ~np.isin(dst, changed)
    kept = [after.pair(int(i), int(j)) for i, j in zip(src[untouched], dst[untouched])]
    assert np.mean(np.asarray(kept) > 0) > 0.8
    assert np.allclose([k for k in kept if k > 0], [w for w, k in zip(before.weights[untouched], kept) if k > 0])


def test_sibling_recency_kept_per_update_equals_the_one_rebuilt_on_resume():
    specs = family("a", "x", 12, ("t1", "t2")) + family("a", "y", 12, ("u1",)) + family("b", "z", 12, ("t1",))
    sched = build_scheduler("envsched", specs, use_gnn=False)
    rng = np.random.default_rng(0)
    for _ in range(7):
        idx = sched.select(5)
        sched.update([group(i, int(rng.integers(0, 9))) for i in idx])
    kept = sched.coverage_bonus()
    resumed = build_scheduler("envsched", specs, use_gnn=False)
    resumed.load_state_dict(sched.state_dict())
    np.testing.assert_array_equal(resumed.coverage_bonus(), kept)


def test_local_gnn_refresh_keeps_never_tried_neighbours_on_the_current_closed_form():
    """Above `gnn_full_graph_max` tasks the GNN re-runs only the last groups and a rotating slice.
    A never-tried neighbour of a just-observed task must still move with the closed form in that
    step (its last correction applied to today's estimate), not keep the value of its last re-run."""
    hot = family("a", "hot", 8, ("pay", "refund"))
    cold = family("a", "cold", 8, ("search", "list"))
    sched = build_scheduler("envsched", hot + cold, seed=0, use_gnn=True, quota=False, penalty=0.0, gnn_full_graph_max=0,
                            gnn_refresh_period=1000)
    assert sched.gnn.full_edges is None  # the local path, as on a large pool
    before = sched.predict_gnn().copy()  # step 0 re-runs node 0 (the rotating slice) with the untrained model
    sched.update([group(i, 4) for i in range(1, 8)])  # its siblings turn out informative
    ppr, gnn = sched.predict_ppr(), sched.predict_gnn()
    assert ppr[0] > before[0] + 0.1  # the closed form carries the news to the untried sibling ...
    assert gnn[0] == pytest.approx(ppr[0], abs=1e-5)  # ... and so does the GNN path (zero correction so far)
    x = sched._inputs()
    rerun = sched.gnn.predict(x, torch.arange(1, 8)).numpy()
    assert gnn[1:8] == pytest.approx(rerun, abs=1e-5)  # re-run nodes carry the trained model's output


def test_resume_is_exact_above_the_full_graph_size():
    """6,000 tasks: the GNN refreshes its corrections locally; those and the last nodes are state."""
    pool = [TaskSpec(f"e{k % 3}", f"t{k}", tools=(f"tool{k % 40}",), features={"n": float(k % 7)}) for k in range(6000)]
    full = build_scheduler("envsched", pool, seed=1, use_gnn=True, gnn_full_graph_max=5000)
    assert full.gnn is not None and full.gnn.full_edges is None
    _drive(full, 6, batch=32)
    state = pickle.loads(pickle.dumps(full.state_dict()))
    rest = _drive(full, 6, start=6, batch=32)
    resumed = build_scheduler("envsched", pool, seed=1, use_gnn=True, gnn_full_graph_max=5000)
    resumed.load_state_dict(state)
    assert [list(a) for a in _drive(resumed, 6, start=6, batch=32)] == [list(a) for a in rest]


def test_update_with_no_groups_is_refused_and_changes_nothing():
    sched, twin = (build_scheduler("envsched", _two_env_pool(), seed=0) for _ in range(2))
    _drive(sched, 2)
    _drive(twin, 2)
    with pytest.raises(ValueError, match="no RolloutGroup"):
        sched.update([])
    assert np.isfinite(sched.predict_ppr()).all()
    assert [list(a) for a in _drive(sched, 4, start=2)] == [list(a) for a in _drive(twin, 4, start=2)]


def test_a_history_with_nan_is_refused_at_load_and_nothing_changes():
    sched = build_scheduler("envsched", _two_env_pool(), seed=0)
    _drive(sched, 2)
    state = sched.state_dict()
    state["history"]["ema_std"] = state["history"]["ema_std"].copy()
    state["history"]["ema_std"][3] = np.nan
    fresh = build_scheduler("envsched", _two_env_pool(), seed=0)
    with pytest.raises(ValueError, match="history.ema_std: 1 non-finite"):
        fresh.load_state_dict(state)
    assert fresh.history.step == 0 and np.isfinite(fresh.history.ema_std).all()


def test_a_checkpoint_keeps_the_propagated_sums_and_one_written_without_them_still_loads():
    """The incrementally updated PPR sums are saved, so a resume continues from the run's own values;
    an older checkpoint without them recomputes them from the history."""
    sched = build_scheduler("envsched", _two_env_pool(), seed=3)
    _drive(sched, 5)
    state = sched.state_dict()
    resumed = build_scheduler("envsched", _two_env_pool(), seed=3)
    resumed.load_state_dict(pickle.loads(pickle.dumps(state)))
    np.testing.assert_array_equal(resumed.ppr.f, sched.ppr.f)
    older = pickle.loads(pickle.dumps(state))
    del older["extra"]["ppr"]
    recomputed = build_scheduler("envsched", _two_env_pool(), seed=3)
    recomputed.load_state_dict(older)
    np.testing.assert_allclose(recomputed.ppr.f, sched.ppr.f, atol=1e-9)
