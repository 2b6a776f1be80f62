"""A DDP run's processes exit cleanly once they end their process group (2 real gloo processes on CPU).

With `dist.destroy_process_group()` alone, 3 runs of 5 of `process_group_exit_probe.py` aborted at
exit ("terminate called without an active exception"), and the 2-process TRL run of
`adapters/test_trl_distributed.py` hung after its work in 3 runs of 11. Without the pause at exit
in `end_process_group`, 3 runs of 45 still aborted on a loaded machine."""

from __future__ import annotations

import sys
from pathlib import Path

PROBE = Path(__file__).with_name("process_group_exit_probe.py")


def test_both_ranks_exit_after_ending_the_group_with_a_collective_in_flight(tmp_path, repo_env, free_port,
                                                                           run_together):
    cmds = [[sys.executable, str(PROBE), str(rank), str(free_port), str(tmp_path)] for rank in (0, 1)]
    for rank, (code, log) in enumerate(run_together(cmds, repo_env, timeout=90)):
        assert code == 0, f"rank {rank}: {log[-3000:]}"
        assert (tmp_path / f"rank{rank}.done").read_text() == "ok"
