"""Environment effects from re-picks: a pool where training one environment lowers another's rewards
shows it in the estimate, envsched discounts the harmful environment only when the effect is
significant, and the estimate survives a checkpoint (or starts afresh from one written before it)."""

from __future__ import annotations

import numpy as np
import pytest

from envsched_lightning.scheduling import RolloutGroup, TaskSpec, build_scheduler
from envsched_lightning.scheduling.env_effects import EnvEffects
from envsched_lightning.scheduling.history import TaskHistory

ENVS, PER_ENV, GROUP = 3, 40, 64


def run(steps: int, harm: float, seed: int = 0, batch: int = 48, gain: float = 0.0002) -> tuple[EnvEffects, TaskHistory]:
    """Each task's pass rate: its own base, + `gain` per group its environment trained, and in
    environment 1 - `harm` per group trained on environment 0 (no pass rate leaves (0.02, 0.98) at
    the sizes used: the model is linear). The mix varies by step (a Dirichlet draw of environment
    weights), so the effects are identified; groups of 64 rollouts, since with 8 an effect this size
    is not told from noise in this many steps (benchmarks/env_effects.py)."""
    rng = np.random.default_rng(seed)
    env_ids = np.repeat(np.arange(ENVS), PER_ENV)
    base = rng.uniform(0.6, 0.9, env_ids.size)
    trained = np.zeros(ENVS)
    effects, history = EnvEffects(env_ids, ENVS, min_obs=40), TaskHistory(env_ids.size)
    for _ in range(steps):
        w = rng.dirichlet(np.ones(ENVS) * 0.5)[env_ids]
        picked = rng.choice(env_ids.size, size=batch, replace=False, p=w / w.sum())
        p = np.clip(base + gain * trained[env_ids] - harm * trained[0] * (env_ids == 1), 0.02, 0.98)
        groups = [RolloutGroup(int(i), tuple(float(r) for r in rng.random(GROUP) < p[i])) for i in picked]
        effects.observe(groups, history)
        history.record(groups)
        trained += np.bincount(env_ids[picked], minlength=ENVS)
    return effects, history


def test_a_harmful_environment_is_found_and_discounted_a_clean_pool_is_not():
    effects, _ = run(120, harm=0.5 / 1920)  # environment 1 loses 0.5 of pass rate over the run
    effect, t = effects.effects()
    crit = effects.critical_t()
    assert t[0, 1] < -crit and effect[0, 1] < 0  # environment 0 lowers environment 1
    off = ~np.eye(ENVS, dtype=bool)
    off[0, 1] = False
    assert (np.abs(t[off]) < crit).all()  # and nothing else is flagged
    factor = effects.env_factor()
    assert factor[0] < 1.0 and factor[1] == factor[2] == 1.0 and factor[0] >= effects.floor
    clean, _ = run(120, harm=0.0)
    assert (clean.env_factor() == 1.0).all()  # no significant harm: it costs nothing


def test_unknown_until_an_environment_has_enough_re_picks():
    effects, _ = run(2, harm=0.001)
    effect, t = effects.effects()
    assert np.isnan(effect).all() and np.isnan(t).all() and (effects.env_factor() == 1.0).all()


def test_state_round_trips_and_a_bad_one_is_refused():
    effects, history = run(60, harm=0.0002)
    other = EnvEffects(effects.env_ids, ENVS, min_obs=40)
    other.load_state_dict(effects.state_dict())
    np.testing.assert_array_equal(other.effects()[1], effects.effects()[1])
    assert other.steps == history.step  # the next step folds in where the run left off
    history.record([RolloutGroup(0, (0.0, 1.0))])  # the history moved on without the estimate: it starts afresh
    other.observe([RolloutGroup(1, (0.0, 1.0))], history)
    assert other.start == other.steps - 1 == history.step and other.n.sum() == 0
    state = effects.state_dict()
    state["xty"] = state["xty"][:1]
    with pytest.raises(ValueError, match="env_effects.xty"):
        other.load_state_dict(state)


def test_envsched_uses_them_only_when_asked_and_resumes_from_a_checkpoint_without_them():
    specs = [TaskSpec(env=f"e{i % 3}", task_id=f"t{i}", tools=(f"tool{i % 3}",)) for i in range(30)]
    off, on = build_scheduler("envsched", specs, seed=0), build_scheduler("envsched", specs, seed=0, env_effects=True)
    for sched in (off, on):
        for _ in range(3):
            picked = sched.select(6)
            sched.update([RolloutGroup(i, (0.0, 1.0, 1.0, 0.0)) for i in picked])
    assert "env_factor" not in off.last_decision().rows[0] and "env_factor" in on.last_decision().rows[0]
    assert off.env_effects.steps == 3  # estimated either way: the logger draws it
    state = on.state_dict()
    del state["extra"]["env_effects"]  # a checkpoint written before the estimate existed
    resumed = build_scheduler("envsched", specs, seed=0, env_effects=True)
    resumed.load_state_dict(state)
    assert resumed.env_effects.steps == resumed.env_effects.start == 3
    picked = resumed.select(6)
    resumed.update([RolloutGroup(i, (0.0, 1.0, 1.0, 0.0)) for i in picked])  # re-picks from before it are not used
    assert resumed.env_effects.n.sum() == 0


def test_trainers_log_how_much_each_discount_took():
    from envsched_lightning.adapters.metrics import scheduler_metrics

    specs = [TaskSpec(env=f"e{i % 3}", task_id=f"t{i}", tools=(f"tool{i % 3}",)) for i in range(30)]
    sched = build_scheduler("envsched", specs, seed=0, env_effects=True, progress_min_picks=3)

    def group(i: int, step: int) -> RolloutGroup:  # e0's tasks are coins, the others learn a little each pick
        ones = 4 if i % 3 == 0 else 1 + step
        return RolloutGroup(i, tuple([1.0] * ones + [0.0] * (8 - ones)))

    for step in range(6):
        sched.update([group(i, step) for i in sched.select(30)])
    picked = sched.select(30)
    metrics = scheduler_metrics(sched.last_decision(), [group(i, 6) for i in picked], sched.specs)
    rows = sched.last_decision().rows
    assert metrics["sched/env_factor_mean"] == 1.0  # nothing significant in 6 steps
    assert metrics["sched/learnability_mean"] == pytest.approx(sum(r["learnability"] for r in rows) / 30)
    by_env = {e: [r["learnability"] for r in rows if r["env"] == e] for e in ("e0", "e1", "e2")}
    assert max(by_env["e0"]) < 0.5 and min(by_env["e1"] + by_env["e2"]) == 1.0  # the coins' environment only
