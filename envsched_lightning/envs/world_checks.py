"""Checks any tool world should pass before it trains a model, whatever its size.

    python -m envsched_lightning.envs.world_checks library [--num-tasks 20]

The shipped worlds pass these and more (hundreds of tasks, 4-10 tools: `tests/envs/test_worlds.py`);
a world of your own with two tools and five tasks can pass these. Each returns problems as text
naming the task, so a failing world says what to fix:

- the oracle's turns score exactly 1 on every task, with no tool error;
- doing nothing, or the oracle's last call with one argument changed, scores less than 1 (a checker
  that passes anything teaches nothing);
- episodes do not share state: the oracle twice gives 1 twice, an idle episode fails, and the
  world's initial state is unchanged afterwards;
- tool schemas are function docs (a name, a description, JSON-typed object parameters);
- task specs tell the truth (the oracle's tools are in the spec, the spec's tools are offered);
- generated tasks are seeded: the same seed gives the same tasks, another seed others.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from .base import Environment
from .calls import ToolCall
from .oracle import oracle_turns, run_scripted
from .parsing import render_assistant_turn
from .patterns import calls_of

JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}


def changed_value(value: Any) -> Any:
    """A different value of the same JSON type (bool flipped, number + 1, string + "x"), or None."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    return None


def oracle_problems(world: Environment) -> list[str]:
    out = []
    for task in world.tasks():
        verdict, results = run_scripted(world, task, oracle_turns(task))
        errors = [r.error for turn in results for r in turn if r.error]
        if verdict.reward != 1.0 or errors:
            out.append(f"{task.spec.key}: the oracle scores {verdict.reward} ({verdict.reason}); tool errors: {errors}")
    return out


def wrong_action_problems(world: Environment) -> list[str]:
    out = []
    for task in world.tasks():
        nothing, _ = run_scripted(world, task, ["OK."])
        if nothing.reward >= 1.0:
            out.append(f"{task.spec.key}: answering 'OK.' without any call scores {nothing.reward}")
        gt = task.ground_truth
        turns = calls_of(gt) if isinstance(gt, dict) and "turns" in gt else []
        if not turns or not turns[-1] or not (gt.get("expected_changes") or "calls" in gt.get("checks", ())):
            continue
        last = turns[-1][-1]
        key = next((k for k, v in last.arguments.items() if changed_value(v) is not None), None)
        if key is None:
            continue
        turns[-1][-1] = ToolCall(last.name, {**last.arguments, key: changed_value(last.arguments[key])})
        wrong, _ = run_scripted(world, task, [render_assistant_turn("", t) for t in turns] + [gt["answer"]])
        if wrong.reward >= 1.0:
            out.append(f"{task.spec.key}: the oracle's last call with {key} changed still scores {wrong.reward}")
    return out


def isolation_problems(world: Environment) -> list[str]:
    writing = [t for t in world.tasks() if isinstance(t.ground_truth, dict) and t.ground_truth.get("expected_changes")]
    if not writing or not hasattr(world, "initial_state"):
        return []
    task = writing[0]
    before = json.dumps(world.initial_state(), sort_keys=True, default=str)
    first, _ = run_scripted(world, task, oracle_turns(task))
    idle = world.reset(task)
    second, _ = run_scripted(world, task, oracle_turns(task))
    out = []
    if not first.reward == second.reward == 1.0:
        out.append(f"{task.spec.key}: the oracle scored {first.reward} then {second.reward}: episodes share state")
    if idle.verify(task.ground_truth.get("answer", "")).reward >= 1.0:
        out.append(f"{task.spec.key}: an episode that did nothing passes: its state is another episode's")
    if json.dumps(world.initial_state(), sort_keys=True, default=str) != before:
        out.append("episodes changed the world's initial state (reset must deep-copy it)")
    return out


def schema_problems(world: Environment) -> list[str]:
    out, names = [], []
    for doc in world.tool_schemas():
        fn = doc.get("function", {}) if isinstance(doc, dict) else {}
        name = fn.get("name")
        where = f"tool {name!r}"
        if doc.get("type") != "function" or not isinstance(name, str) or not name.isidentifier():
            out.append(f"{where}: not a function doc with an identifier name")
            continue
        names.append(name)
        if not isinstance(fn.get("description"), str) or not fn["description"]:
            out.append(f"{where}: no description")
        params = fn.get("parameters") or {}
        props = params.get("properties")
        if params.get("type") != "object" or not isinstance(props, dict):
            out.append(f"{where}: parameters are not a JSON object schema")
            continue
        if not set(params.get("required", [])) <= set(props):
            out.append(f"{where}: required names a parameter it does not define")
        out += [f"{where}.{p}: type {s.get('type')!r} is not a JSON type" for p, s in props.items() if s.get("type") not in JSON_TYPES]
    if not names:
        out.append("the world has no tools")
    if len(names) != len(set(names)):
        out.append(f"tool names repeat: {sorted(n for n in set(names) if names.count(n) > 1)}")
    return out


def spec_problems(world: Environment) -> list[str]:
    out = []
    ids = [t.spec.task_id for t in world.tasks()]
    if len(ids) != len(set(ids)):
        out.append(f"task ids repeat: {sorted({i for i in ids if ids.count(i) > 1})[:5]}")
    tools_for = getattr(world, "tools_for", None)
    for task in world.tasks():
        gt = task.ground_truth
        called = {c.name for turn in calls_of(gt) for c in turn} if isinstance(gt, dict) and "turns" in gt else set()
        offered = {d["function"]["name"] for d in tools_for(task)} if callable(tools_for) else set(task.spec.tools)
        if task.spec.env != world.name:
            out.append(f"{task.spec.key}: spec.env {task.spec.env!r} is not the world's name {world.name!r}")
        if not called <= set(task.spec.tools) <= offered:
            out.append(f"{task.spec.key}: the oracle calls {sorted(called)}, the spec lists {sorted(task.spec.tools)}, "
                       f"the prompt offers {sorted(offered)}")  # fmt: skip
    return out


def seeding_problems(world: Environment, num_tasks: int = 12) -> list[str]:
    cls = type(world)
    if getattr(world, "tasks_path", None) or "seed" not in getattr(cls.__init__, "__code__", ()).co_varnames:
        return []  # tasks from a file: nothing generated

    def key(env: Environment) -> list[str]:
        return [json.dumps([t.spec.key, t.messages, t.ground_truth], sort_keys=True, default=str) for t in env.tasks()]

    same = key(cls(num_tasks=num_tasks, seed=3)) == key(cls(num_tasks=num_tasks, seed=3))
    other = key(cls(num_tasks=num_tasks, seed=3)) != key(cls(num_tasks=num_tasks, seed=4))
    return ([] if same else ["the same seed generated different tasks"]) + (
        [] if other else ["seeds 3 and 4 generated the same tasks (is the seed used?)"])  # fmt: skip


CHECKS = {
    "oracle": oracle_problems,
    "wrong actions": wrong_action_problems,
    "isolation": isolation_problems,
    "schemas": schema_problems,
    "specs": spec_problems,
    "seeding": seeding_problems,
}


def check_world(world: Environment) -> dict[str, list[str]]:
    """{check: problems}; every list empty means the world passes."""
    return {name: fn(world) for name, fn in CHECKS.items()}


def main(argv: Sequence[str] | None = None) -> int:
    from .registry import make_env

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("env", help="a registered environment name (@register_env), e.g. banking")
    parser.add_argument("--num-tasks", type=int, default=20)
    args = parser.parse_args(argv)
    world = make_env(args.env, num_tasks=args.num_tasks)
    failed = 0
    for name, problems in check_world(world).items():
        print(f"{'ok  ' if not problems else 'FAIL'} {name}" + "".join(f"\n     {p}" for p in problems[:10]))
        failed += bool(problems)
    print(f"{args.env}: {len(world.tasks())} tasks, {len(CHECKS) - failed} of {len(CHECKS)} checks pass")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
