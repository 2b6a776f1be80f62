"""Cost-aware selection: rollouts report their tokens, envsched ranks informativeness per token,
and a floor keeps long-horizon environments in the batch."""

from __future__ import annotations

import numpy as np
import pytest

from envsched_lightning.scheduling import RolloutGroup, TaskSpec, build_scheduler
from envsched_lightning.scheduling.cost import RolloutCost
from envsched_lightning.scheduling.types import validate_groups


def test_a_task_costs_its_own_tokens_then_its_environments_then_the_pools():
    env_ids = np.array([0, 0, 0, 1, 1, 2])
    cost = RolloutCost(env_ids, 3, power=1.0, floor=0.1)
    assert np.isnan(cost.estimate()).all() and (cost.factor() == 1.0).all()  # nothing reported: no opinion
    cost.observe([RolloutGroup(0, (0.0, 1.0), tokens=(100.0, 300.0)), RolloutGroup(3, (1.0, 1.0), tokens=(2000.0, 2000.0)),
                  RolloutGroup(4, (0.0, 1.0))])  # fmt: skip  (a group without tokens says nothing of cost)
    est = cost.estimate()
    assert est[0] == 200.0 and est[1] == est[2] == 200.0  # never run: its environment's mean
    assert est[3] == est[4] == 2000.0 and est[5] == pytest.approx(1100.0)  # no task of env 2 run: the pool's
    cost.observe([RolloutGroup(0, (0.0, 1.0), tokens=(400.0, 400.0))])
    assert cost.estimate()[0] == 300.0  # an EMA over its groups
    f = cost.factor()
    assert f[0] > 1.0 > f[3] and f[0] / f[3] == pytest.approx(2000.0 / 300.0)


def test_the_floor_keeps_a_costly_task_at_a_share_of_its_priority():
    cost = RolloutCost(np.array([0, 1]), 2, power=1.0, floor=0.25)
    cost.observe([RolloutGroup(0, (0.0, 1.0), tokens=(10.0, 10.0)), RolloutGroup(1, (0.0, 1.0), tokens=(1e5, 1e5))])
    assert cost.factor().tolist() == [4.0, 0.25]


def test_tokens_are_checked_like_lengths():
    with pytest.raises(ValueError, match="tokens must be finite"):
        validate_groups([RolloutGroup(0, (0.0, 1.0), tokens=(5.0,))], 1)
    with pytest.raises(ValueError, match="tokens must be finite"):
        validate_groups([RolloutGroup(0, (0.0, 1.0), tokens=(5.0, -1.0))], 1)
    assert validate_groups([RolloutGroup(0, (0.0, 1.0), tokens=(5, 7))], 1)[0].tokens == (5.0, 7.0)


def _two_envs():
    specs = [TaskSpec("short", f"s{i}", tools=(f"a{i % 5}",)) for i in range(60)]
    specs += [TaskSpec("long", f"l{i}", tools=(f"b{i % 5}",)) for i in range(60)]
    return specs


def _run(cost: float, steps: int = 12) -> dict[str, int]:
    """Both environments equally informative (pass rate 1/2); a `long` rollout costs 20x the tokens."""
    specs = _two_envs()
    sched = build_scheduler("envsched", specs, seed=0, cost=cost)
    rng = np.random.default_rng(0)
    picks = {"short": 0, "long": 0}
    for _ in range(steps):
        batch = sched.select(8)
        groups = []
        for i in batch:
            env = specs[i].env
            picks[env] += 1
            tokens = 100.0 if env == "short" else 2000.0
            groups.append(RolloutGroup(i, tuple((rng.random(8) < 0.5).astype(float)), tokens=(tokens,) * 8))
        sched.update(groups)
    return picks


def test_cost_aware_envsched_prefers_cheap_informative_tasks_without_starving_the_costly_environment():
    plain, aware = _run(0.0), _run(1.0)
    assert aware["short"] > plain["short"]
    assert aware["long"] >= 12 // 4  # the quota's starvation rule: a slot at least every 4 steps


def test_the_decision_records_the_cost_factor_and_a_checkpoint_without_costs_still_loads():
    specs = _two_envs()
    sched = build_scheduler("envsched", specs, seed=0, cost=1.0)
    batch = sched.select(8)
    sched.update([RolloutGroup(i, (0.0, 1.0), tokens=(50.0, 50.0)) for i in batch])
    sched.select(8)
    assert all("cost_factor" in row for row in sched.last_decision().rows)
    old = build_scheduler("envsched", specs, seed=0)  # cost=0: its checkpoint has no cost state
    old.update([RolloutGroup(i, (0.0, 1.0)) for i in old.select(8)])
    resumed = build_scheduler("envsched", specs, seed=0, cost=1.0)
    resumed.load_state_dict(old.state_dict())  # costs are learned afresh from the next rollouts
    assert not resumed.cost.known.any()
    again = build_scheduler("envsched", specs, seed=0, cost=1.0)
    again.load_state_dict(sched.state_dict())
    np.testing.assert_array_equal(again.cost.tokens, sched.cost.tokens)
