"""BFCL-v3 `multi_turn_base` on our own executable backends, with the official state/response checks.

Upstream runs the model's and the ground truth's calls on two instances of its Python classes; those
classes were not shipped, so `backends/` re-implements the supported ones from the function docs.
Records touching any other class are excluded (`MultiTurnEnvironment.excluded` lists them).

Episodes span several user turns. The agent loop drives them through one extra method,
`MultiTurnEpisode.end_turn()`, called when the model answers without a tool call: it returns the
next user messages, or None when the conversation is over. Ground-truth call strings such as
``mv(source='a', destination='b')`` are read with `ast.parse` and `ast.literal_eval` only.
"""

from __future__ import annotations

import ast
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from envsched_lightning.envs.backends import Backend, render_result
from envsched_lightning.envs.backends.file_system import GorillaFileSystem
from envsched_lightning.envs.backends.math_api import MathAPI
from envsched_lightning.envs.backends.message_api import MessageAPI
from envsched_lightning.envs.backends.posting_api import TwitterAPI
from envsched_lightning.envs.base import Environment, Episode, Task, ToolCall, ToolResult, Verdict
from envsched_lightning.envs.bfcl import field_types, pattern_features, read_jsonl, resolve_data_dir, to_tool_schema
from envsched_lightning.envs.parsing import render_assistant_turn, validate_call
from envsched_lightning.envs.registry import register_env
from envsched_lightning.scheduling import TaskSpec

FUNC_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system", "MathAPI": "math_api", "MessageAPI": "message_api",
    "TwitterAPI": "posting_api", "TicketAPI": "ticket_api", "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking", "VehicleControlAPI": "vehicle_control",
}  # fmt: skip
BACKENDS: dict[str, type[Backend]] = {
    "GorillaFileSystem": GorillaFileSystem, "MathAPI": MathAPI, "MessageAPI": MessageAPI, "TwitterAPI": TwitterAPI,
}  # fmt: skip
MAX_STEPS_PER_TURN = 20  # upstream MAXIMUM_STEP_LIMIT


def parse_call_string(text: str, docs: Mapping[str, Mapping[str, Any]]) -> ToolCall:
    """``f(1, b='x')`` -> ToolCall; positional arguments take the doc's parameter order. No eval."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"not a call: {text!r} ({exc.msg})") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {text!r}")
    name = node.func.id
    if name not in docs:
        raise ValueError(f"call to undocumented function {name!r}: {text!r}")
    order = list(docs[name].get("parameters", {}).get("properties", {}))
    if len(node.args) > len(order):
        raise ValueError(f"too many positional arguments: {text!r}")
    args = {order[i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    args.update({kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None})
    return ToolCall(name, args)


class World:
    """The instances of one record's involved classes, with calls routed by tool name."""

    def __init__(self, classes: Sequence[str], config: Mapping[str, Any]) -> None:
        self.instances: dict[str, Backend] = {}
        self._owner: dict[str, Backend] = {}
        for cls in classes:
            instance = BACKENDS[cls]()
            instance.load(config.get(cls, {}))
            self.instances[cls] = instance
            self._owner.update(dict.fromkeys(instance.tool_names, instance))

    def execute(self, call: ToolCall) -> dict[str, Any]:
        owner = self._owner.get(call.name)
        return owner.execute(call.name, call.arguments) if owner else {"error": f"no such tool {call.name!r}"}

    def state(self) -> dict[str, dict[str, Any]]:
        return {cls: instance.public_state() for cls, instance in self.instances.items()}


def check_turns(record: Mapping[str, Any], truth: Sequence[Sequence[ToolCall]], model: Sequence[Sequence[ToolCall]]) -> Verdict:
    """Replay both call sequences on fresh worlds; every turn must pass the three official checks."""
    classes, config = record["involved_classes"], record["initial_config"]
    model_world, truth_world = World(classes, config), World(classes, config)
    model_results: Counter[str] = Counter()
    for t, expected in enumerate(truth):
        made = model[t] if t < len(model) else []
        model_results.update(render_result(model_world.execute(c)) for c in made)
        wanted = Counter(render_result(truth_world.execute(c)) for c in expected)
        if expected and not made:
            return Verdict(0.0, f"turn {t}: empty turn, ground truth makes {len(expected)} call(s)")
        model_state, truth_state = model_world.state(), truth_world.state()
        for cls in classes:
            diff = [k for k in truth_state[cls] if model_state[cls].get(k) != truth_state[cls][k]]
            if diff:
                return Verdict(0.0, f"turn {t}: state mismatch in {cls}.{diff[0]}")
        missing = wanted - model_results
        if missing:
            return Verdict(0.0, f"turn {t}: missing ground-truth result {next(iter(missing))[:120]}")
    return Verdict(1.0, "ok")


class MultiTurnEpisode(Episode):
    """Executes model calls live (for the model to read) and re-checks the whole log at the end."""

    def __init__(self, record: Mapping[str, Any], truth: Sequence[Sequence[ToolCall]],
                 schemas: Sequence[Mapping[str, Any]] = ()) -> None:  # fmt: skip
        self._record, self._truth, self._schemas = record, truth, list(schemas)
        self._world = World(record["involved_classes"], record["initial_config"])
        self.turns: list[list[ToolCall]] = [[]]

    def step(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        results = []
        for call in calls:
            self.turns[-1].append(call)
            invalid = validate_call(call, self._schemas) if self._schemas else None
            if invalid:  # checked against the offered docs before any backend runs
                results.append(ToolResult(call.name, f"Error: {invalid}", invalid))
                continue
            try:
                out = self._world.execute(call)
                results.append(ToolResult(call.name, render_result(out), out.get("error")))
            except Exception as exc:  # noqa: BLE001 - a result that cannot be rendered is the call's error
                results.append(ToolResult(call.name, "", f"{call.name}: {type(exc).__name__}: {str(exc)[:200]}"))
        return results

    def end_turn(self) -> tuple[Mapping[str, str], ...] | None:
        """Close the current user turn; the next user turn's messages, or None when all are done."""
        questions = self._record["question"]
        if len(self.turns) >= len(questions):
            return None
        self.turns.append([])
        return tuple(questions[len(self.turns) - 1])

    def verify(self, final_answer: str) -> Verdict:
        return check_turns(self._record, self._truth, self.turns)


@register_env("bfcl_multi_turn_base")
class MultiTurnEnvironment(Environment):
    """BFCL-v3 multi_turn_base, restricted to records whose classes all have a backend."""

    name = "bfcl_multi_turn_base"

    def __init__(self, data_dir: str | os.PathLike[str] | None = None) -> None:
        self.data_dir = resolve_data_dir(self.name, data_dir, "bfcl_v3")

    @cached_property
    def docs(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Class -> tool name -> FunctionDoc, for every class (so exclusions are by data, not by file)."""
        return {
            cls: {d["name"]: d for d in read_jsonl(self.data_dir / "multi_turn_func_doc" / f"{stem}.json", key="name")}
            for cls, stem in FUNC_DOC_FILES.items()
        }

    @cached_property
    def _loaded(self) -> tuple[list[tuple[dict[str, Any], list[list[ToolCall]]]], list[str]]:
        questions = read_jsonl(self.data_dir / "BFCL_v3_multi_turn_base.json",
                               check=field_types(question=list, involved_classes=list, initial_config=dict))
        answer_path = self.data_dir / "possible_answer" / "BFCL_v3_multi_turn_base.json"
        answers = {a["id"]: a["ground_truth"] for a in read_jsonl(answer_path, check=field_types(ground_truth=list))}
        kept, excluded = [], []
        for q in questions:
            if not set(q["involved_classes"]) <= BACKENDS.keys():
                excluded.append(q["id"])
                continue
            docs = {n: d for cls in q["involved_classes"] for n, d in self.docs[cls].items()}
            try:
                truth = [[parse_call_string(s, docs) for s in turn] for turn in answers[q["id"]]]
            except (KeyError, ValueError) as exc:
                raise ValueError(f"{answer_path}: record {q['id']}: {exc}") from None
            kept.append((q, truth))
        return kept, excluded

    @property
    def excluded(self) -> list[str]:
        """Ids of records needing a class we have no backend for."""
        return list(self._loaded[1])

    def _task(self, record: dict[str, Any], truth: list[list[ToolCall]]) -> Task:
        classes = record["involved_classes"]
        docs = [d for cls in classes for d in self.docs[cls].values()]
        n_calls = sum(len(t) for t in truth)
        features = {
            "n_functions_offered": len(docs),
            "n_user_turns": len(record["question"]),
            "n_expected_calls": n_calls,
            "n_classes": len(classes),
            "max_calls_per_turn": max((len(t) for t in truth), default=0),
            "has_empty_turn": any(not t for t in truth),
            "is_parallel": 0.0,
            "is_multi_turn": 1.0,
        } | pattern_features("multi_hop", n_calls)
        spec = TaskSpec(
            env=self.name, task_id=record["id"], tools=tuple(d["name"] for d in docs), state_keys=tuple(classes),
            verifier="bfcl_multi_turn_state_response", features=features, reward_type="binary",
        )  # fmt: skip
        return Task(
            spec=spec, messages=tuple(record["question"][0]), ground_truth={"record": record, "calls": truth},
            max_turns=MAX_STEPS_PER_TURN * len(record["question"]), tools=tuple(to_tool_schema(d) for d in docs),
        )  # fmt: skip

    @cached_property
    def _tasks(self) -> list[Task]:
        return [self._task(q, t) for q, t in self._loaded[0]]

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def oracle_turns(self, task: Task) -> list[str]:
        """The ground truth as a model would play it: per user turn, one message with that turn's
        calls (none for an empty turn), then a short answer that closes the turn."""
        texts: list[str] = []
        for turn in task.ground_truth["calls"]:
            if turn:
                texts.append(render_assistant_turn("", turn))
            texts.append("Done.")
        return texts

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [to_tool_schema(d) for cls in BACKENDS for d in self.docs[cls].values()]

    def reset(self, task: Task) -> Episode:
        return MultiTurnEpisode(task.ground_truth["record"], task.ground_truth["calls"], self.tools_for(task))
