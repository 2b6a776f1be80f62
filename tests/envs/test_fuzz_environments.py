"""Fault injection for every environment: hypothesis writes model turns, `turn` and `verify` must hold.

Every `conf/env/*.yaml` is covered (the benchmark ones when their data is found: tests/data_roots.py). Turns mix
prose, real tool names of the task with arbitrary JSON arguments (wrong types, nulls, deep lists,
huge numbers, long strings), malformed blocks and floods of tags. Each turn must come back as
`ToolResult`s of bounded size, never an exception, and `verify` must give a finite reward in
[0, 1] whatever state the turns left behind.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hydra.utils import instantiate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from envsched_lightning.envs.base import MAX_RESULT_CHARS, ToolCall, ToolResult
from envsched_lightning.envs.parsing import render_tool_call
from tests.data_roots import config_folders, data_root

CONF_ENV = Path(__file__).resolve().parents[2] / "conf" / "env"
ENV_YAMLS = sorted(CONF_ENV.glob("*.yaml"))
_ENVS: dict[str, object] = {}


def environment(path: Path):
    node = OmegaConf.load(path)
    if "data_dir" in node:
        node.data_dir = str(data_root(*config_folders(path.stem, node)))
    if path.stem not in _ENVS:
        _ENVS[path.stem] = instantiate(node)
    return _ENVS[path.stem]


SCALARS = (st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.sampled_from([1e308, -1e308, 1e100, 0.0])
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40)
           | st.sampled_from(["", "..", "/", "x" * 5000, "None", "0", "-1"]))  # fmt: skip
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=12)  # fmt: skip


def turns(names: list[str], params: dict[str, list[str]]):
    """One model turn: prose, calls of real tools with fuzzed arguments, malformed blocks or floods."""
    call = st.builds(
        lambda name, args, extra: render_tool_call(ToolCall(name, {**{k: v for k, v in zip(params[name], args)}, **extra})),
        st.sampled_from(names), st.lists(JSON, max_size=4), st.dictionaries(st.text(max_size=6), JSON, max_size=2),
    )  # fmt: skip
    junk = st.sampled_from([
        "<tool_call>", "</tool_call>", "<tool_call>{\"name\": 1}</tool_call>", "<tool_call>" * 500,
        '<tool_call>{"name": "x", "arguments": "not json"}</tool_call>', "<tool_call>{" + "[" * 900,
        '<tool_call>{"name": "%s", "arguments": {"a": NaN}}</tool_call>' % names[0],
    ])  # fmt: skip
    block = call | junk
    return st.lists(block, min_size=0, max_size=3).map("\n".join) | st.text(max_size=200)


def tool_params(env, task) -> tuple[list[str], dict[str, list[str]]]:
    docs = [d.get("function", d) for d in env.tools_for(task)]
    params = {d["name"]: list((d.get("parameters") or {}).get("properties") or {}) for d in docs}
    return list(params), params


@pytest.mark.parametrize("path", ENV_YAMLS, ids=lambda p: p.stem)
def test_fuzzed_turns_never_raise_and_verify_gives_a_reward(path):
    env = environment(path)
    tasks = env.tasks()[:3]
    assert tasks, f"{path.stem} has no tasks"

    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        task = data.draw(st.sampled_from(tasks))
        names, params = tool_params(env, task)
        episode = env.reset(task)
        for _ in range(data.draw(st.integers(1, 3))):
            parsed, results = episode.turn(data.draw(turns(names, params)))
            assert all(isinstance(r, ToolResult) and len(r.content) <= MAX_RESULT_CHARS + 100 for r in results)
            assert len(results) == len(parsed.calls) + len(parsed.errors)
            for r in results:
                str(r.content).encode("utf-8", "surrogatepass")
        end_turn = getattr(episode, "end_turn", None)
        if callable(end_turn):
            end_turn()
        verdict = episode.verify(data.draw(st.text(max_size=50)))
        assert isinstance(verdict.reward, (int, float)) and math.isfinite(verdict.reward)
        assert 0.0 <= verdict.reward <= 1.0 and isinstance(verdict.reason, str)

    check()
