"""The TRL script docs/adapters.md shows runs as written: specs from columns, two reward functions of
which one is signed, a quota, and the scheduler's metrics in TRL's log history."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("trl")

import torch  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "adapters.md"


def _trl_script() -> str:
    trl_section = DOC.read_text().split("\n## TRL\n", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```python\n(.*?)```", trl_section, re.S) if "EnvSchedGRPOTrainer(" in b]
    assert len(blocks) == 1, "docs/adapters.md's TRL section should hold one complete script"
    return blocks[0]


def test_the_documented_trl_script_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # its output_dir is relative
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    namespace: dict = {}
    try:
        exec(compile(_trl_script(), str(DOC), "exec"), namespace)
    finally:
        torch.set_num_threads(threads)
    trainer = namespace["trainer"]
    assert trainer.state.global_step == 2 and trainer.generations == 2
    assert trainer.reward_range.lo == -1.0 and trainer.reward_range.hi == 2.0
    logged = trainer.state.log_history[0]
    assert {f"sched/env_count/{e}" for e in ("add", "sub", "mul")} <= set(logged)
    assert logged["sched/reward_clipped_frac"] == 0.0  # the declared range holds the signed sum
    assert (tmp_path / "grpo_arith" / "checkpoint-2" / "envsched_scheduler.pt").is_file()
    assert "sched/env_count/add" in capsys.readouterr().out
