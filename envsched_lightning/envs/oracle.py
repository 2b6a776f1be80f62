"""Scripted episodes: the assistant texts that solve a task, and a replay loop that scores any script.

`oracle_turns` is how ground truth is checked (it must score 1.0) and what an SFT warm start
trains on; `run_scripted` drives an episode exactly as the agent loop does, through `Episode.turn`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .base import Environment, Task, ToolResult, Verdict
from .parsing import ParsedTurn, render_assistant_turn
from .patterns import calls_of


def oracle_turns(task: Task) -> list[str]:
    """One assistant text per oracle tool turn (``<tool_call>`` blocks), then the final answer."""
    if "answer" not in task.ground_truth:
        raise ValueError(f"task {task.spec.key} has no scripted ground truth (no 'answer')")
    return [render_assistant_turn("", turn) for turn in calls_of(task.ground_truth)] + [task.ground_truth["answer"]]


def run_scripted(env: Environment, task: Task, texts: Sequence[str],
                 parse: Callable[[str], ParsedTurn] | None = None) -> tuple[Verdict, list[list[ToolResult]]]:  # fmt: skip
    """Play `texts` as the model's turns until one has no tool call or `task.max_turns` is hit;
    `parse` reads another family's call format (`Episode.turn`)."""
    episode = env.reset(task)
    results: list[list[ToolResult]] = []
    answer = ""
    for text in list(texts)[: task.max_turns]:
        parsed, out = episode.turn(text, parse)
        if not parsed.calls and not parsed.errors:
            answer = parsed.content
            break
        results.append(out)
    return episode.verify(answer), results
