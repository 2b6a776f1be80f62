"""`EnvSchedGRPOTrainer` in 2 processes (torchrun, gloo, CPU): every rank generates on rank 0's
choice in TRL's layout, each group's rewards (one group split over both ranks) reach the scheduler
once, the `sched/` metrics are logged on both ranks, and with ``save_on_each_node`` both nodes
write rank 0's scheduler state, not their own idle copy."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

import torch  # noqa: E402

from envsched_lightning.adapters.mapping import repeat_layout  # noqa: E402
from envsched_lightning.adapters.trl import SCHEDULER_FILE  # noqa: E402
from envsched_lightning.checkpoints import read_state  # noqa: E402

PROBE = Path(__file__).with_name("trl_probe.py")


def _launch(out: Path, env: dict[str, str], port: int, run_together) -> list[dict]:
    """Two torchrun nodes of one process each, on this machine."""
    env = env | {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmds = [[sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1", f"--node-rank={node}",
             "--master-addr=127.0.0.1", f"--master-port={port}", str(PROBE), str(out)] for node in (0, 1)]  # fmt: skip
    for code, log in run_together(cmds, env, timeout=300):
        assert code == 0, log[-4000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]


def test_two_processes_generate_on_rank_zeros_choice_and_report_each_group_once(tmp_path, repo_env, free_port,
                                                                                  run_together):
    r0, r1 = _launch(tmp_path, repo_env, free_port, run_together)
    assert (r0["rank"], r1["rank"], r0["world"]) == (0, 1, 2)
    g, generations = 2, 4
    assert [kind for kind, _ in r0["events"]] == ["select", "update"] * generations  # strictly online
    assert r1["events"] == []  # only rank 0's scheduler selects and learns
    assert r0["history_step"] == r0["generations"] == r1["generations"] == generations
    assert r1["history_step"] == 0
    assert len(r0["scored"]) == len(r1["scored"]) == generations  # each generation scored once per rank

    for k in range(generations):
        chosen, groups = r0["events"][2 * k][1], r0["events"][2 * k + 1][1]
        assert len(chosen) == 3
        # each rank generated on its contiguous slice of the chosen tasks, each repeated g times
        rows = r0["scored"][k]["rows"] + r1["scored"][k]["rows"]
        keys = {i: tuple(rows[j * g]) for j, i in enumerate(chosen)}
        for rank, rec in ((0, r0), (1, r1)):
            assert [tuple(row) for row in rec["scored"][k]["rows"]] == [keys[i] for i in repeat_layout(chosen, g, 2, rank)]
        # one group per chosen task with the rewards and lengths its rollouts got, on whichever rank
        rewards = r0["scored"][k]["rewards"] + r1["scored"][k]["rewards"]
        lengths = r0["scored"][k]["lengths"] + r1["scored"][k]["lengths"]
        assert [grp[0] for grp in groups] == chosen
        assert [grp[1] for grp in groups] == [rewards[j * g:(j + 1) * g] for j in range(3)]
        assert [grp[2] for grp in groups] == [lengths[j * g:(j + 1) * g] for j in range(3)]
    # the scheduler's metrics are in both ranks' log history, the same numbers
    assert r0["logged"] and r0["logged"] == r1["logged"]
    assert all(sum(v for key, v in e.items() if key.startswith("sched/env_count/")) == 3 for e in r0["logged"])

    # save_on_each_node: both nodes wrote rank 0's state (2 updates at checkpoint-2), not rank 1's idle one
    states = [read_state(tmp_path / f"node{r}" / "checkpoint-2" / SCHEDULER_FILE) for r in (0, 1)]
    assert [s["history"]["step"] for s in states] == [2, 2]
    for name in ("count", "ema_mean", "ema_len"):
        assert (states[0]["history"][name] == states[1]["history"][name]).all()
    assert states[0]["history"]["ema_len"].max() > 0  # completion lengths reached the history
    assert not list(tmp_path.glob("node*/checkpoint-*/*.tmp"))
