"""The two records the scheduling core speaks in: what a task is, and what its rollouts scored."""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

ZERO_STD_EPS = 1e-6
"""A group whose reward std is below this taught nothing (all rewards equal)."""


@dataclass(frozen=True)
class TaskSpec:
    """Everything the scheduler may know about an (environment, task) pair before running it.

    `tools`, `state_keys` and `verifier` describe what the task touches (intra-environment
    similarity); `features` (numeric execution-pattern descriptors, e.g. ``n_calls``) and
    `reward_type` describe how it is solved and scored (cross-environment similarity). `text` is
    what the model reads that is this task's own (its instruction, and documents offered with this
    task alone, not an environment's shared tool set): near-copies are found by it (`near_copies.py`).
    """

    env: str
    task_id: str
    tools: tuple[str, ...] = ()
    state_keys: tuple[str, ...] = ()
    verifier: str = ""
    features: Mapping[str, float] = field(default_factory=dict)
    reward_type: str = "binary"
    text: str = ""

    def __post_init__(self) -> None:
        if not self.env or not isinstance(self.env, str):
            raise ValueError(f"TaskSpec.env must be a non-empty string, got {self.env!r}")
        if not isinstance(self.task_id, str) or not self.task_id:
            raise ValueError(f"TaskSpec.task_id must be a non-empty string, got {self.task_id!r}")
        if not isinstance(self.text, str):
            raise ValueError(f"TaskSpec {self.key}: text must be a string, got {type(self.text).__name__}")
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "state_keys", tuple(self.state_keys))
        feats = {str(k): float(v) for k, v in dict(self.features).items()}
        bad = [k for k, v in feats.items() if not math.isfinite(v)]
        if bad:
            raise ValueError(f"TaskSpec {self.key}: non-finite features {bad}")
        object.__setattr__(self, "features", MappingProxyType(feats))

    @property
    def key(self) -> str:
        """Stable identity across processes and checkpoints: ``env/task_id``."""
        return f"{self.env}/{self.task_id}"

    def __hash__(self) -> int:
        return hash((self.env, self.task_id))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TaskSpec):
            return NotImplemented
        return (
            self.env == other.env
            and self.task_id == other.task_id
            and self.tools == other.tools
            and self.state_keys == other.state_keys
            and self.verifier == other.verifier
            and dict(self.features) == dict(other.features)
            and self.reward_type == other.reward_type
            and self.text == other.text
        )


@dataclass(frozen=True)
class RolloutGroup:
    """One GRPO group: the G rewards that the rollouts of ``specs[index]`` earned in one step.

    `lengths` optionally carries per-rollout turn or token counts; the graph uses their mean as an
    execution-pattern statistic. `tokens` optionally carries what each rollout cost in tokens (its
    whole sequence: prompt, model turns, tool outputs); cost-aware selection reads their mean.
    """

    index: int
    rewards: Sequence[float]
    lengths: Sequence[float] | None = None
    tokens: Sequence[float] | None = None

    @property
    def mean(self) -> float:
        return sum(self.rewards) / len(self.rewards)

    @property
    def std(self) -> float:
        """Population std of the group's rewards (what GRPO's advantage scale uses)."""
        m = self.mean
        return math.sqrt(sum((r - m) ** 2 for r in self.rewards) / len(self.rewards))

    @property
    def informative(self) -> bool:
        """True when the rewards differ, i.e. the group yields a non-zero GRPO gradient."""
        return self.std >= ZERO_STD_EPS


def group_tokens(groups: Sequence[RolloutGroup]) -> np.ndarray:
    """float64[B]: each group's mean tokens per rollout, NaN where it reported none."""
    return np.array([np.nan if g.tokens is None else sum(g.tokens) / len(g.tokens) for g in groups])


def group_stats(groups: Sequence[RolloutGroup]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(index int64[B], mean float64[B], std float64[B], mean length float64[B], NaN where none)
    of many groups in a few array operations: a step of 512 groups costs microseconds, not a
    Python loop over every reward."""
    b = len(groups)
    index = np.fromiter((g.index for g in groups), dtype=np.int64, count=b)
    sizes = np.fromiter((len(g.rewards) for g in groups), dtype=np.int64, count=b)
    if b == 0:
        empty = np.zeros(0)
        return index, empty, empty, empty
    rewards = np.fromiter(itertools.chain.from_iterable(g.rewards for g in groups), dtype=np.float64, count=int(sizes.sum()))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    mean = np.add.reduceat(rewards, starts) / sizes
    std = np.sqrt(np.add.reduceat((rewards - np.repeat(mean, sizes)) ** 2, starts) / sizes)
    length = np.array([np.nan if g.lengths is None else sum(g.lengths) / len(g.lengths) for g in groups])
    return index, mean, std, length


def _unit_floats(values: tuple) -> bool:
    """True when every value is a Python float in [0, 1] (NaN or inf make the sum non-finite):
    the common case, checked in C-level loops."""
    return set(map(type, values)) == {float} and math.isfinite(sum(values)) and min(values) >= 0.0 and max(values) <= 1.0


def _lengths_ok(lengths: tuple[float, ...]) -> bool:
    return math.isfinite(sum(lengths)) and min(lengths) >= 0.0


def _where(pos: int, g: object) -> str:
    """Where a bad group sits, for the error (built only when there is one)."""
    return f"group {pos} (index={getattr(g, 'index', None)!r})"


def validate_groups(groups: Sequence[RolloutGroup], num_tasks: int) -> list[RolloutGroup]:
    """Check every group before any state changes, so a bad group never half-applies an update."""
    checked: list[RolloutGroup] = []
    for pos, g in enumerate(groups):
        if not isinstance(g, RolloutGroup):
            raise ValueError(f"{_where(pos, g)}: expected RolloutGroup, got {type(g).__name__}")
        if isinstance(g.index, bool) or not isinstance(g.index, int):
            raise ValueError(f"{_where(pos, g)}: index must be an int")
        if not 0 <= g.index < num_tasks:
            raise ValueError(f"{_where(pos, g)}: index out of range for {num_tasks} tasks")
        rewards = tuple(g.rewards)
        if not rewards:
            raise ValueError(f"{_where(pos, g)}: empty group (no rewards)")
        if not _unit_floats(rewards):
            for r in rewards:
                if isinstance(r, bool) or not isinstance(r, numbers.Real) or not math.isfinite(r):
                    raise ValueError(f"{_where(pos, g)}: non-finite or non-numeric reward {r!r}")
                if not 0.0 <= r <= 1.0:
                    raise ValueError(f"{_where(pos, g)}: reward {r!r} outside [0, 1]")
            rewards = tuple(map(float, rewards))
        lengths, tokens = None, None
        if g.lengths is not None:
            lengths = tuple(map(float, g.lengths))
            if len(lengths) != len(rewards) or not _lengths_ok(lengths):
                raise ValueError(f"{_where(pos, g)}: lengths must be finite, non-negative, one per reward")
        if getattr(g, "tokens", None) is not None:
            tokens = tuple(map(float, g.tokens))
            if len(tokens) != len(rewards) or not _lengths_ok(tokens):
                raise ValueError(f"{_where(pos, g)}: tokens must be finite, non-negative, one per reward")
        checked.append(RolloutGroup(g.index, rewards, lengths, tokens))
    return checked
