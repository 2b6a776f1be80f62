"""Dataset rows and a reward function built from our environments, for trainers that own the rollout.

The rows carry the task identity (``env``, ``task_id`` columns) next to the prompt, and the reward
function finds the task by those columns, so rows can be shuffled or filtered freely. A completion
is scored as one model turn: its tool calls are parsed (never evaluated) and run against a fresh
episode, then the environment's verifier scores the result (`run_scripted`, as the oracle check does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transformers import PreTrainedTokenizerBase

from envsched_lightning.envs.base import Environment, Task
from envsched_lightning.envs.oracle import run_scripted
from envsched_lightning.envs.tool_formats import tool_format as get_tool_format
from envsched_lightning.rollout.agent_loop import ChatRenderer
from envsched_lightning.scheduling import TaskSpec

from .mapping import TaskKey, unique_rows

Item = tuple[Task, Environment]


def prompt_records(items: Sequence[Item], tokenizer: PreTrainedTokenizerBase,
                   chat_template_kwargs: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
    """One row per task: ``prompt`` rendered by the chat template with the task's tool schemas, as the
    agent loop renders it, plus the ``env`` and ``task_id`` columns that identify the task."""
    renderer = ChatRenderer(tokenizer, chat_template_kwargs)
    return [{"prompt": renderer.render([dict(m) for m in task.messages], env.tools_for(task), gen_prompt=True),
             "env": task.spec.env, "task_id": task.spec.task_id} for task, env in items]  # fmt: skip


def specs_of(items: Sequence[Item]) -> list[TaskSpec]:
    """The `TaskSpec`s to build a scheduler over `items` with."""
    return [task.spec for task, _ in items]


def _text(completion: Any) -> str:
    """A completion as text: TRL passes a string, or a list of messages for conversational prompts."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        content = completion[-1].get("content", "")
        return content if isinstance(content, str) else ""
    return ""


class EnvReward:
    """TRL reward function: each completion scored by its task's verifier, found via ``env``/``task_id``."""

    __name__ = "env_reward"  # the name TRL logs the reward under

    def __init__(self, items: Sequence[Item], tool_format: str = "hermes") -> None:
        """`tool_format`: how the policy writes calls (`envs.tool_formats`), e.g. ``llama3_json``."""
        rows = unique_rows((task.spec.env, task.spec.task_id) for task, _ in items)  # a task given twice raises
        self._tasks: dict[TaskKey, Item] = {key: items[row] for key, row in rows.items()}
        self._parse = None if tool_format == "hermes" else get_tool_format(tool_format).parse

    def __call__(self, completions: Sequence[Any], env: Sequence[str], task_id: Sequence[str],
                 **_: Any) -> list[float]:
        rewards = []
        for completion, key in zip(completions, zip(env, task_id), strict=True):
            if key not in self._tasks:
                raise ValueError(f"reward asked for unknown task {key[0]}/{key[1]}")
            task, environment = self._tasks[key]
            verdict, _results = run_scripted(environment, task, [_text(completion)], self._parse)
            rewards.append(float(verdict.reward))
        return rewards
