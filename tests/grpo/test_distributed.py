"""Under DDP the token-mean normaliser counts tokens over all ranks (2 real gloo processes on CPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("ddp_counts_probe.py")


def test_two_ranks_give_the_single_process_gradient(tmp_path, repo_env, free_port):
    sys.path.insert(0, str(PROBE.parent))
    try:
        import ddp_counts_probe as probe
    finally:
        sys.path.pop(0)
    run = subprocess.run([sys.executable, str(PROBE), str(tmp_path), str(free_port)], env=repo_env, cwd=REPO,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    _, mask, _ = probe.data()
    assert r0["counts"] == r1["counts"] == [5 / 2, float(mask.sum()) / 2]  # global counts over the world size
    single = probe.loss_grad(torch.ones(3, 1), [0, 1, 2, 3, 4], None, None).grad.flatten()
    torch.testing.assert_close(torch.tensor(r0["grad"]), single)
    torch.testing.assert_close(torch.tensor(r1["grad"]), single)
    # with each rank's own token count instead, rank 1's two tokens would weigh as much as rank 0's 24
    local0 = probe.loss_grad(torch.ones(3, 1), [0, 1, 2, 3], None, None).grad.flatten()
    local1 = probe.loss_grad(torch.ones(3, 1), [4], None, None).grad.flatten()
    assert not torch.allclose((local0 + local1) / 2, single, atol=1e-3)
