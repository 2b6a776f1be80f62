"""The task pool: every environment's tasks, split once into a scheduled part and a held-out part.

The split is a function of the task keys alone (a hash), not of list order or the run's seed, so
every process of a distributed run and every resumed run agree on it, and adding tasks to an
environment never moves an existing task across the split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from envsched_lightning.envs.base import Environment, Task
from envsched_lightning.scheduling import TaskSpec


def _rank(task: Task) -> str:
    return hashlib.sha1(task.spec.key.encode()).hexdigest()


def split_held_out(tasks: list[Task], n_eval: int) -> tuple[list[Task], list[Task]]:
    """(train, held_out): the `n_eval` tasks with the smallest key hash are held out; order kept."""
    held = {t.spec.key for t in sorted(tasks, key=_rank)[:n_eval]}
    return [t for t in tasks if t.spec.key not in held], [t for t in tasks if t.spec.key in held]


@dataclass(frozen=True)
class TaskPool:
    """Scheduled tasks in scheduler index order (``specs[i]`` is ``train[i][0].spec``) and held-out tasks."""

    train: tuple[tuple[Task, Environment], ...]
    held_out: tuple[tuple[Task, Environment], ...]

    @property
    def specs(self) -> tuple[TaskSpec, ...]:
        return tuple(task.spec for task, _ in self.train)

    @property
    def env_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(task.spec.env for task, _ in self.train))


def build_pool(
    envs: Mapping[str, Environment],
    eval_per_env: int,
    eval_only: Mapping[str, Environment] | None = None,
    eval_only_tasks: int = 32,
) -> TaskPool:
    """Collect every environment's tasks; raise, naming the config key, when a split is impossible.

    `eval_only` environments are never scheduled: `eval_only_tasks` of each (by key hash, so the
    subset is the same in every run) join the held-out tasks, to measure transfer to unseen tools."""
    if not envs:
        raise ValueError("env: no environments configured; select some, e.g. env=[banking,calendar]")
    if isinstance(eval_per_env, bool) or not isinstance(eval_per_env, int) or eval_per_env < 0:
        raise ValueError(f"data.eval_per_env must be a non-negative int, got {eval_per_env!r}")
    if isinstance(eval_only_tasks, bool) or not isinstance(eval_only_tasks, int) or eval_only_tasks < 1:
        raise ValueError(f"data.eval_env_tasks must be a positive int, got {eval_only_tasks!r}")
    train: list[tuple[Task, Environment]] = []
    held_out: list[tuple[Task, Environment]] = []
    for key, env in envs.items():
        tasks = list(env.tasks())
        if len(tasks) <= eval_per_env:
            raise ValueError(
                f"data.eval_per_env={eval_per_env} leaves no training task in env.{key} ({len(tasks)} tasks)"
            )
        fit, held = split_held_out(tasks, eval_per_env)
        train += [(t, env) for t in fit]
        held_out += [(t, env) for t in held]
    for key, env in (eval_only or {}).items():
        tasks = list(env.tasks())
        if not tasks:
            raise ValueError(f"data.eval_envs.{key} has no tasks")
        _, held = split_held_out(tasks, eval_only_tasks)
        held_out += [(t, env) for t in held]
    keys = [t.spec.key for t, _ in train + held_out]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise ValueError(f"env: task {dup!r} appears twice; two env configs build the same environment")
    return TaskPool(tuple(train), tuple(held_out))
