"""The callbacks on their own: argument checks, the quota check, the logger's rows and state."""

from __future__ import annotations

import math

import numpy as np
import pytest

from callbacks.env_quota import EnvQuotaCallback
from callbacks.plots import save_heatmap
from callbacks.scheduling_logger import SchedulingLoggerCallback, decision_rows, pearson
from callbacks.similarity_penalty import SimilarityPenaltyCallback
from envsched_lightning.scheduling import Decision, RolloutGroup, TaskSpec, build_scheduler

SPECS = tuple(TaskSpec(env, f"t{i}", tools=(f"x{i % 2}",)) for env in ("a", "b", "c") for i in range(4))


def decision(indices: list[int]) -> Decision:
    counts = {e: sum(SPECS[i].env == e for i in indices) for e in "abc"}
    rows = [{"index": i, "env": SPECS[i].env, "task_id": SPECS[i].task_id, "priority": 0.1 * i, "penalty": 0.0} for i in indices]
    return Decision(0, indices, rows, counts)


@pytest.mark.parametrize(
    ("cls", "kw", "match"),
    [
        (EnvQuotaCallback, dict(min_share=1.5), "callbacks.env_quota: min_share"),
        (EnvQuotaCallback, dict(per_env={"a": {"cap": 1}}), "unknown keys"),
        (SimilarityPenaltyCallback, dict(lam=-1.0), "callbacks.similarity_penalty: lam"),
        (SchedulingLoggerCallback, dict(plot_every=0), "plot_every must be a positive int"),
    ],
)
def test_bad_arguments_fail_in_init(cls, kw, match):
    with pytest.raises(ValueError, match=match):
        cls(**kw)


def test_install_is_idempotent_and_names_the_key_when_unmeetable():
    sched = build_scheduler("random", SPECS)
    cb = EnvQuotaCallback(max_share=0.5)
    cb.install(sched)
    cb.install(sched)
    assert sched.quota is cb.constraint
    with pytest.raises(ValueError, match="callbacks.env_quota: quota min_share values sum"):
        EnvQuotaCallback(min_share=0.4).install(build_scheduler("random", SPECS))
    with pytest.raises(ValueError, match="callbacks.env_quota: quota per_env names unknown"):
        EnvQuotaCallback(per_env={"zzz": {"max_share": 0.5}}).install(build_scheduler("random", SPECS))


def test_quota_violations_flags_only_what_breaks_the_caps():
    sched = build_scheduler("random", SPECS)
    cb = EnvQuotaCallback(max_share=0.34)
    cb.install(sched)
    sched.select(3)  # the quota's slot ranges for a batch of 3
    assert cb.constraint.violations(decision([0, 4, 8]).env_counts) == []
    assert cb.constraint.violations(decision([0, 1, 8]).env_counts) == ["a: 2 tasks, allowed 0..1"]
    for _ in range(20):  # and what the scheduler chooses under the installed quota holds it
        idx = sched.select(3)
        assert cb.constraint.violations(sched.last_decision().env_counts) == []
        sched.update([RolloutGroup(i, (0.0, 1.0)) for i in idx])


def test_rows_join_decision_and_rewards_and_the_correlation_is_guarded():
    d = decision([0, 5, 9])
    groups = [RolloutGroup(0, (0.0, 1.0)), RolloutGroup(5, (1.0, 1.0)), RolloutGroup(9, (0.0, 0.5))]
    rows = decision_rows(d, groups, SPECS)
    assert [r["task_id"] for r in rows] == ["t0", "t1", "t1"] and rows[0]["reward_std"] == 0.5
    assert rows[1]["predicted"] == rows[1]["priority"]  # no `predicted` component: the priority stands in
    assert pearson([1, 2, 3], [1, 1, 1]) is None and math.isclose(pearson([1, 2, 3], [2, 4, 6.5]), 0.99, abs_tol=0.01)


def test_logger_state_round_trips_and_heatmap_is_written(tmp_path):
    cb = SchedulingLoggerCallback()
    cb.env_names = ["a", "b", "c"]
    d = decision([0, 5])
    groups = [RolloutGroup(0, (0.0, 1.0, 1.0)), RolloutGroup(5, (1.0, 1.0, 0.0))]
    cb._record(7, decision_rows(d, groups, SPECS), groups, SPECS)
    other = SchedulingLoggerCallback()
    other.load_state_dict(cb.state_dict())
    assert other.rollouts == [[3, 3, 0]] and other.first_step == 7 and len(other.points) == 2
    path = save_heatmap(np.asarray(other.rollouts, float).T, other.env_names, tmp_path / "h.png", other.first_step)
    assert path.stat().st_size > 1000


def test_a_custom_schedulers_own_components_reach_the_rows():
    """A scheduler scoring by its own components logs those, not envsched's (`coverage` absent, not 0)."""
    from envsched_lightning.scheduling import Scheduler

    class Fewest(Scheduler):
        name = "fewest"

        def _priorities(self, batch_size):
            novelty = 1.0 / (1.0 + self.history.count)  # [N]
            return {"priority": novelty + 1e-3 * self.rng.random(self.num_tasks), "novelty": novelty}

    sched = Fewest(SPECS, seed=0)
    idx = sched.select(3)
    rows = decision_rows(sched.last_decision(), [RolloutGroup(i, (0.0, 1.0)) for i in idx], SPECS)
    assert all(r["novelty"] == 1.0 and r["coverage"] is None for r in rows)
    assert list(rows[0])[:9] == ["step", "env", "task_id", "priority", "predicted", "coverage", "penalty",
                                 "reward_mean", "reward_std"]  # fmt: skip
