"""`scheduler_metrics`: the `sched/` numbers a host trainer logs, on a hand-built 4-task round."""

from __future__ import annotations

import pytest

from envsched_lightning.adapters.metrics import scheduler_metrics
from envsched_lightning.scheduling import Decision, RolloutGroup, TaskSpec, build_scheduler

SPECS = [TaskSpec("bank", "a"), TaskSpec("bank", "b"), TaskSpec("mail", "c"), TaskSpec("cal", "d")]


def _decision(predicted: list[float] | None) -> Decision:
    rows = [{"index": i, "env": SPECS[i].env, "task_id": SPECS[i].task_id, "priority": 0.0, "penalty": p}
            for i, p in zip((0, 1, 2), (0.0, 0.5, 1.0))]  # fmt: skip
    if predicted is not None:
        for row, p in zip(rows, predicted):
            row["predicted"] = p
    return Decision(step=3, indices=[0, 1, 2], rows=rows, env_counts={"bank": 2, "mail": 1}, relaxations=["x"])


GROUPS = [RolloutGroup(0, (0.0, 1.0)), RolloutGroup(1, (1.0, 1.0)), RolloutGroup(2, (0.0, 0.0))]  # std 0.5, 0, 0


def test_counts_zero_variance_and_predictions():
    m = scheduler_metrics(_decision([0.9, 0.1, 0.2]), GROUPS, SPECS, env_names=["bank", "mail", "cal"])
    assert {k: v for k, v in m.items() if k.startswith("sched/env_count/")} == {
        "sched/env_count/bank": 2.0, "sched/env_count/mail": 1.0, "sched/env_count/cal": 0.0}  # fmt: skip
    assert m["sched/zero_var_frac"] == pytest.approx(2 / 3)
    assert m["sched/zero_var_frac/bank"] == 0.5 and m["sched/zero_var_frac/mail"] == 1.0
    assert "sched/zero_var_frac/cal" not in m  # no group: no share to report
    # realised informativeness min(1, 2 std) = [1, 0, 0] against predicted [0.9, 0.1, 0.2]
    assert m["sched/pred_mean"] == pytest.approx(0.4) and m["sched/realised_mean"] == pytest.approx(1 / 3)
    assert m["sched/pred_abs_err"] == pytest.approx((0.1 + 0.1 + 0.2) / 3)
    assert m["sched/pred_corr"] > 0.9
    assert m["sched/penalty_mean"] == 0.5 and m["sched/quota_relaxations"] == 1.0


def test_without_predictions_or_decision():
    m = scheduler_metrics(_decision(None), GROUPS, SPECS)
    assert not any(k.startswith("sched/pred") for k in m)
    assert set(k for k in m if k.startswith("sched/env_count/")) == {"sched/env_count/bank", "sched/env_count/mail"}
    m = scheduler_metrics(None, GROUPS[:1], SPECS, env_names=["bank", "mail"])
    assert m == {"sched/env_count/bank": 1.0, "sched/env_count/mail": 0.0, "sched/zero_var_frac": 0.0,
                 "sched/zero_var_frac/bank": 0.0}  # fmt: skip


def test_from_a_real_envsched_decision():
    sched = build_scheduler("envsched", [TaskSpec("e", f"t{i}", tools=(f"x{i % 2}",)) for i in range(6)], seed=0)
    chosen = sched.select(3)
    groups = [RolloutGroup(i, (0.0, 1.0)) for i in chosen]
    m = scheduler_metrics(sched.last_decision(), groups, sched.specs, sched.env_names)
    assert m["sched/env_count/e"] == 3.0 and m["sched/zero_var_frac"] == 0.0
    assert m["sched/realised_mean"] == 1.0 and "sched/pred_mean" in m
