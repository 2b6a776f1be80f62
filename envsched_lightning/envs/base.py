"""The environment interface every tool-use world implements, and the records an episode speaks in.

An `Environment` owns tool schemas and a task list; `reset(task)` returns an `Episode` holding a
fresh deep copy of the world's state, so rollouts of one group never share state. The agent loop
(`envsched_lightning.rollout.agent_loop`) alternates model turns and `Episode.step` until the model
answers without a tool call or `task.max_turns` is reached, then asks `Episode.verify`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envsched_lightning.scheduling import TaskSpec

from .calls import ToolCall
from .parsing import ParsedTurn, parse_tool_calls
from .time_limit import DEFAULT_TOOL_TIME_LIMIT, ToolTimeout, call_with_time_limit


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned (or why it failed), rendered back to the model as a `tool` message."""

    name: str
    content: str
    error: str | None = None  # set when the call was rejected or the tool raised


@dataclass(frozen=True)
class Verdict:
    """A verifier's reward in [0, 1] and the reason, kept for logging and debugging."""

    reward: float
    reason: str
    scores: Mapping[str, float] = field(default_factory=dict)  # a benchmark's official metrics, reported by evaluate.py


@dataclass(frozen=True)
class Task:
    """One schedulable task: the conversation to start from, its ground truth, and its `TaskSpec`."""

    spec: TaskSpec
    messages: tuple[Mapping[str, str], ...]  # chat messages ({"role", "content"}) before the first model turn
    ground_truth: Mapping[str, Any] = field(default_factory=dict)  # expected calls / final state / answer substrings
    max_turns: int = 4
    tools: tuple[Mapping[str, Any], ...] = ()  # schemas offered in this task; empty = the environment's full set


MAX_RESULT_CHARS = 8_000
"""A tool result longer than this is cut (with a marker) before it is tokenised into the episode."""


def bounded(result: ToolResult) -> ToolResult:
    """`result` with its content cut to `MAX_RESULT_CHARS`, saying how much was left out."""
    content = result.content if isinstance(result.content, str) else str(result.content)
    if len(content) <= MAX_RESULT_CHARS:
        return result if content is result.content else ToolResult(result.name, content, result.error)
    cut = f"{content[:MAX_RESULT_CHARS]}... [truncated: {len(content) - MAX_RESULT_CHARS} more characters]"
    return ToolResult(result.name, cut, result.error)


class Episode(ABC):
    """One rollout's private world: execute tool calls against its own state, then verify."""

    @abstractmethod
    def step(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Execute the calls of one model turn in order; never raises for bad calls."""

    @abstractmethod
    def verify(self, final_answer: str) -> Verdict:
        """Score the finished episode (final state, calls made, and the model's last text)."""

    def reject(self, errors: Sequence[str]) -> list[ToolResult]:
        """Tool results for blocks that did not parse: the episode continues with the error shown."""
        return [ToolResult(name="invalid_tool_call", content=f"Error: {e}", error=e) for e in errors]

    def turn(self, text: str, parse: Callable[[str], ParsedTurn] | None = None,
             time_limit: float | None = DEFAULT_TOOL_TIME_LIMIT) -> tuple[ParsedTurn, list[ToolResult]]:  # fmt: skip
        """Parse one model message and execute it: results for its calls, then for its bad blocks.

        The agent loop's one entry point; the episode is over when the parsed turn has no calls
        and no errors (its `content` is the final answer to pass to `verify`). `parse` is the
        policy's tool-call format (`tool_formats`); the default reads ``<tool_call>`` blocks.
        `time_limit`: seconds per call (the turn's calls share calls x limit; None: no limit); past
        it the calls are interrupted and answered with an error (`time_limit.call_with_time_limit`).
        """
        parsed = (parse or parse_tool_calls)(text)
        limit = None if time_limit is None or time_limit <= 0 else time_limit * len(parsed.calls)
        try:
            results = call_with_time_limit(lambda: self.step(parsed.calls), limit) if parsed.calls else []
        except ToolTimeout as exc:
            why = f"tool timed out: {exc}"
            results = [ToolResult(c.name, f"Error: {why}", error=why) for c in parsed.calls]
        except Exception as exc:  # noqa: BLE001 - a tool that raises fails its turn, never the run
            why = f"tool raised {type(exc).__name__}: {str(exc)[:200]}"
            results = [ToolResult(c.name, f"Error: {why}", error=why) for c in parsed.calls]
        results = [bounded(r) for r in results]
        return parsed, results + (self.reject(parsed.errors) if parsed.errors else [])

    def end_turn(self, answer: str = "") -> Sequence[Mapping[str, str]] | None:
        """The messages that answer a model turn without tool calls (a user's next turn), or None: the episode is over.

        Single-turn tasks end at the answer; multi-turn tasks override this (`answer`: the model's text)."""
        return None

    def stats(self) -> dict[str, float]:
        """Counters for logging (e.g. invalid calls); empty unless the episode keeps any."""
        return {}

    @property
    def over(self) -> bool:
        """True when a tool-call turn ended the episode (a benchmark whose conversation ends at a message,
        whatever it holds); an answer ends it through `end_turn`."""
        return False


def next_turn(episode: Episode, answer: str, time_limit: float | None = DEFAULT_TOOL_TIME_LIMIT,
              ) -> tuple[list[dict[str, str]] | None, str | None]:  # fmt: skip
    """`episode.end_turn(answer)` as chat messages, and why it failed if it raised or ran past `time_limit` (the
    episode then ends). The limit is the tools' (an answer may be decoded and executed); a simulated user's reply is
    not counted (`time_limit_paused`)."""
    try:
        nxt = call_with_time_limit(lambda: episode.end_turn(answer), time_limit)
    except ToolTimeout as exc:
        return None, f"end_turn failed: {exc}"
    except Exception as exc:  # noqa: BLE001 - a broken task ends its episode, not the batch
        return None, f"end_turn failed: {type(exc).__name__}: {str(exc)[:120]}"
    return ([{"role": str(m["role"]), "content": str(m["content"])} for m in nxt] if nxt else None), None


@dataclass(frozen=True)
class TurnOutcome:
    """What one model turn did to an episode, and whether the episode goes on: the one rule the agent loop
    and `envs.score.replay` both follow."""

    parsed: ParsedTurn
    results: list[ToolResult]
    answer: str  # the turn's text outside tool calls (a failed `end_turn`'s reason appended): the final answer so far
    user_messages: list[dict[str, str]] | None  # after an answer: the task's next user turn, if it goes on
    done: bool
    truncated: bool  # ended by `task.max_turns` while the task would have gone on

    @property
    def is_answer(self) -> bool:
        return not self.parsed.calls and not self.parsed.errors


def play_turn(episode: Episode, task: Task, text: str, turns_played: int,
              parse: Callable[[str], ParsedTurn] | None = None,
              time_limit: float | None = DEFAULT_TOOL_TIME_LIMIT) -> TurnOutcome:  # fmt: skip
    """Run model turn number `turns_played` (counting this one) of `task`: its tool calls, or, for an answer (no
    call, no malformed block), the task's next user turn (`end_turn`). The episode ends on an answer with no
    next turn, or after `task.max_turns` model turns."""
    parsed, results = episode.turn(text, parse, time_limit)
    answer = parsed.content
    if not parsed.calls and not parsed.errors:
        nxt, failed = next_turn(episode, answer, time_limit)
        if failed:  # a broken task ends its episode
            answer = f"{answer}\n[{failed}]"
        if nxt is None or turns_played >= task.max_turns:
            return TurnOutcome(parsed, results, answer, None, True, nxt is not None)
        return TurnOutcome(parsed, results, answer, nxt, False, False)
    over = turns_played >= task.max_turns
    return TurnOutcome(parsed, results, answer, None, over or episode.over, over and not episode.over)


INVALID_REWARD = "invalid reward"
"""Prefix of a verdict's reason when the verifier raised or gave a reward outside [0, 1] (scored 0)."""


def checked_verdict(episode: Episode, final_answer: str, time_limit: float | None = DEFAULT_TOOL_TIME_LIMIT) -> Verdict:
    """`episode.verify(final_answer)`, with a reward that is a finite number in [0, 1] or else 0 and why.

    The verifier runs under the tools' time limit: one that runs past it scores 0 with the reason."""
    try:
        verdict = call_with_time_limit(lambda: episode.verify(final_answer), time_limit)
        reward = float(verdict.reward)
    except ToolTimeout as exc:
        return Verdict(0.0, f"{INVALID_REWARD}: verifier {exc}")
    except Exception as exc:  # noqa: BLE001 - a verifier bug costs this episode its reward, not the run
        return Verdict(0.0, f"{INVALID_REWARD}: verifier raised {type(exc).__name__}: {str(exc)[:200]}")
    if not math.isfinite(reward) or not 0.0 <= reward <= 1.0:
        return Verdict(0.0, f"{INVALID_REWARD}: {reward!r} outside [0, 1] ({str(verdict.reason)[:200]})")
    return Verdict(reward, str(verdict.reason), dict(getattr(verdict, "scores", None) or {}))


class Environment(ABC):
    """A tool-use world: its name, tool schemas (Qwen3 `tools=` format) and tasks."""

    name: str

    @abstractmethod
    def tool_schemas(self) -> list[dict[str, Any]]:
        """JSON-schema function docs: ``{"type": "function", "function": {"name", "description", "parameters"}}``."""

    @abstractmethod
    def tasks(self) -> list[Task]:
        """All tasks of this environment, deterministic for a given construction seed."""

    def tools_for(self, task: Task) -> list[dict[str, Any]]:
        """The schemas rendered into the prompt of `task` (per-task subsets, as in BFCL)."""
        return [dict(t) for t in task.tools] if task.tools else self.tool_schemas()

    @abstractmethod
    def reset(self, task: Task) -> Episode:
        """A fresh episode for `task`, with its own copy of the world state."""
