"""Scheduler cost at 10k, 100k and 1M tasks: select + update wall time per step and peak memory.

    python -m benchmarks.scheduler_scaling [--sizes 10000 100000 1000000] [--steps 30] [--before TREE] [--repeat R]

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
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from envsched_lightning.scheduling import RolloutGroup, TaskSpec, build_scheduler
from envsched_lightning.scheduling.registry import scheduler_names

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


def synthetic_table(n: int, seed: int = 0):
    """The pool of `synthetic_specs` (same draws), built as a `TaskTable` from template-level codes:
    no Python object per task (only the keys' strings while they are joined)."""
    from envsched_lightning.scheduling.task_table import TaskTable

    rng = np.random.default_rng(seed)
    n_envs = int(np.clip(n // 2000, 4, 64))
    per_template = 20
    tpl_env = rng.integers(0, n_envs, n // per_template + 1)
    vocab: dict[str, int] = {}

    def code(text: str) -> int:
        return vocab.setdefault(text, len(vocab))

    tpl_tools = [[code(f"e{e}.tool{k}") for k in rng.choice(12, size=int(rng.integers(1, 4)), replace=False)]
                 for e in tpl_env.tolist()]  # fmt: skip
    tpl_pattern = rng.integers(0, len(PATTERNS), tpl_env.shape[0])
    tpl_rate = rng.beta(0.3, 0.3, tpl_env.shape[0])
    tpl = rng.integers(0, tpl_env.shape[0], n)
    rate = np.clip(tpl_rate[tpl] + rng.normal(0, 0.1, n), 0, 1)
    env_of = tpl_env[tpl]
    first = np.unique(env_of, return_index=True)  # environments in order of first appearance, as specs give
    order = first[0][np.argsort(first[1])]
    env_code = np.empty(n_envs, np.int64)
    env_code[order] = np.arange(order.size)

    def csr(per_tpl: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        lens = np.array([len(x) for x in per_tpl], np.int64)
        flat = np.array([c for x in per_tpl for c in x], np.int32)
        starts = np.concatenate([[0], np.cumsum(lens)])
        indptr = np.concatenate([[0], np.cumsum(lens[tpl])])
        pos = np.repeat(starts[tpl] - indptr[:-1], lens[tpl]) + np.arange(indptr[-1])
        return indptr, flat[pos]

    state = [[code(f"e{e}.db{t % 5}")] for t, e in enumerate(tpl_env.tolist())]
    verifier, reward = code("state_match"), code("binary")
    feat_codes = np.array([[code("n_calls"), code(f"pattern_{PATTERNS[p]}")] for p in range(len(PATTERNS))], np.int32)
    feat_values = np.array([[float(1 + p % 3), 1.0] for p in range(len(PATTERNS))])
    pattern = tpl_pattern[tpl]
    fptr = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
    fnames, fvalues = feat_codes[pattern].reshape(-1), feat_values[pattern].reshape(-1)
    table = TaskTable.from_codes(
        env_names=[f"env{e}" for e in order.tolist()], env_ids=env_code[env_of], task_ids=[f"t{i}" for i in range(n)],
        vocab=list(vocab), tools=csr(tpl_tools), state_keys=csr(state), verifier=np.full(n, verifier),
        reward_type=np.full(n, reward), features=(fptr, fnames, fvalues),
    )  # fmt: skip
    return table, rate


def measure(name: str, n: int, steps: int, batch: int) -> dict:
    t0 = time.perf_counter()
    specs, rate = synthetic_table(n)
    table_s = time.perf_counter() - t0
    rng = np.random.default_rng(1)
    scheduler_names()  # imports every scheduler module now: one-off import time is not build time
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
    save_s, load_s, ckpt_mb = checkpoint_round_trip(sched, name, specs)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"scheduler": name, "N": n, "edges": edges, "table_s": table_s, "build_s": build_s,
            "ms_per_step": 1000 * float(np.mean(times)), "median_ms": 1000 * float(np.median(times)),
            "save_s": save_s, "load_s": load_s, "ckpt_mb": ckpt_mb, "peak_rss_mb": peak_mb}


def checkpoint_round_trip(sched, name: str, specs) -> tuple[float, float, float]:
    """(save s, load s, file MB): `state_dict` + the application's `write_state` (numpy packed as
    tensors, atomic), then `read_state` (`weights_only=True`) + `load_state_dict` into the same
    scheduler (a resumed run builds its scheduler anyway: the `build s` column). The loaded state
    must select what the saved one would."""
    import tempfile

    from envsched_lightning.checkpoints import read_state, write_state

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/scheduler.pt"
        t0 = time.perf_counter()
        write_state(sched.state_dict(), path)
        save_s = time.perf_counter() - t0
        size_mb = os.path.getsize(path) / 2**20
        rng_state = sched.rng.bit_generator.state
        want = sched.select(8)
        t0 = time.perf_counter()
        sched.load_state_dict(read_state(path))
        load_s = time.perf_counter() - t0
        sched.rng.bit_generator.state = rng_state
        if sched.select(8) != want:
            raise AssertionError(f"{name}: the loaded state selects differently")
    return save_s, load_s, size_mb


COLUMNS = ("code", "scheduler", "N", "edges", "table s", "build s", "ms/step", "median", "x uniform", "save s",
           "load s", "ckpt MB", "peak RSS MB", "RSS / uniform")


def run_worker(name: str, n: int, steps: int, batch: int, tree: Path | None = None) -> dict:
    """One (scheduler, N) in a fresh process, from this tree or from `tree` (another checkout of
    the project: its own benchmark and its own code measure themselves)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    cmd = [sys.executable, "-m", "benchmarks.scheduler_scaling", "--worker", name, str(n), "--steps", str(steps),
           "--batch-size", str(batch)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=tree, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_row(runs: list[dict]) -> dict:
    """One row from repeated measurements of the same (code, scheduler, N): each number its median,
    and the spread of the mean step time over the repeats."""
    row = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, float):
            row[key] = float(np.median([r[key] for r in runs]))
    steps = [r["ms_per_step"] for r in runs]
    row["ms_range"] = (min(steps), max(steps))
    row["repeats"] = len(runs)
    return row


def table_rows(rows: list[dict], ranges: bool = False) -> list[str]:
    base = {(r["code"], r["N"]): r for r in rows if r["scheduler"] == "random"}
    columns = COLUMNS[:8] + ("ms/step range",) + COLUMNS[8:] if ranges else COLUMNS
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        b = base.get((r["code"], r["N"]))

        def num(key: str, fmt: str) -> str:
            return format(r[key], fmt) if r.get(key) is not None else "-"

        cells = [r["code"], r["scheduler"], f"{r['N']:,}", f"{r['edges']:,}" if r.get("edges") else "-", num("table_s", ".1f"),
                 num("build_s", ".1f"), num("ms_per_step", ".1f"), num("median_ms", ".1f"),
                 f"{r['ms_per_step'] / b['ms_per_step']:.1f}" if b else "-", num("save_s", ".2f"), num("load_s", ".2f"),
                 num("ckpt_mb", ".0f"), num("peak_rss_mb", ".0f"), f"{r['peak_rss_mb'] / b['peak_rss_mb']:.2f}" if b else "-"]  # fmt: skip
        if ranges:
            lo, hi = r["ms_range"]
            cells.insert(8, f"{lo:.1f}-{hi:.1f}")
        out.append("| " + " | ".join(cells) + " |")
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--schedulers", nargs="*", default=["random", "mopps", "plr", "greso", "sec", "envsched"])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--before", type=Path, default=None,
                   help="another checkout of the project (e.g. `git worktree add .tmp/before REV`): each row is "
                   "also measured from it, right before the same row from this tree")  # fmt: skip
    p.add_argument("--repeat", type=int, default=1,
                   help="measure every row this many times, the trees taking turns (before, after, before, ...), "
                   "and report each column's median; `ms/step range` gives the spread over the repeats")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--worker", nargs=2, metavar=("NAME", "N"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        print(json.dumps(measure(a.worker[0], int(a.worker[1]), a.steps, a.batch_size)))
        return
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    rows = []
    trees = ([("before", a.before.resolve())] if a.before else []) + [("after" if a.before else "this", None)]
    for n in a.sizes:
        for name in a.schedulers:
            runs: dict[str, list[dict]] = {code: [] for code, _ in trees}
            for _ in range(a.repeat):  # the trees take turns, so a slow spell of the machine hits both
                for code, tree in trees:
                    r = run_worker(name, n, a.steps, a.batch_size, tree)
                    runs[code].append(r)
                    print(f"  {code:6s} {name:9s} N={n:>10,d}  build {r['build_s']:7.1f} s  {r['ms_per_step']:8.1f} "
                          f"ms/step  peak {r['peak_rss_mb']:7.0f} MB", flush=True)
            rows += [{"code": code} | median_row(runs[code]) for code, _ in trees]
    print()
    print("\n".join(table_rows(rows, ranges=a.repeat > 1)))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
