"""Near-copies in a real pool: BFCL v4's live categories, and how many land in one batch.

    python -m envsched_lightning.data fetch bfcl        # once: BFCL v4 into the data root
    python -m benchmarks.near_copies [--steps 40] [--batch 32] [--seeds 3]

The pool is every task of BFCL's six live categories (v4 where the data root has it, else v3),
read from the data root as training reads it (`$ENVSCHED_DATA`, else the folder `data fetch`
fills; `--data-dir` to point at a BFCL folder).
Many live tasks offer one API document (up to 136 tasks share a tool set), so they are near-copies
of each other however their questions differ. The table first describes the pool's near-copy
groups (`scheduling/near_copies.py`, at the scheduler's default threshold) and, independently of
the detector, its groups of tasks offering the identical function document.

Then each scheduler picks `--steps` batches. Rewards come from a stand-in policy (no model runs
here): each distinct function document has a success logit ~ N(0, 1.5), each task its own offset
~ N(0, 0.5), so tasks that share a document are about equally informative, as they would be for
a real policy; each group of G = 8 rewards is drawn from the task's pass rate, and every trained
group moves its document's logit by 0.1 x its reward spread. Per batch: the share of picks that
are the second or later of their group in that batch (`repeat_share`, by detected group and by
identical document) and the most picks of one group (`max_copies`); means over steps and seeds.
"""

from __future__ import annotations

import argparse
import collections
import json
import time

import numpy as np

from envsched_lightning.envs.bfcl.single_turn import BfclEnvironment
from envsched_lightning.scheduling import RolloutGroup, build_scheduler
from envsched_lightning.scheduling.near_copies import near_copy_groups
from envsched_lightning.scheduling.task_table import as_task_table
from envsched_lightning.simulation.report import format_table

LIVE = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance", "live_relevance")
GROUP = 8
LABELS = ("random", "envsched copy_decay=1.0", "envsched")


def live_pool(data_dir: str | None) -> tuple[list, np.ndarray, str]:
    """(specs, document id per task, BFCL version) of every live task."""
    specs, docs = [], []
    for category in LIVE:
        env = BfclEnvironment(category, data_dir=data_dir)
        for task in env.tasks():
            specs.append(task.spec)
            docs.append(json.dumps(task.ground_truth["question"]["function"], sort_keys=True))
    _, doc_id = np.unique(docs, return_inverse=True)
    return specs, doc_id.reshape(-1), env.version


def repeats(batch: list[int], group: np.ndarray) -> tuple[float, int]:
    """(share of the batch that repeats a group already in it, most picks of one group)."""
    counts = collections.Counter(group[batch].tolist())
    return (len(batch) - len(counts)) / len(batch), max(counts.values())


def run(label: str, specs: list, doc_id: np.ndarray, groups: np.ndarray, steps: int, batch: int, seed: int) -> dict:
    name, *opts = label.split()
    options = {k: float(v) for k, v in (o.split("=") for o in opts)}
    sched = build_scheduler(name, specs, seed=seed, **options)
    rng = np.random.default_rng([seed, 5])
    doc_logit = rng.normal(0.0, 1.5, int(doc_id.max()) + 1)
    task_offset = rng.normal(0.0, 0.5, len(specs))
    rows = []
    for _ in range(steps):
        picked = sched.select(batch)
        rows.append((*repeats(picked, groups), *repeats(picked, doc_id)))
        out = []
        for i in picked:
            p = 1.0 / (1.0 + np.exp(-(doc_logit[doc_id[i]] + task_offset[i])))
            rewards = (rng.random(GROUP) < p).astype(float)
            out.append(RolloutGroup(int(i), tuple(rewards.tolist())))
            doc_logit[doc_id[i]] += 0.1 * rewards.std()
        sched.update(out)
    r = np.array(rows)
    return {"repeat_share": r[:, 0].mean(), "max_copies": r[:, 1].mean(), "doc_repeat_share": r[:, 2].mean(),
            "doc_max_copies": r[:, 3].mean()}  # fmt: skip


def describe(name: str, group: np.ndarray) -> dict:
    sizes = np.array(list(collections.Counter(group.tolist()).values()))
    return {"grouping": name, "tasks": int(group.size), "groups": int(sizes.size), "tasks_in_groups_of_2+": int(sizes[sizes > 1].sum()),
            "largest": int(sizes.max()), "groups_of_20+": int((sizes >= 20).sum())}  # fmt: skip


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--data-dir", default=None, help="a BFCL folder (default: the data root's bfcl_v4, else bfcl_v3)")
    p.add_argument("--labels", nargs="*", default=list(LABELS))
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    specs, doc_id, version = live_pool(a.data_dir)
    groups = near_copy_groups(as_task_table(specs))
    print(format_table([describe("near-copy groups (detected)", groups), describe("identical function document", doc_id)],
                       f"BFCL {version} live: {len(specs)} tasks"))  # fmt: skip
    rows = []
    for label in a.labels:
        runs = [run(label, specs, doc_id, groups, a.steps, a.batch, seed) for seed in range(a.seeds)]
        rows.append({"scheduler": label, **{k: float(np.mean([r[k] for r in runs])) for k in runs[0]}})
    print(format_table(rows, f"Picks per batch of {a.batch} over {a.steps} steps, {a.seeds} seeds"))
    print(f"wall time {time.perf_counter() - t0:.0f} s")
    return rows


if __name__ == "__main__":
    main()
