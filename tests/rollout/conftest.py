"""A hand-built two-tool world (like PyG's 4-node graphs): small enough to check every token by eye."""

from __future__ import annotations

import json

import pytest

from envsched_lightning.envs.base import Environment, Episode, Task, ToolCall, ToolResult, Verdict
from envsched_lightning.envs.parsing import render_tool_call
from envsched_lightning.models import tiny_qwen3_policy
from envsched_lightning.scheduling import TaskSpec

WEATHER = {"Paris": "sunny", "Oslo": "snow"}


class CounterEpisode(Episode):
    def __init__(self, task: Task) -> None:
        self.task = task
        self.count = 0  # private state: each episode starts from zero
        self.calls: list[str] = []

    def step(self, calls):
        out = []
        for call in calls:
            self.calls.append(call.name)
            if call.name == "increment":
                self.count += int(call.arguments.get("by", 1))
                out.append(ToolResult("increment", json.dumps({"count": self.count})))
            elif call.name == "weather":
                city = call.arguments.get("city", "")
                out.append(ToolResult("weather", WEATHER.get(city, "unknown")))
            else:
                out.append(ToolResult(call.name, "", error=f"unknown tool {call.name!r}"))
        return out

    def verify(self, final_answer: str) -> Verdict:
        target = self.task.ground_truth["count"]
        ok = self.count == target and str(target) in final_answer
        return Verdict(float(ok), f"count={self.count} target={target} answer={final_answer!r}")


class CounterEnv(Environment):
    """Increment a counter to a target, then say the number."""

    name = "counter"

    def tool_schemas(self):
        return [
            {"type": "function", "function": {"name": "increment", "description": "Add to the counter.",
             "parameters": {"type": "object", "properties": {"by": {"type": "integer"}}, "required": ["by"]}}},
            {"type": "function", "function": {"name": "weather", "description": "Weather in a city.",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        ]  # fmt: skip

    def tasks(self):
        return [
            Task(TaskSpec("counter", f"t{n}", tools=("increment",)),
                 ({"role": "user", "content": f"Make the counter {n}."},), {"count": n}, max_turns=3)
            for n in (2, 3, 5)
        ]  # fmt: skip

    def reset(self, task):
        return CounterEpisode(task)

    def oracle_turns(self, task):
        n = task.ground_truth["count"]
        return [render_tool_call(ToolCall("increment", {"by": n})), f"The counter is {n}."]


@pytest.fixture(scope="session")
def counter_env() -> CounterEnv:
    return CounterEnv()


@pytest.fixture(scope="session")
def tiny_policy(counter_env):
    return tiny_qwen3_policy(envs=[counter_env], vocab_size=512, seed=0)
