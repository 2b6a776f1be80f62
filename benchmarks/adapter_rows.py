"""A million-row dataset through the adapters' helpers: specs from its columns, the task index,
each task's row, then a scheduler over those specs. Time and memory of each stage.

    python -m benchmarks.adapter_rows [--rows 1000000] [--scheduler envsched]

The dataset is a dict of Python columns, as `datasets.Dataset[column]` hands them over (env, task
id, a list of tool names per row, a verifier; 64 environments, tools shared by the rows of a
template). `MB` is the resident memory a stage added and kept; `peak MB` the process's peak so
far. Run in a fresh process so the peak is its own.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import time

import numpy as np


def resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dataset_columns(n: int, seed: int = 0) -> dict[str, list]:
    rng = np.random.default_rng(seed)
    template = rng.integers(0, max(1, n // 20), n)
    env = (template % 64).tolist()
    tools = [[f"e{e}.tool{(t * 7 + k) % 12}" for k in range(1 + t % 3)] for e, t in zip(env, template.tolist())]
    return {"env": [f"env{e}" for e in env], "task_id": [f"t{i}" for i in range(n)], "tools": tools,
            "verifier": ["state_match"] * n}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--scheduler", default="envsched", help="a build_scheduler name, or 'none'")
    args = parser.parse_args(argv)

    from envsched_lightning.adapters.mapping import TaskIndex
    from envsched_lightning.adapters.specs import specs_from_rows
    from envsched_lightning.scheduling import build_scheduler

    table: list[tuple[str, float, float, float]] = []
    gc.collect()
    start = resident_mb()
    last = start

    def stage(name: str, seconds: float) -> None:
        nonlocal last
        gc.collect()
        now = resident_mb()
        table.append((name, seconds, now - last, peak_mb()))
        last = now

    t0 = time.perf_counter()
    columns = dataset_columns(args.rows)
    stage("the dataset's columns (Python lists)", time.perf_counter() - t0)
    t0 = time.perf_counter()
    specs = specs_from_rows(columns, warn=False)
    stage(f"specs_from_rows -> TaskTable ({specs.nbytes() / 2**20:.0f} MB of columns)", time.perf_counter() - t0)
    t0 = time.perf_counter()
    index = TaskIndex(specs)
    stage("TaskIndex", time.perf_counter() - t0)
    t0 = time.perf_counter()
    rows = index.rows(zip(columns["env"], columns["task_id"]))
    stage("TaskIndex.rows (each task's row)", time.perf_counter() - t0)
    assert len(rows) == args.rows
    if args.scheduler != "none":
        t0 = time.perf_counter()
        scheduler = build_scheduler(args.scheduler, specs, seed=0)
        stage(f"build_scheduler({args.scheduler!r})", time.perf_counter() - t0)
        scheduler.select(min(512, args.rows))
    print(f"{args.rows:,} rows; resident before: {start:.0f} MB\n")
    print("| stage | s | MB kept | peak MB |")
    print("|---|---|---|---|")
    for name, seconds, kept, peak in table:
        print(f"| {name} | {seconds:.1f} | {kept:+.0f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
