"""The scheduler contract shared by every strategy.

A strategy only says how much it wants each task (`_priorities`) and what it learns from a step
(`_observe`). The base class owns what must be identical everywhere: argument checks, the shared
`TaskHistory`, the RNG, the constrained batch fill (quotas, similarity penalty), the decision
record, and checkpointing, so a resumed run selects exactly what the uninterrupted one would.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .constraints import EnvQuota, SimilarityPenalty
from .decision import Decision
from .history import TaskHistory
from .selection import fill_batch
from .task_table import TaskTable, as_task_table
from .types import RolloutGroup, TaskSpec, validate_groups


def spec_fingerprint(specs: Sequence[TaskSpec] | TaskTable) -> str:
    """A hash of the task keys, so a checkpoint is never loaded onto a different task pool."""
    if isinstance(specs, TaskTable):
        return specs.fingerprint()
    h = hashlib.sha1()
    for s in specs:
        h.update(s.key.encode())
        h.update(b"\0")
    return h.hexdigest()


class Scheduler(ABC):
    """Chooses which tasks enter each training batch, from the rollouts already paid for."""

    name: ClassVar[str] = "base"

    def __init__(self, specs: Sequence[TaskSpec] | TaskTable, seed: int = 0, history_ema: float = 0.5) -> None:
        # columns, not a Python object per task: a list of specs is converted once, a table kept
        self.specs: TaskTable = as_task_table(specs)  # duplicate keys and malformed specs refused here
        if not len(self.specs):
            raise ValueError("a scheduler needs at least one TaskSpec")
        self.env_names: tuple[str, ...] = self.specs.env_names
        self.env_ids = self.specs.env_ids.astype(np.int64)
        self.env_sizes = np.bincount(self.env_ids, minlength=len(self.env_names))
        order = np.argsort(self.env_ids, kind="stable")
        self.env_members = np.split(order, np.cumsum(self.env_sizes)[:-1])  # task indices per environment
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.history = TaskHistory(len(self.specs), ema=history_ema)
        self.quota: EnvQuota | None = None
        self.penalty: SimilarityPenalty | None = None
        self._fingerprint = spec_fingerprint(self.specs)
        self._last_decision: Decision | None = None
        self._selections = 0

    @property
    def num_tasks(self) -> int:
        return len(self.specs)

    @property
    def num_envs(self) -> int:
        return len(self.env_names)

    # -- constraints -------------------------------------------------------------------------
    def install(self, constraint: EnvQuota | SimilarityPenalty) -> None:
        """Hang a reusable constraint on this scheduler (what the Lightning callbacks do)."""
        if isinstance(constraint, EnvQuota):
            constraint.bind(self.env_names, self.env_sizes)
            self.quota = constraint
        elif isinstance(constraint, SimilarityPenalty):
            constraint.bind(self.specs, self._similarity_source())
            self.penalty = constraint
        else:
            raise TypeError(f"unknown constraint type {type(constraint).__name__}")

    def _similarity_source(self):
        """Graph similarity for the penalty; envsched shares its task graph, others build one."""
        return None

    # -- the public contract -----------------------------------------------------------------
    def select(self, batch_size: int) -> list[int]:
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        batch_size = int(batch_size)
        if batch_size > self.num_tasks:
            raise ValueError(f"batch_size {batch_size} exceeds the number of tasks ({self.num_tasks})")
        components = self._priorities(batch_size)
        keys = np.asarray(components.pop("priority"), dtype=np.float64)
        eligible = components.pop("eligible", None)
        step = self._selections
        result = fill_batch(keys, batch_size, self.env_ids, self.num_envs, self.quota, self.penalty, eligible,
                            self.env_members)
        self._selections += 1
        self._last_decision = Decision.build(self.specs, self.env_ids, self.env_names, step, result, keys, components)
        return result.indices

    def update(self, groups: Sequence[RolloutGroup]) -> None:
        if len(groups) == 0:
            raise ValueError("update() got no RolloutGroup: pass the groups of the tasks last selected")
        checked = validate_groups(groups, self.num_tasks)  # raises before any state changes
        self._observe(checked)
        self.history.record(checked)

    def last_decision(self) -> Decision | None:
        """Why the last `select` chose what it chose (scores, bonuses, penalties, env counts)."""
        return self._last_decision

    # -- strategy hooks ----------------------------------------------------------------------
    @abstractmethod
    def _priorities(self, batch_size: int) -> dict[str, np.ndarray]:
        """Return ``{"priority": float[N], ...named score components...}``; higher is chosen first.

        Optionally ``"eligible": bool[N]``: tasks outside it are used only if the batch cannot be
        filled otherwise. Randomised strategies turn sampling without replacement into keys with
        the Gumbel-top-k trick, so constraints act on one mechanism for all of them.
        """

    def _observe(self, groups: list[RolloutGroup]) -> None:
        """Learn from validated groups; called before they are folded into `history`."""

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        pass

    # -- checkpointing -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "fingerprint": self._fingerprint,
            "selections": self._selections,
            "rng": self.rng.bit_generator.state,
            "history": self.history.state_dict(),
            "quota": None if self.quota is None else self.quota.state_dict(),
            "extra": self._extra_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("name") != self.name:
            raise ValueError(f"state is for scheduler {state.get('name')!r}, not {self.name!r}")
        if state.get("fingerprint") != self._fingerprint:
            raise ValueError("state was saved for a different task pool (task keys differ)")
        self.history.load_state_dict(state["history"])
        self.rng.bit_generator.state = state["rng"]
        self._selections = int(state["selections"])
        if state.get("quota") is not None and self.quota is not None:
            self.quota.load_state_dict(state["quota"])
        self._load_extra_state(state["extra"])
        self._last_decision = None


def gumbel_keys(rng: np.random.Generator, log_weights: np.ndarray) -> np.ndarray:
    """Keys whose descending order is a sample without replacement proportional to exp(log_weights)."""
    u = rng.random(log_weights.shape[0])
    return log_weights - np.log(-np.log(np.clip(u, 1e-300, 1.0 - 1e-16)))
