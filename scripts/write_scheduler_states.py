"""Write every registered scheduler's checkpoint after a short run on a small pool, with the picks
of the steps that follow, into a folder: the files `tests/scheduling/test_older_checkpoints.py` loads.

Run with the code whose checkpoint format is to stay readable (a checkout of that version):

    python scripts/write_scheduler_states.py tests/scheduling/fixtures/states_386040b
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from envsched_lightning.checkpoints import write_state
from envsched_lightning.scheduling import RolloutGroup, TaskSpec, build_scheduler

SCHEDULERS = ("random", "mopps", "plr", "greso", "sec", "envsched")


def pool() -> list[TaskSpec]:
    """Three families in two environments: 60 tasks, enough for both relations and the quotas."""
    def family(env: str, name: str, n: int, tools: tuple[str, ...]) -> list[TaskSpec]:
        return [TaskSpec(env=env, task_id=f"{name}{i}", tools=tools, state_keys=(name,), verifier="state_match",
                         features={"n_calls": 2.0}) for i in range(n)]
    return family("a", "x", 20, ("t1", "t2")) + family("a", "y", 10, ("t3",)) + family("b", "z", 30, ("u1",))


def drive(sched, steps: range, batch: int = 6) -> list[list[int]]:
    """Select, then feed back groups whose pass counts depend on the task and the step."""
    picks = []
    for step in steps:
        idx = [int(i) for i in sched.select(batch)]
        picks.append(idx)
        sched.update([RolloutGroup(i, [1.0] * ((i * 3 + step) % 9) + [0.0] * (8 - (i * 3 + step) % 9)) for i in idx])
    return picks


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    after = {}
    for name in SCHEDULERS:
        sched = build_scheduler(name, pool(), seed=3)
        drive(sched, range(12))
        write_state(sched.state_dict(), out / f"{name}.ckpt")
        after[name] = drive(sched, range(12, 16))
    (out / "picks_after.json").write_text(json.dumps(after, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
