"""One of two gloo processes that end a DDP run the way our entry points do (`end_process_group`).

Each rank leaves an all-gather in flight whose tensors only the gloo worker thread still holds
(rank 1 joins it a second late), ends its group right away, drops its DDP model (whose reducer
holds a C++ reference to the group) and exits. The process must neither hang in the group's
destructor (joining a worker that waits for the GIL) nor abort at exit (a worker still alive).
Usage: process_group_exit_probe.py RANK PORT OUT_DIR
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from envsched_lightning.distributed import end_process_group


def main(rank: int, port: int, out: Path) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    model = DistributedDataParallel(torch.nn.Linear(2, 2))
    if rank == 1:
        time.sleep(1.0)  # rank 0's gather completes only now, while rank 0 is already ending its group
    dist.all_gather([torch.zeros(2), torch.zeros(2)], torch.full((2,), float(rank)), async_op=True)
    end_process_group()
    del model  # the reducer's reference to the group goes
    (out / f"rank{rank}.done").write_text("ok")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
