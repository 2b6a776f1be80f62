"""A scheduler in one file, as docs/scheduling.md "Writing a scheduler" describes it.

    python docs/examples/fewest_tries.py

`fewest_tries` prefers tasks tried least often, then tasks whose last group disagreed (reward std > 0),
with a little seeded noise to break ties. Copy the class into
`envsched_lightning/scheduling/schedulers/fewest_tries.py` and add `conf/scheduler/fewest_tries.yaml`
(shown in the guide) to train with it: `python train.py scheduler=fewest_tries`. Run as a script, it
builds the scheduler as the trainer does (`build_scheduler`, the yaml's options as keywords), drives
it over the built-in worlds' tasks with made-up rewards and checks what the application relies on:
distinct batches of the asked size, its own score components in every decision, and a checkpoint
that resumes the exact same selections. Its asserts hold what docs/scheduling.md says about the
constructor, `self.rng` and `self.history` (numpy arrays, one entry per task).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from envsched_lightning.envs import make_env
from envsched_lightning.scheduling import RolloutGroup, Scheduler, TaskSpec, build_scheduler, register_scheduler
from envsched_lightning.scheduling.task_table import TaskTable


@register_scheduler("fewest_tries")
class FewestTries(Scheduler):
    """Least-tried tasks first; among equals, the ones whose last group's rewards differed."""

    # specs: a list of TaskSpec or a TaskTable; seed and every option of the yaml come as keywords; **kw
    # passes the base class's own option (history_ema) on to it
    def __init__(self, specs: Sequence[TaskSpec] | TaskTable, seed: int = 0, noise: float = 0.01, **kw: Any) -> None:
        if not noise >= 0:  # options come from the yaml: say which one is wrong
            raise ValueError(f"scheduler: noise must be a number >= 0, got {noise!r}")
        super().__init__(specs, seed=seed, **kw)  # sets self.specs, env ids, self.history, self.rng: use them after
        assert isinstance(self.specs, TaskTable) and isinstance(self.rng, np.random.Generator)
        self.noise = noise
        self.disagreements = np.zeros(self.num_tasks, dtype=np.int64)  # state of its own: checkpointed below

    def _priorities(self, batch_size: int) -> dict[str, np.ndarray]:
        h = self.history  # what the trainer paid for: numpy arrays of shape [N], entry i for task i
        novelty = 1.0 / (1.0 + h.count)  # [N]
        informative = (h.last_std > 0).astype(np.float64) + 0.1 * self.disagreements  # [N]
        jitter = self.noise * self.rng.random(self.num_tasks)  # [N] seeded: the same seed, the same batches
        # "priority" ranks the tasks; every other entry is logged under its name in sched_decisions.jsonl
        return {"priority": novelty + informative + jitter, "novelty": novelty, "informative": informative}

    def _observe(self, groups: list[RolloutGroup]) -> None:
        for g in groups:  # validated groups of this step, before they reach self.history
            self.disagreements[g.index] += int(g.std > 0)

    def _extra_state(self) -> dict[str, Any]:
        return {"disagreements": self.disagreements.copy()}  # numpy arrays are saved without pickle

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.disagreements = np.asarray(state["disagreements"], dtype=np.int64).copy()


# docs/scheduling.md's table of self.history: numpy arrays of shape [N] with these dtypes
HISTORY = {"count": np.int64, "last_step": np.int64, "last_mean": np.float32, "last_std": np.float32,
           "ema_mean": np.float32, "ema_std": np.float32, "ema_len": np.float32, "zero_var": np.int64}  # fmt: skip


def check_history(sched: Scheduler) -> None:
    h, n = sched.history, sched.num_tasks
    arrays = {name: getattr(h, name) for name in HISTORY} | {"observed": h.observed, "staleness()": h.staleness()}
    dtypes = HISTORY | {"observed": np.bool_, "staleness()": np.int64}
    for name, arr in arrays.items():
        assert isinstance(arr, np.ndarray) and arr.shape == (n,) and arr.dtype == dtypes[name], (name, arr)
    assert isinstance(h.step, int) and ((h.last_step == -1) == (h.count == 0)).all()


def made_up_groups(indices: list[int], step: int, group_size: int = 4) -> list[RolloutGroup]:
    rng = np.random.default_rng(step)
    return [RolloutGroup(i, tuple(float(x) for x in rng.random(group_size) < (i % 5) / 4)) for i in indices]


def main() -> None:
    specs = [t.spec for name in ("banking", "calendar", "messaging") for t in make_env(name, num_tasks=30).tasks()]
    sched = build_scheduler("fewest_tries", specs, seed=0, noise=0.01, history_ema=0.5)  # yaml keys as keywords
    assert type(sched) is FewestTries and sched.history.ema == 0.5
    check_history(sched)
    for bad, error in (({"noise": -1.0}, ValueError), ({"nose": 0.1}, TypeError)):  # a bad value, a misspelt key
        try:
            build_scheduler("fewest_tries", specs, seed=0, **bad)
            raise AssertionError(f"{bad} was accepted")
        except error as err:
            assert next(iter(bad)) in str(err), err  # the error names the key
    chosen, saved = [], None
    for step in range(6):
        batch = sched.select(8)
        assert len(set(batch)) == 8, batch
        row = sched.last_decision().rows[0]
        assert {"novelty", "informative"} <= set(row), row  # its own components reach the decision log
        sched.update(made_up_groups(batch, step))
        check_history(sched)
        h = sched.history
        assert h.step == step + 1 and (h.last_step[batch] == step + 1).all()
        if step == 0:  # a task's first group counts in full in the EMAs
            assert (h.ema_mean[batch] == h.last_mean[batch]).all()
        chosen.append(batch)
        if step == 3:
            saved = copy.deepcopy(sched.state_dict())  # what a checkpoint after step 3 holds
    resumed = FewestTries(specs, seed=0)
    resumed.load_state_dict(saved)
    for step in (4, 5):  # the resumed scheduler picks what the uninterrupted one picked
        batch = resumed.select(8)
        assert batch == chosen[step], (step, batch, chosen[step])
        resumed.update(made_up_groups(batch, step))
    print(f"fewest_tries: 6 steps over {len(specs)} tasks; first choice of the last step: {row}")
    print("ok: distinct batches, own score components in every decision, exact resume")


if __name__ == "__main__":
    main()
