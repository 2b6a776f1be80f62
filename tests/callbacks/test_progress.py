"""The console's heartbeat in long phases (`callbacks.progress.ProgressPrinter`), with the real Trainer."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

from callbacks.heartbeat import Heartbeat
from callbacks.progress import ProgressPrinter
from envsched_lightning.stopping import WorkProgress
from tests.run_configs import tiny_cfg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # train.py is a script at the repository root
from train import train  # noqa: E402


def test_long_phases_print_what_is_done_the_time_so_far_and_the_time_left(tmp_path, capsys):
    """With a heartbeat shorter than any unit of work, every work point prints: the warm start by step with
    its loss, the evaluation before training by task, a step's rollouts by finished episode."""
    train(tiny_cfg(tmp_path, "steps=2", "callbacks.progress.heartbeat_s=0.000001"))
    out = capsys.readouterr().out.splitlines()
    clock = r"(\d+m\d\ds|\d+s)"
    assert any(re.fullmatch(rf"warm start: 1/2 steps, SFT loss \d+\.\d{{3}}, {clock}, ~{clock} left", line) for line in out)
    evals = [line for line in out if line.startswith("eval before training: ") and " tasks (" in line]
    assert evals and all(re.fullmatch(rf"eval before training: \d/3 tasks \(turn \d+\), {clock}(, ~{clock} left)?", e) for e in evals)
    assert any(re.fullmatch(rf"step 1/2: \d/6 rollouts finished \(turn \d+\), {clock}", line) for line in out)
    assert out.index(evals[0]) < out.index(next(line for line in out if line.startswith("step 1/2 | reward")))


@pytest.mark.parametrize("bad", [-1, "20", True])
def test_a_bad_heartbeat_is_refused_with_its_key(bad):
    with pytest.raises(ValueError, match="callbacks.progress.heartbeat_s must be a number of seconds >= 0"):
        ProgressPrinter(heartbeat_s=bad)


def test_a_unit_of_work_longer_than_the_interval_still_gets_its_lines_until_the_phase_ends():
    """One warm-start step of a real model can take minutes: the heartbeat's thread keeps printing
    the latest work point meanwhile, and stops once the phase is over."""
    lines: list[str] = []
    beat = Heartbeat(0.001, lines.append, lambda work, so_far, left: f"{work.phase} {work.done}/{work.total} {left}")
    beat.begin()
    time.sleep(0.01)  # the first unit took longer than the interval
    beat.report(WorkProgress("warm start", 1, 30))
    assert lines and lines[0].startswith("warm start 1/30 ")  # due at the work point itself
    for _ in range(300):  # no further work point: the thread's lines (it looks once a second)
        if len(lines) > 1:
            break
        time.sleep(0.1)
    assert lines[1].startswith("warm start 1/30 ")
    beat.end()
    time.sleep(0.05)  # a line the thread was printing as the phase ended
    printed = len(lines)
    time.sleep(2.5)
    assert len(lines) == printed  # no phase, no lines
    beat.close()
