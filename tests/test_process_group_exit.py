"""A DDP run's processes exit cleanly once they end their process group (2 real gloo processes on CPU).

With `dist.destroy_process_group()` alone, about half the runs of `process_group_exit_probe.py`
aborted at exit ("terminate called without an active exception"), and the 2-process TRL run of
`adapters/test_trl_distributed.py` hung after its work in 3 runs of 11."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).with_name("process_group_exit_probe.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_both_ranks_exit_after_ending_the_group_with_a_collective_in_flight(tmp_path):
    env = os.environ | {"PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    port = _free_port()
    procs = [subprocess.Popen([sys.executable, str(PROBE), str(rank), str(port), str(tmp_path)], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for rank in (0, 1)]  # fmt: skip
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=90)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for rank, (p, log) in enumerate(zip(procs, logs)):
        assert p.returncode == 0, f"rank {rank}: {log[-3000:]}"
        assert (tmp_path / f"rank{rank}.done").read_text() == "ok"
