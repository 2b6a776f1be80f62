"""Print what the scheduler will see per environment: task count, tools, execution patterns, verifiers.

    python -m envsched_lightning.envs.inspect                # every built-in world
    python -m envsched_lightning.envs.inspect banking airline
    python -m envsched_lightning.envs.inspect --all          # every registered environment
    python -m envsched_lightning.envs.inspect --all --data /path/to/data   # default: $ENVSCHED_DATA, else the
                                                                           # folder `python -m envsched_lightning.data fetch` fills
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Sequence

from .base import Environment
from .patterns import PATTERNS
from .registry import builtin_env_names, env_names, make_env


def _pattern(features: dict[str, float]) -> str:
    hits = [p for p in PATTERNS if features.get(f"pattern_{p}") == 1.0]
    return hits[0] if hits else "other"


def summarize(env: Environment) -> dict[str, object]:
    """Counts for one environment; patterns come from `TaskSpec.features` (``pattern_*``)."""
    tasks = env.tasks()
    return {
        "name": env.name,
        "data": getattr(env, "version", "") or "",  # BFCL: v3 or v4
        "tasks": len(tasks),
        "tools": len(env.tool_schemas()),
        "patterns": Counter(_pattern(dict(t.spec.features)) for t in tasks),
        "verifiers": Counter(t.spec.verifier for t in tasks),
        "reward_types": Counter(t.spec.reward_type for t in tasks),
        "mean_calls": sum(t.spec.features.get("n_calls", 0.0) for t in tasks) / max(len(tasks), 1),
    }


def format_table(rows: Sequence[dict[str, object]]) -> str:
    """A per-environment table, one column per pattern, then verifier and reward-type counts."""
    cols = [p for p in (*PATTERNS, "other") if any(r["patterns"][p] for r in rows)]
    head = ["env", "data", "tasks", "tools", *cols, "calls/task"]
    body = [[r["name"], r.get("data") or "-", r["tasks"], r["tools"], *(r["patterns"][c] for c in cols),
             f"{r['mean_calls']:.2f}"] for r in rows]  # fmt: skip
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]

    def line(cells: Sequence[object]) -> str:
        return "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    out = [line(head), line(["-" * w for w in widths]), *map(line, body), ""]
    for r in rows:
        verifiers = ", ".join(f"{k} {v}" for k, v in sorted(r["verifiers"].items()))
        rewards = ", ".join(f"{k} {v}" for k, v in sorted(r["reward_types"].items()))
        out.append(f"{r['name']}: verifiers [{verifiers}]; rewards [{rewards}]")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envsched_lightning.envs.inspect", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="environment names (default: every built-in world)")
    parser.add_argument("--all", action="store_true", help="every registered environment, loaders included")
    parser.add_argument("--num-tasks", type=int, default=None, help="override num_tasks for tool worlds")
    parser.add_argument("--data", default=os.environ.get("ENVSCHED_DATA"),
                        help="benchmark data folder for BFCL / ACEBench / tau-bench (default: $ENVSCHED_DATA, else "
                             "where `python -m envsched_lightning.data fetch` writes)")
    args = parser.parse_args(argv)
    names = args.names or (env_names() if args.all else builtin_env_names())
    builtin = set(builtin_env_names())
    rows = []
    for name in names:
        if name in builtin:
            options = {"num_tasks": args.num_tasks} if args.num_tasks else {}
        else:  # benchmark loaders read their data folder
            options = {"data_dir": args.data}
        try:
            rows.append(summarize(make_env(name, **options)))
        except Exception as e:  # noqa: BLE001 - any environment that cannot be built is reported by name
            print(f"{name}: cannot build ({type(e).__name__}: {e})", file=sys.stderr)
            if not args.all:  # a name asked for is an error; --all lists what the data at hand allows
                return 2
    print(format_table(rows))
    return 0 if rows else 2


if __name__ == "__main__":
    sys.exit(main())
