"""Scheduler cost at 10k, 100k and 1M tasks: select + update wall time per step and peak memory.

    python -m benchmarks.scheduler_scaling [--sizes 10000 100000 1000000] [--steps 30]

Each (scheduler, N) runs in its own process so peak RSS is its own. Tasks come from templates
(shared tools, state keys, execution pattern), about 10 intra- plus 5 cross-environment edges per
node; batch 512, groups of 8 with rewards drawn from a per-task pass rate. The ratio column
compares with a plain uniform `select` on the same N, measured in the same run. `ms/step` is
the mean over all measured steps, so it includes envsched's periodic cross-edge refresh (every 10
steps by default) amortised; `median` is a step without one.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

from envsched_lightning.scheduling import RolloutGroup, TaskSpec, build_scheduler

PATTERNS = ("single", "lookup_write", "multi_hop", "parallel", "clarify", "refuse")


def synthetic_specs(n: int, seed: int = 0) -> tuple[list[TaskSpec], np.ndarray]:
    rng = np.random.default_rng(seed)
    n_envs = int(np.clip(n // 2000, 4, 64))
    per_template = 20
    tpl_env = rng.integers(0, n_envs, n // per_template + 1)
    tpl_tools = [tuple(f"e{e}.tool{k}" for k in rng.choice(12, size=int(rng.integers(1, 4)), replace=False)) for e in tpl_env]
    tpl_pattern = rng.integers(0, len(PATTERNS), tpl_env.shape[0])
    tpl_rate = rng.beta(0.3, 0.3, tpl_env.shape[0])
    tpl = rng.integers(0, tpl_env.shape[0], n)
    specs = []
    feats = [{"n_calls": float(1 + p % 3), f"pattern_{PATTERNS[p]}": 1.0} for p in range(len(PATTERNS))]
    for i, t in enumerate(tpl.tolist()):
        e = int(tpl_env[t])
        specs.append(TaskSpec(env=f"env{e}", task_id=f"t{i}", tools=tpl_tools[t], state_keys=(f"e{e}.db{t % 5}",),
                              verifier="state_match", features=feats[int(tpl_pattern[t])]))
    return specs, np.clip(tpl_rate[tpl] + rng.normal(0, 0.1, n), 0, 1)


def measure(name: str, n: int, steps: int, batch: int) -> dict:
    specs, rate = synthetic_specs(n)
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    sched = build_scheduler(name, specs, seed=0)
    build_s = time.perf_counter() - t0
    times = []
    for step in range(steps + 1):
        t0 = time.perf_counter()
        idx = sched.select(batch)
        t_sel = time.perf_counter() - t0
        groups = [RolloutGroup(i, (rng.random(8) < rate[i]).astype(float).tolist()) for i in idx]
        t0 = time.perf_counter()
        sched.update(groups)
        if step:  # the first step pays one-off warm-up (code generation, caches)
            times.append(t_sel + time.perf_counter() - t0)
    edges = None
    if hasattr(sched, "graph"):
        edges = int(sched.graph.intra.indices.size + sched.graph.cross.indices.size)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"scheduler": name, "N": n, "edges": edges, "build_s": build_s, "ms_per_step": 1000 * float(np.mean(times)),
            "median_ms": 1000 * float(np.median(times)), "peak_rss_mb": peak_mb}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--schedulers", nargs="*", default=["random", "envsched"])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--worker", nargs=2, metavar=("NAME", "N"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        print(json.dumps(measure(a.worker[0], int(a.worker[1]), a.steps, a.batch_size)))
        return
    rows = []
    for n in a.sizes:
        for name in a.schedulers:
            cmd = [sys.executable, "-m", "benchmarks.scheduler_scaling", "--worker", name, str(n), "--steps", str(a.steps),
                   "--batch-size", str(a.batch_size)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"  {name:9s} N={n:>9,d}  {rows[-1]['ms_per_step']:9.1f} ms/step", flush=True)
    base = {r["N"]: r for r in rows if r["scheduler"] == "random"}
    print("\n| scheduler | N | edges | build s | ms/step | median | x uniform select | peak RSS MB | RSS / uniform |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        b = base.get(r["N"])
        ratio = r["ms_per_step"] / b["ms_per_step"] if b else float("nan")
        mem = r["peak_rss_mb"] / b["peak_rss_mb"] if b else float("nan")
        print(f"| {r['scheduler']} | {r['N']:,} | {r['edges'] or '-'} | {r['build_s']:.1f} | {r['ms_per_step']:.1f} | {r['median_ms']:.1f} | "
              f"{ratio:.1f} | {r['peak_rss_mb']:.0f} | {mem:.2f} |")


if __name__ == "__main__":
    main()
