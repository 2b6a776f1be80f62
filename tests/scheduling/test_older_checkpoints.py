"""Checkpoints written by an earlier version (the code at commit 386040b, before learning progress,
the additive candidate and the columnar fill) load into today's schedulers.

The files are real: `scripts/write_scheduler_states.py` run in a checkout of that commit wrote every
scheduler's state after 12 steps on a 60-task pool, and the picks of the 4 steps that followed.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from envsched_lightning.checkpoints import read_state
from envsched_lightning.scheduling import build_scheduler

FIXTURES = Path(__file__).parent / "fixtures" / "states_386040b"
_spec = importlib.util.spec_from_file_location("write_scheduler_states", Path(__file__).parents[2] / "scripts" / "write_scheduler_states.py")
writer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(writer)
PICKS_AFTER = json.loads((FIXTURES / "picks_after.json").read_text())


def _load(name: str, **options):
    sched = build_scheduler(name, writer.pool(), seed=3, **options)
    state = read_state(FIXTURES / f"{name}.ckpt")
    sched.load_state_dict(state)
    return sched, state


@pytest.mark.parametrize("name", ["random", "mopps", "plr", "greso", "sec"])
def test_a_baseline_resumes_an_older_checkpoint_exactly_where_that_version_went_on(name):
    sched, _ = _load(name)
    assert writer.drive(sched, range(12, 16)) == PICKS_AFTER[name]


def test_envsched_resumes_an_older_checkpoint_with_its_history_and_state():
    """envsched's ranking changed since (ties, gating), so its next picks may differ from that
    version's; what was learned must come back whole and the run must go on."""
    sched, state = _load("envsched")
    for key in ("count", "last_step", "ema_mean", "ema_std"):
        np.testing.assert_array_equal(getattr(sched.history, key), state["history"][key])
    assert sched.history.step == 12 and sched.evaluated == state["extra"]["evaluated"]
    np.testing.assert_array_equal(sched.first_seen, state["extra"]["first_seen"])
    assert "ppr" not in state["extra"]  # that version did not save the propagated sums: rebuilt from the history
    loaded = sched.ppr.f.copy()
    sched.ppr.reset(2 * sched.history.ema_std.astype(np.float64), sched.history.observed)
    np.testing.assert_array_equal(loaded, sched.ppr.f)
    assert sched.graph.refreshes == state["extra"]["graph"]["refreshes"] > 0  # the cross edges of that run
    picks = writer.drive(sched, range(12, 16))
    assert all(len(set(p)) == 6 and all(0 <= i < 60 for i in p) for p in picks)
    assert sched.history.step == 16


def test_learning_progress_the_older_checkpoint_lacks_starts_afresh_from_the_resume():
    sched = build_scheduler("envsched", writer.pool(), seed=3, progress=True)
    sched.load_state_dict(read_state(FIXTURES / "envsched.ckpt"))
    assert sched.history.step == 12 and not sched.progress.n.any()  # trends are judged from here on
    writer.drive(sched, range(12, 16))
    assert sched.progress.n.sum() == 4 * 6 and sched.history.step == 16


@pytest.mark.parametrize("option, what", [("dependence", "dependence state"), ("additive", "additive model")])
def test_an_option_the_older_checkpoint_lacks_is_refused_with_how_to_resume(option, what):
    sched = build_scheduler("envsched", writer.pool(), seed=3, **{option: True})
    with pytest.raises(ValueError, match=f"no {what}.*resume with scheduler.{option}=false"):
        sched.load_state_dict(read_state(FIXTURES / "envsched.ckpt"))
    assert sched.history.step == 0 and not sched.history.count.any()  # refused before anything was loaded
