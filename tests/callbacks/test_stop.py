"""SIGTERM / SIGINT stop a run promptly with a resumable checkpoint of its last completed GRPO step
(`callbacks.stop.StopOnSignal`), end to end with the real Trainer, tiny model and DataModule."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from envsched_lightning.checkpoints import read_checkpoint
from tests.run_configs import TINY, tiny_cfg

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # train.py is a script at the repository root, not a package module
from train import train  # noqa: E402

PROBE = "+callbacks.probe._target_=tests.callbacks.signal_probe.SignalAtWorkPoint"
COMMON = ("data.steps_per_epoch=2", "model.warm_start.steps=20")  # warm enough for non-zero rewards


def decisions(log_dir: str) -> dict[int, list[tuple[str, str, float]]]:
    lines = (Path(log_dir) / "sched_decisions.jsonl").read_text().splitlines()
    return {rec["step"]: [(r["env"], r["task_id"], r["priority"]) for r in rec["rows"]] for rec in map(json.loads, lines)}


@pytest.mark.parametrize(("phase", "where"), [("rollouts", "in GRPO step 3 ("), ("eval", "in the evaluation after step 2 (")])
def test_a_signal_after_a_completed_step_saves_it_and_the_resumed_run_goes_on_as_if_uninterrupted(
    tmp_path, capsys, phase, where
):
    """SIGTERM in step 3's rollouts (the step is dropped) or in the evaluation after step 2 (data.steps_per_epoch=2):
    last.ckpt holds step 2, and the resumed run selects and scores steps 3 and 4 as the uninterrupted run did."""
    full = train(tiny_cfg(tmp_path / "full", *COMMON, "steps=4"))
    with pytest.raises(SystemExit) as stopped:
        train(tiny_cfg(tmp_path / "part", *COMMON, "steps=4", PROBE, f"+callbacks.probe.phase={phase}",
                       "+callbacks.probe.after_step=2"))  # fmt: skip
    assert stopped.value.code == 143
    line = capsys.readouterr().out.strip().splitlines()[-1]
    ckpt = tmp_path / "part" / "checkpoints" / "last.ckpt"
    assert line.startswith(f"stopped by SIGTERM {where}")
    assert f"last completed GRPO step 2, checkpoint {ckpt}; resume with: python train.py " in line
    assert line.endswith(f" ckpt_path={ckpt}")  # (the command's overrides: see the test run from outside)
    state = read_checkpoint(str(ckpt))
    assert state["EnvSchedDataModule"]["step"] == 2
    assert state["EnvSchedDataModule"]["scheduler"]["history"]["step"] == 2  # nothing of step 3 was heard
    resumed = train(tiny_cfg(tmp_path / "resumed", *COMMON, "steps=4", f"ckpt_path={ckpt}"))
    assert resumed["objects"]["datamodule"].step == 4
    want, got = decisions(full["log_dir"]), decisions(resumed["log_dir"])
    assert sorted(got) == [3, 4] and all(got[s] == want[s] for s in (3, 4))  # scheduler and RNG, bit for bit (steps 1-based)


@pytest.mark.parametrize(("phase", "where"), [
    ("warm start", "in the warm start (step 0/2)"),
    ("eval", "in the evaluation before training (0/3 tasks)"),
    ("rollouts", "in GRPO step 1 (rollouts 0/6)"),
])  # fmt: skip
def test_a_signal_before_the_first_completed_step_stops_at_once_with_nothing_to_resume(tmp_path, capsys, phase, where):
    """Before the first completed step nothing would be saved: the signal stops the run where it is
    (at the work point it came at, not the next one)."""
    with pytest.raises(SystemExit) as stopped:
        train(tiny_cfg(tmp_path, "steps=4", PROBE, f"+callbacks.probe.phase={phase}",
                       f"+callbacks.probe.signum={int(signal.SIGINT)}"))  # fmt: skip
    assert stopped.value.code == 130
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith(f"stopped by SIGINT {where}: no GRPO step was completed, nothing to resume; run ")
    assert not (tmp_path / "checkpoints").exists()


def test_sigterm_from_outside_stops_the_run_which_resumes_to_its_steps(tmp_path):
    """A real `python train.py` run: SIGTERM after its 4th step ends it long before its 40 steps, with a
    checkpoint at its last completed step, and the printed command resumes it (here to two steps more)."""
    args = [sys.executable, "train.py", *TINY, "steps=40", "data.steps_per_epoch=3", f"hydra.run.dir={tmp_path}/run"]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = []
    for line in proc.stdout:
        out.append(line)
        if line.startswith("step 4/40 | "):
            proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=300) == 143, "".join(out)
    last = out[-1]
    step = int(last.split("last completed GRPO step ")[1].split(",")[0])
    assert 4 <= step < 40 and not any(line.startswith("step 40/40") for line in out)
    ckpt = last.split("ckpt_path=")[1].strip()
    assert read_checkpoint(ckpt)["EnvSchedDataModule"]["step"] == step
    command = last.split("resume with: ")[1].split()
    assert command[:2] == ["python", "train.py"] and "steps=40" in command
    more = f"steps={step + 2}"  # the printed command, two steps further
    command = [sys.executable, "train.py"] + [more if a == "steps=40" else a for a in command[2:]]
    resumed = subprocess.run(command + [f"hydra.run.dir={tmp_path}/resumed"], cwd=REPO, capture_output=True,
                             text=True, timeout=300)  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"training: {step + 2} GRPO steps from step {step}" in resumed.stdout
    assert f"step {step + 1}/{step + 2} | reward" in resumed.stdout and f"step {step + 2}/{step + 2} | reward" in resumed.stdout
