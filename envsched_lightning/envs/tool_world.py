"""The shared mechanism behind every built-in tool world: tools, per-episode state, the bad-call
policy, task building and verification. A world only declares its state, tools and drafts.

Bad-call policy (the same for every world):

- A block that does not parse, a call to a tool not offered in the task, or arguments that fail the
  tool's JSON schema (missing required, wrong type, unexpected key, enum) is **not executed**: the
  episode continues and the model gets a tool result ``Error: <reason>`` with `ToolResult.error` set.
  Each is counted (`ToolEpisode.n_invalid`).
- A tool that raises (`ToolError` for domain errors such as "insufficient funds", or any bug) returns
  an error result the same way and leaves the state as it was before the call; it never crashes the
  rollout. Counted in `ToolEpisode.n_tool_errors`.
- Neither costs reward by itself: the verifier (`verify.score_episode`) decides the reward from the
  final state, the valid calls and the answer. A fully correct episode scores exactly 1.0.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from envsched_lightning.scheduling import TaskSpec

from .base import Environment, Episode, Task, ToolCall, ToolResult, Verdict
from .parsing import validate_call
from .task_text import task_text
from .patterns import PATTERNS, Draft, draft_to_record, features, reward_type
from .verify import diff_state, score_episode, verifier_name

State = dict[str, dict[str, Any]]  # table -> row id -> row


class ToolError(Exception):
    """A domain error a tool reports to the model (not found, insufficient funds, ...)."""


def get_row(state: State, table: str, key: str, what: str | None = None) -> dict[str, Any]:
    """The row, or a `ToolError` naming what is missing (the message the model sees)."""
    if key not in state[table]:
        raise ToolError(f"no {what or table.rstrip('s')} {key}")
    return state[table][key]


def next_id(state: State, table: str, prefix: str) -> str:
    """A fresh row id, deterministic given the state (``prefix`` + one more than the largest number)."""
    nums = [int(k[len(prefix):]) for k in state[table] if k.startswith(prefix) and k[len(prefix):].isdigit()]
    return f"{prefix}{max(nums, default=0) + 1}"


@dataclass(frozen=True)
class ToolSpec:
    """A tool method plus the JSON schema and tables it touches (tables become `TaskSpec.state_keys`)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    fn: Callable[..., Any]

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": copy.deepcopy(dict(self.parameters))}}


def tool(description: str, params: Mapping[str, str | Mapping[str, Any]] | None = None, *,
         optional: Sequence[str] = (), reads: Sequence[str] = (), writes: Sequence[str] = ()) -> Callable:
    """Mark a `ToolWorld` method ``fn(self, state, **arguments)`` as a tool.

    `params` maps argument names to a JSON type name or a full property schema; all are required
    except those in `optional`. Raise `ToolError` for domain errors; the state is rolled back.
    """
    props = {k: {"type": v} if isinstance(v, str) else dict(v) for k, v in (params or {}).items()}
    parameters = {"type": "object", "properties": props, "required": [k for k in props if k not in optional]}

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn._tool_spec = ToolSpec(fn.__name__, description, parameters, tuple(reads), tuple(writes or ()), fn)
        return fn

    return wrap


class ToolEpisode(Episode):
    """One rollout over a private deep copy of the world's state; records what the model did."""

    def __init__(self, world: ToolWorld, task: Task) -> None:
        self.world, self.task = world, task
        self.initial = world.initial_state()
        self.state = copy.deepcopy(self.initial)
        self.offered = world.tools_for(task)
        self.calls: list[ToolCall] = []  # calls that passed validation and ran (successfully or not)
        self.n_attempted = self.n_invalid = self.n_tool_errors = self.n_turns = 0

    def step(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        self.n_turns += 1
        return [self._run(c) for c in calls]

    def _run(self, call: ToolCall) -> ToolResult:
        self.n_attempted += 1
        reason = validate_call(call, self.offered)
        if reason:
            self.n_invalid += 1
            return ToolResult(call.name, f"Error: {reason}", error=reason)
        self.calls.append(call)
        result = self.world.execute(self.state, call)
        self.n_tool_errors += result.error is not None
        return result

    def reject(self, errors: Sequence[str]) -> list[ToolResult]:
        self.n_attempted += len(errors)
        self.n_invalid += len(errors)
        return super().reject(errors)

    def verify(self, final_answer: str) -> Verdict:
        v = score_episode(self.task.ground_truth, self.initial, self.state, self.calls, final_answer, self.n_attempted)
        return Verdict(v.reward, f"{v.reason}; {self.n_invalid} invalid calls, {self.n_tool_errors} tool errors")

    def stats(self) -> dict[str, float]:
        return {"n_calls": float(self.n_attempted), "n_invalid": float(self.n_invalid),
                "n_tool_errors": float(self.n_tool_errors), "n_turns": float(self.n_turns)}


DEFAULT_NUM_TASKS = 200  # generated tasks when num_tasks is null


class ToolWorld(Environment):
    """A stateful world: subclasses define `build_state`, `@tool` methods and ``draft_<pattern>`` methods.

    Tasks come from the seeded generator (`num_tasks`, `seed`; task ``i`` depends only on the seed
    and ``i``, so a longer list extends a shorter one) or from a user JSONL file (`tasks_path`).
    `offer="task"` renders only the task's tools plus one distractor (short prompts for tiny models);
    `offer="all"` renders the world's full tool set.
    """

    name: ClassVar[str]
    patterns: ClassVar[tuple[str, ...]] = PATTERNS
    _tools: ClassVar[dict[str, ToolSpec]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tools = dict(getattr(cls, "_tools", {}))
        tools.update({v._tool_spec.name: v._tool_spec for v in cls.__dict__.values() if hasattr(v, "_tool_spec")})
        cls._tools = tools

    def __init__(self, num_tasks: int | None = None, seed: int = 0, tasks_path: str | None = None, offer: str = "task",
                 system_prompt: str | None = None) -> None:
        if num_tasks is not None and num_tasks < 1:
            raise ValueError(f"{type(self).__name__}: num_tasks must be >= 1 or null, got {num_tasks}")
        if offer not in ("task", "all"):
            raise ValueError(f"{type(self).__name__}: offer must be 'task' or 'all', got {offer!r}")
        missing = [p for p in self.patterns if p not in PATTERNS or not hasattr(self, f"draft_{p}")]
        if missing:
            raise TypeError(f"{type(self).__name__}: no draft_<pattern> method for {missing}")
        self.num_tasks, self.seed, self.tasks_path, self.offer = num_tasks, seed, tasks_path, offer
        self.system_prompt = system_prompt
        self._state = self.build_state(random.Random(f"{self.name}:{seed}:state"))
        self._task_list: list[Task] | None = None

    # --- what a world defines ---------------------------------------------------------------------

    def build_state(self, rng: random.Random) -> State:
        """The world's database for this seed; tables map row ids to JSON-serialisable rows."""
        raise NotImplementedError

    # --- Environment ------------------------------------------------------------------------------

    def initial_state(self) -> State:
        return copy.deepcopy(self._state)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self._tools.values()]

    def tasks(self) -> list[Task]:
        if self._task_list is None:
            drafts = self._load_drafts() if self.tasks_path else self._generate()
            self._task_list = [self.build_task(d) for d in drafts]
        return self._task_list

    def reset(self, task: Task) -> ToolEpisode:
        return ToolEpisode(self, task)

    def execute(self, state: State, call: ToolCall) -> ToolResult:
        """Run one validated call; errors become results (see the module's bad-call policy)."""
        spec = self._tools[call.name]
        before = copy.deepcopy(state)
        try:
            out = spec.fn(self, state, **call.arguments)
        except Exception as e:  # noqa: BLE001 - policy: a raising tool is an error result, never a crash
            state.clear()
            state.update(before)
            msg = str(e) if isinstance(e, ToolError) else f"{call.name} failed ({type(e).__name__}: {e})"
            return ToolResult(call.name, f"Error: {msg}", error=msg)
        return ToolResult(call.name, out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, default=str))

    # --- task building ----------------------------------------------------------------------------

    def _generate(self) -> list[Draft]:
        drafts, seen = [], set()
        for i in range(self.num_tasks or DEFAULT_NUM_TASKS):
            pattern = self.patterns[i % len(self.patterns)]
            rng = random.Random(f"{self.name}:{self.seed}:{i}")
            draw = getattr(self, f"draft_{pattern}")
            for _ in range(20):  # redraw duplicates; a small world may still repeat a request
                draft = draw(rng, self._state)
                if draft.request not in seen:
                    break
            seen.add(draft.request)
            drafts.append(Draft(**{**draft.__dict__, "task_id": f"{pattern}-{i:04d}"}))
        return drafts

    def _load_drafts(self) -> list[Draft]:
        from .tasks_io import load_tasks_jsonl

        drafts = load_tasks_jsonl(self.tasks_path)
        if self.num_tasks is None:
            return drafts
        if self.num_tasks > len(drafts):
            raise ValueError(f"{self.name}: tasks_path={self.tasks_path} holds {len(drafts)} tasks, num_tasks="
                             f"{self.num_tasks} asks for more (num_tasks=null: every task of the file)")  # fmt: skip
        return drafts[: self.num_tasks]  # the file's first num_tasks, as a longer generated list extends a shorter

    def build_task(self, draft: Draft) -> Task:
        """Replay the oracle on a fresh state to get the expected changes, and describe the task."""
        where = draft.source or f"{self.name}/{draft.task_id}"
        unknown = [t for t in draft.tools_used() if t not in self._tools]
        if unknown:
            raise ValueError(f"{where}: unknown tools {unknown} for {self.name}; valid: {', '.join(self._tools)}")
        state = self.initial_state()
        for c in draft.calls:
            reason = validate_call(c, self.tool_schemas())
            result = self.execute(state, c) if reason is None else None
            if reason or result.error:
                raise ValueError(f"{where}: ground-truth call {c.name} fails: {reason or result.error}")
        used = draft.tools_used()
        specs = [self._tools[t] for t in used]
        offered = list(used)
        if self.offer == "task":
            spare = [t for t in self._tools if t not in offered]
            if spare:
                offered.append(spare[sum(map(ord, draft.task_id or draft.request)) % len(spare)])
        ground_truth = {**draft_to_record(draft), "expected_changes": diff_state(self._state, state)}
        writes = {t.name for t in self._tools.values() if t.writes}
        spec = TaskSpec(
            env=self.name,
            task_id=draft.task_id,
            tools=used,
            state_keys=tuple(sorted({k for s in specs for k in (*s.reads, *s.writes)})),
            verifier=verifier_name(draft.checks),
            features=features(draft, writes),
            reward_type=reward_type(draft),
            text=task_text([draft.request]),
        )
        messages = ({"role": "system", "content": self.system_prompt},) if self.system_prompt else ()
        return Task(
            spec=spec,
            messages=(*messages, {"role": "user", "content": draft.request}),
            ground_truth=ground_truth,
            max_turns=len(draft.turns) + 2,
            tools=tuple(self._tools[t].schema() for t in offered) if self.offer == "task" else (),
        )
