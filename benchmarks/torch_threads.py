"""Wall time of the CPU default run at several torch intra-op thread counts, as ratios to one thread.

Why the CPU experiments default to `torch_threads: 1`: the tiny model's matrices are too small to
split across cores, and on a shared machine extra threads wait for each other. Each setting runs
`train.py` (experiment tiny_cpu, shortened) in a fresh process, interleaved over `--repeats`
rounds so that load changes on the machine hit every setting alike; the table gives the median.

    .venv/bin/python -m benchmarks.torch_threads                     # 1, 2 and torch's default, 3 rounds
    .venv/bin/python -m benchmarks.torch_threads --threads 1 2 4 --steps 20
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_once(threads: str, steps: int, out: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}  # the setting under test decides
    cmd = [sys.executable, "train.py", f"torch_threads={threads}", f"steps={steps}", "logger=none", "callbacks=none",
           "++trainer.enable_checkpointing=false", f"hydra.run.dir={out}"]  # fmt: skip
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", nargs="+", default=["1", "2", "null"], help="values of torch_threads (null: torch's default)")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    times: dict[str, list[float]] = {t: [] for t in args.threads}
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        for r in range(args.repeats):
            for t in args.threads:
                times[t].append(run_once(t, args.steps, Path(tmp) / f"{t}_{r}"))
                print(f"round {r + 1}: torch_threads={t}: {times[t][-1]:.1f} s", flush=True)
    base = statistics.median(times[args.threads[0]])
    rows = [{"torch_threads": t, "median_s": statistics.median(v), "ratio": statistics.median(v) / base,
             "runs_s": [round(x, 1) for x in v]} for t, v in times.items()]  # fmt: skip
    print(f"train.py steps={args.steps} (tiny_cpu), {os.cpu_count()} cores, {args.repeats} interleaved rounds")
    print(f"| torch_threads | median wall s | ratio to {args.threads[0]} | runs |\n|---|---|---|---|")
    for row in rows:
        print(f"| {row['torch_threads']} | {row['median_s']:.1f} | {row['ratio']:.2f} | {row['runs_s']} |")
    return rows


if __name__ == "__main__":
    main()
