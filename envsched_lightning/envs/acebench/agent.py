"""ACEBench-Agent (English): `acebench_agent_multi_step` (20 tasks) and `acebench_agent_multi_turn` (30 tasks).

The agent works against stateful sandboxes (`sandboxes/phone.py`, `sandboxes/travel.py`)
and is scored the way upstream's `eval_main.py` scores it (chenchen0103/ACEBench, our code, its
behaviour):
- **end state**: after the episode, each involved class's saved attributes (upstream's `SAVED_CLASS`),
  passed through JSON as upstream's result file passes them, are compared with the possible answer by
  `agent_checker`'s rules (`end_state_reason`); the reward for training is this verdict (1 or 0);
- **process**: the agent's messages that went to execution are matched in order against the task's
  `mile_stone` (`process_score`); 1.0 when the end state is right. `reward="process"` trains on it.
Both are in each verdict's `scores` and reported by `evaluate.py`.

How an episode runs, as upstream's inference loop runs it:
- the model's tool calls are one agent message, written as upstream's text `[name(key=value, ...)]`
  (Python literals): that text is the process record, and the calls run on every involved class that
  has the method (the device's `turn_on_wifi` and `login_device` switch every app);
- a message without calls: "finish conversation" ends the episode (not as the first message); a text
  in upstream's call format is executed as upstream executes it; any other text gets, in multi_step,
  upstream's execution reply ("Please do not ask me any questions, ...", and the text counts in the
  process record) and, in multi_turn, the simulated user's reply (`envs/users.py`), which ends the
  episode when it says "finish conversation".
The state is recorded only if some message was executed (upstream's result list is otherwise empty).
Departures (none changes a verdict on the tasks' own paths, see `tests/official/acebench_agent_diff.py`):
upstream runs `eval` on the call text; here calls are dispatched to the sandbox methods with the
decoded literal values, so a value upstream would evaluate as code (a call with keywords nested in
an argument, e.g. `dict(a=1)`, or `inf`) fails the call instead; each episode starts from a fresh
world (upstream keeps instances in module globals keyed by the task number, shared by the two
categories when one process runs both).
"""

from __future__ import annotations

import ast
import copy
import json
import math
import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from envsched_lightning.envs.acebench import official
from envsched_lightning.envs.acebench.normal import function_docs
from envsched_lightning.envs.acebench.sandboxes.phone import BaseApi, FoodPlatform, MessageApi, ReminderApi
from envsched_lightning.envs.acebench.sandboxes.travel import Travel
from envsched_lightning.envs.task_text import task_text
from envsched_lightning.envs.base import Environment, Episode, Task, ToolCall, ToolResult, Verdict
from envsched_lightning.envs.parsing import render_assistant_turn
from envsched_lightning.envs.benchmark_files import field_types, pattern_features, read_jsonl, resolve_data_dir, to_tool_schema
from envsched_lightning.envs.registry import register_env
from envsched_lightning.envs.users import (
    ACEBENCH_BASE_USER, ACEBENCH_TRAVEL_USER, UserPrompt, UserSettings, UserSimulator,
)  # fmt: skip
from envsched_lightning.scheduling import TaskSpec

CATEGORIES = ("agent_multi_step", "agent_multi_turn")
CLASSES: dict[str, type] = {"BaseApi": BaseApi, "MessageApi": MessageApi, "ReminderApi": ReminderApi,
                            "FoodPlatform": FoodPlatform, "Travel": Travel}  # fmt: skip
SAVED = {"BaseApi": ("wifi", "logged_in"), "MessageApi": ("inbox",), "ReminderApi": ("reminder_list",),
         "FoodPlatform": ("users", "logged_in_users", "orders"), "Travel": ("users", "reservations")}  # fmt: skip
FINISH = "finish conversation"
NO_QUESTIONS = "Please do not ask me any questions, use the known conditions to solve the problem"
MAX_MESSAGES = 40  # upstream's conversation limit (agent, execution and user messages)
MAX_AGENT_TURNS = 20  # at most 20 agent messages fit, each answered
REWARDS = ("end_state", "process")

_PHONE_PROMPT = (
    "You are a mobile phone assistant. The current time is June 11, 2024, 16:00 (Beijing Time). You can send and "
    "read text messages, manage reminders and order food delivery with the tools below. Call one tool at a time "
    "unless calls are independent. Use only information the user or the tools gave you. Before reading "
    "messages, log in to the device; before ordering food, log in to the food platform with the user's account. "
    "If the inbox is full, ask which message to delete. Names the user gives are full names."
)  # fmt: skip
_TRAVEL_PROMPT = (
    "You are an airline agent. The current time is July 15, 2024, 08:00 (Beijing Time). You can look up flights "
    "and reservations, book, modify and cancel flights with the tools below. Get the user's ID and password "
    "before booking or changing anything, list what you are about to do and wait for the user's explicit yes. "
    "Free checked bags: regular members 1 (economy) or 2 (business), silver 2 or 3, gold 3; each further bag "
    "costs 50 yuan. Use only information the user or the tools gave you."
)  # fmt: skip
_ENDING = f'When the task is complete, reply with exactly "{FINISH}".'


_UNSET = object()


class DecodeFailure(ValueError):
    """The message is not a call list upstream's agent decoder turns into executable calls."""


# --- upstream's agent decoding --------------------------------------------------------------------


def _check_renderable(value: Any) -> bool:
    """Whether a top-level argument is written back as a nested call (a dict: upstream renders `{name: {args}}`
    as `name(args)`); raises DecodeFailure where upstream's rendering raises (an empty dict, non-dict args)."""
    if not isinstance(value, dict):
        return False
    if not value:
        raise DecodeFailure("an empty dict argument cannot be written as a call")
    args = value[next(iter(value))]
    if not isinstance(args, dict):
        raise DecodeFailure("a dict argument whose first value is not a dict cannot be written as a call")
    for inner in args.values():
        _check_renderable(inner)
    return True


def decode_agent_message(text: str) -> list[tuple[str, dict[Any, Any], str | None]]:
    """Upstream's `decode_function_list` for agent messages: (name, arguments, why it cannot run or None).

    Brackets are added where missing and then stripped with the quotes next to them; a single call,
    or a list/tuple of calls, decodes; another expression decodes to no calls; anything that raises
    upstream (a syntax error, an item that is not a call, an unsupported value) is a DecodeFailure."""
    if not text:
        raise DecodeFailure("empty message")
    source = text[1:] if text[0] == " " else text
    source = ("" if source.startswith("[") else "[") + source + ("" if source.endswith("]") else "]")
    try:
        body = ast.parse(source.strip("[]'"), mode="eval").body
        if isinstance(body, ast.Call):
            nodes = [body]
        elif isinstance(body, (ast.Tuple, ast.List)):
            if not all(isinstance(e, ast.Call) for e in body.elts):
                raise DecodeFailure("a list item is not a call")
            nodes = list(body.elts)  # type: ignore[arg-type]
        else:
            nodes = []
        calls, budget = [], official.DecodeBudget()  # one size budget for the whole message
        for node in nodes:
            ((name, args),) = official._call(node, agent=True, budget=budget).items()  # type: ignore[arg-type]
            nested = any([_check_renderable(v) for v in args.values()])  # every value checked, as upstream renders all
            calls.append((name, args, "an argument is a call, which is not evaluated here" if nested else None))
        return calls
    except DecodeFailure:
        raise
    except Exception as exc:  # noqa: BLE001 - upstream catches every decoding exception
        raise DecodeFailure(f"{type(exc).__name__}: {str(exc)[:120]}") from None


def call_text(calls: Sequence[ToolCall]) -> str:
    """Tool calls as the one agent message upstream would have received: `[name(key=value, ...), ...]`."""
    return official.render([(c.name, c.arguments) for c in calls], check=False)


def _finite(value: Any) -> bool:
    """False where a float is inf/nan at any depth (its repr is not a literal upstream's `eval` reads back)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(k) and _finite(v) for k, v in value.items())
    return True


def shown(result: Any) -> str:
    """A method's result as upstream's execution message shows it (dicts through JSON, the rest as text)."""
    if isinstance(result, dict):
        try:
            return json.dumps(result, ensure_ascii=False)
        except (TypeError, ValueError):
            return str(result)
    return result if isinstance(result, str) else str(result)


# --- the world ------------------------------------------------------------------------------------


class AgentWorld:
    """One task's sandboxes, set up from `initial_config` (each class reads its own entry, then the device's).

    `stop_at_error` is upstream's multi_turn execution: the first call that raises ends the message (its
    later calls do not run) and the message is not recorded (what earlier calls changed stays). multi_step
    runs every call and records every decoded message."""

    def __init__(self, record: Mapping[str, Any], stop_at_error: bool = False) -> None:
        config = record.get("initial_config") or {}
        self.classes = list(record["involved_classes"])
        self.stop_at_error = stop_at_error
        self.instances: dict[str, Any] = {}
        for name in self.classes:
            instance = CLASSES[name]()
            instance._load_scenario(copy.deepcopy(config.get(name, {})))
            instance._load_scenario(copy.deepcopy(config.get("BaseApi", {})))
            self.instances[name] = instance
        self.methods: dict[str, list[Any]] = {}
        for instance in self.instances.values():
            for attr in sorted(dir(instance)):
                if not attr.startswith("_") and callable(getattr(instance, attr)):
                    self.methods.setdefault(attr, []).append(getattr(instance, attr))
        self.executed = False  # whether any message was recorded (upstream records the state only then)

    def run(self, calls: Sequence[tuple[str, dict[Any, Any], str | None]]) -> list[str]:
        """Execute one message's decoded calls in order; each result as upstream's execution message shows it.

        A name that is no tool repeats the message's previous result (upstream's loop keeps its last
        value), or fails when there is none."""
        results: list[str] = []
        last: Any = _UNSET
        for name, args, why in calls:
            targets = self.methods.get(name.rsplit(".", 1)[-1])
            if targets is None and last is not _UNSET:
                results.append(shown(last))
                continue
            try:
                if targets is None:
                    raise NameError(f"no function named {name!r}")
                if "." in name:
                    raise NameError(f"name {name.split('.', 1)[0]!r} is not defined")
                if why or not _finite(args):
                    raise ValueError(why or "a value is not finite")
                for method in targets:  # every class with the method (the device switches); the first error stops it
                    last = method(**copy.deepcopy(args))
                results.append(shown(last))
            except Exception as exc:  # noqa: BLE001 - upstream reports every exception as the call's result
                results.append(f"Error during execution: {exc}")
                if self.stop_at_error:
                    return results
        self.executed = True
        return results

    def saved_state(self) -> list[dict[str, dict[str, Any]]]:
        """What upstream's result file holds: each class's saved attributes after a JSON round trip."""
        if not self.executed:
            return []
        state = [{name: {k: getattr(self.instances[name], k) for k in SAVED[name]}} for name in self.classes]
        return json.loads(json.dumps(state, ensure_ascii=False))


# --- upstream's scores ----------------------------------------------------------------------------


def end_state_reason(result: Sequence[Mapping[str, Any]], truth: Any) -> str | None:
    """None when upstream's `agent_eval` passes the state, else why not.

    The number of classes must match; each expected class is compared with the first result entry that
    has the same key (an expected class no entry has is not checked); attributes present in the result are
    compared, and for an attribute that is a dict only the expected keys are (extra keys pass)."""
    expected = truth if isinstance(truth, list) else [truth]
    if len(expected) != len(result):
        return f"wrong number of classes: {len(result)} in the state, {len(expected)} expected"
    for want in expected:
        got = next((r for r in result if set(r) == set(want)), None)
        if got is None:
            continue
        scenario, wanted = next(iter(want.items()))
        for attr, value in next(iter(got.values())).items():
            if attr not in wanted:
                return f"{scenario}.{attr}: not in the possible answer"
            target = wanted[attr]
            if isinstance(target, dict):
                for key, item in target.items():
                    try:
                        if key not in value or item != value[key]:
                            return f"{scenario}.{attr}[{key!r}]: expected {item!r}, got {value.get(key) if isinstance(value, dict) else value!r}"[:300]
                    except Exception as exc:  # noqa: BLE001 - upstream's checker would raise here
                        return f"{scenario}.{attr}: upstream's checker raises {type(exc).__name__}"
            elif target != value:
                return f"{scenario}.{attr}: expected {target!r}, got {value!r}"[:300]
    return None


def canonical_message(text: str) -> str:
    """An agent message as this project renders calls (`call_text`): how a tool-calling model's message
    reads. A milestone upstream wrote in another form of the same calls (double quotes, no space after
    `:` in a dict) is compared in this form with such messages; one that does not decode stays as written."""
    try:
        decoded = decode_agent_message(text.strip())
    except DecodeFailure:
        return text.strip()
    return official.render([(name, args) for name, args, _ in decoded], check=False) if decoded else text.strip()


def _in_order(made: Sequence[str], stones: Sequence[str], rendered: Sequence[bool]) -> float:
    found, at = 0, 0
    for stone in stones:
        literal, canonical = stone.strip(), canonical_message(stone) if any(rendered) else None
        while at < len(made):
            at += 1
            text = made[at - 1].strip()
            if text == literal or (rendered[at - 1] and text == canonical):
                found += 1
                break
    return found / len(stones) if stones else 1.0


def process_score(made: Sequence[str], mile_stone: Sequence[Any], end_state_ok: bool,
                  rendered: Sequence[bool] | None = None) -> float:  # fmt: skip
    """Upstream's `agent_eval_process` for one task: 1 with a right end state; else the share of milestones
    found in order among the executed messages (the best alternative, rounded to 3 places, when there are several).

    Upstream matches milestones by their literal text. A message rendered from tool calls (`rendered[i]`)
    also matches a milestone that is the same calls written in another form (`canonical_message`): a
    tool-calling model cannot choose its quotes, a text model can."""
    rendered = [False] * len(made) if rendered is None else list(rendered)
    if end_state_ok:
        return 1.0
    if not mile_stone:
        return 1.0
    if isinstance(mile_stone[0], list):
        return max(round(_in_order(made, alternative, rendered), 3) for alternative in mile_stone)
    return _in_order(made, mile_stone, rendered)


# --- episodes -------------------------------------------------------------------------------------


class AgentEpisode(Episode):
    """One ACEBench-Agent conversation; `user` is the simulated user (multi_turn only)."""

    def __init__(self, category: str, record: Mapping[str, Any], answer: Mapping[str, Any], reward: str = "end_state",
                 user: UserSimulator | None = None) -> None:  # fmt: skip
        self.category, self.record, self.answer, self.reward = category, record, answer, reward
        self.world = AgentWorld(record, stop_at_error=category == "agent_multi_turn")
        self.user = user
        self.process: list[str] = []  # the agent messages that went to execution (upstream's process record)
        self.rendered: list[bool] = []  # per process message: rendered from tool calls (else the model's text)
        self.index = 0  # upstream's message index after the opening: agent, execution and user messages alike
        self.finished_by = ""
        self.ended = False  # the conversation ended inside a tool-call turn (`Episode.over`)

    def _over(self) -> bool:
        return self.index >= MAX_MESSAGES

    @property
    def over(self) -> bool:
        return self.ended

    def step(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Tool calls are the agent message upstream would have received (`call_text`), routed as upstream
        routes that message: the end-of-conversation phrase anywhere in it ends the conversation before
        anything runs; in multi_turn, a message upstream cannot decode into calls goes to the user."""
        if self.index + 1 >= MAX_MESSAGES:  # upstream's loop ends before executing this message
            self.index += 1
            return [ToolResult(c.name, "Error: the conversation is over (message limit)", "message limit") for c in calls]
        text = call_text(calls)
        if FINISH in text and self.index > 1:  # upstream ends the conversation at this message, unexecuted
            self.index += 1
            self.finished_by, self.ended = "agent", True
            why = f"the message holds {FINISH!r}: the conversation ended and nothing was executed"
            return [ToolResult(c.name, f"Not executed: {why}", why) for c in calls]
        try:
            decoded = decode_agent_message(text)
        except DecodeFailure as exc:  # a value, name or key that upstream's text cannot hold
            if self.category == "agent_multi_turn":
                return self._to_user(calls, text, exc)
            self.index += 2
            self._record(text, rendered=True)
            return [ToolResult(c.name, f"Error: {exc}", str(exc)) for c in calls]
        self.index += 2  # the agent's message and the execution's reply
        self._record(text, rendered=True)
        if len(decoded) != len(calls):  # cannot happen for rendered calls; kept honest
            return [ToolResult(c.name, "Error: the calls could not be written as one message", "render") for c in calls]
        outputs = self.world.run(decoded)
        skipped = "Not executed: an earlier call of this message failed"
        outputs += [skipped] * (len(calls) - len(outputs))  # multi_turn: a failing call ends its message
        return [ToolResult(c.name, out, skipped if out == skipped else None) for c, out in zip(calls, outputs)]

    def _record(self, message: str, rendered: bool) -> None:
        self.process.append(message)
        self.rendered.append(rendered)

    def _to_user(self, calls: Sequence[ToolCall], text: str, why: DecodeFailure) -> list[ToolResult]:
        """A multi_turn message upstream cannot run goes to its simulated user, as a text message would
        (`end_turn`): the user's reply answers the first call; the conversation may end there."""
        self.index += 1
        note = f"not executed ({why}): the message went to the user"
        rest = [ToolResult(c.name, f"Not executed: {note}", note) for c in calls[1:]]
        reply, self.ended = self._ask_user(text)
        content = f"user: {reply}" if reply is not None else f"Not executed: {note}; the conversation is over"
        return [ToolResult(calls[0].name, content, note), *rest]

    def _ask_user(self, message: str) -> tuple[str | None, bool]:
        """(the user's reply to an agent message that did not go to execution, whether the conversation ended):
        no reply when there is no user or the message limit is reached; the user's stop phrase ends it too."""
        if self.user is None or self._over():
            return None, True
        reply, at = self.user.reply(message), self.index
        self.index += 1
        if FINISH in reply and at > 1:
            self.finished_by = "user"
            return reply, True
        return reply, False

    def end_turn(self, answer: str = "") -> tuple[Mapping[str, str], ...] | None:
        """The reply to a message without tool calls, or None when the conversation is over."""
        at = self.index
        self.index += 1
        if (FINISH in answer and at > 1) or self._over():
            self.finished_by = "agent" if FINISH in answer else "message limit"
            return None
        if self.category == "agent_multi_step":
            self.index += 1
            self._record(answer, rendered=False)
            try:
                results = self.world.run(decode_agent_message(answer))
            except DecodeFailure:
                return ({"role": "user", "content": NO_QUESTIONS},)
            return ({"role": "user", "content": f"execution: {json.dumps(results, ensure_ascii=False)}"},)
        if _bracketed(answer):
            try:
                decoded = decode_agent_message(answer)
            except DecodeFailure:
                decoded = None
            if decoded is not None:
                self.index += 1
                self._record(answer, rendered=False)
                return ({"role": "user", "content": f"execution: {json.dumps(self.world.run(decoded), ensure_ascii=False)}"},)
        reply, ended = self._ask_user(answer)
        return None if ended else ({"role": "user", "content": reply},)

    def scores(self) -> dict[str, float]:
        state_ok = end_state_reason(self.world.saved_state(), self.answer["ground_truth"]) is None
        return {"end_state": float(state_ok), "process": process_score(self.process, self.answer["mile_stone"], state_ok, self.rendered)}

    def verify(self, final_answer: str) -> Verdict:
        try:
            state = self.world.saved_state()
        except (TypeError, ValueError) as exc:  # upstream's result file could not be written: its run stops
            return Verdict(0.0, f"end state is not JSON ({exc}); upstream's run would stop here", {"end_state": 0.0, "process": 0.0})
        why = end_state_reason(state, self.answer["ground_truth"])
        process = process_score(self.process, self.answer["mile_stone"], why is None, self.rendered)
        scores = {"end_state": float(why is None), "process": process}
        if self.user is not None:  # the simulated user's cost, reported beside the agent's
            scores |= {"user_turns": float(self.user.cost.turns), "user_tokens": float(self.user.cost.new_tokens)}
        reason = f"end state {'ok' if why is None else 'wrong: ' + why}; process {process:.3f}"
        if not self.world.executed:
            reason += " (no message was executed: nothing recorded)"
        return Verdict(scores[self.reward], reason, scores)


def user_prompt(classes: Sequence[str]) -> UserPrompt:
    """ACEBench's user rules by scenario: the airline's for `Travel` tasks, the phone's otherwise (upstream
    picks by `BaseApi` / `Travel` among the involved classes)."""
    return ACEBENCH_TRAVEL_USER if "Travel" in classes and "BaseApi" not in classes else ACEBENCH_BASE_USER


def _bracketed(text: str) -> bool:
    """Upstream's multi_turn routing test: a `[` and a later `]` on one line."""
    return any("[" in line and "]" in line[line.index("[") :] for line in text.splitlines())


class AceBenchAgentEnvironment(Environment):
    """`acebench_agent_multi_step` or `acebench_agent_multi_turn`; `reward`: "end_state" (default) or "process".

    `user`: the simulated user of multi_turn tasks: "scripted" (deterministic), "model" (a local chat model,
    `user_model_path`, with its own `user_max_new_tokens`, `user_temperature`, `user_seed`) or "api" (an
    OpenAI-compatible endpoint, `user_api`: base_url, model, key_env, ...; `envs/users.py`)."""

    def __init__(self, category: str = "agent_multi_step", data_dir: str | os.PathLike[str] | None = None,
                 reward: str = "end_state", user: str = "scripted", max_turns: int = MAX_AGENT_TURNS,
                 user_model_path: str | None = None, user_max_new_tokens: int = 128, user_temperature: float = 0.0,
                 user_seed: int = 0, user_api: Mapping[str, Any] | None = None) -> None:  # fmt: skip
        if category not in CATEGORIES:
            raise ValueError(f"unknown ACEBench-Agent category {category!r}; valid: {', '.join(CATEGORIES)}")
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}; got {reward!r}")
        self.user_settings = UserSettings(user, user_model_path, user_max_new_tokens, user_temperature, user_seed, user_api)
        self.category, self.name, self.reward, self.user, self.max_turns = category, f"acebench_{category}", reward, user, max_turns
        self.data_dir = resolve_data_dir(self.name, data_dir, os.path.join("acebench", "data_en"))
        self.rules = "official"

    @cached_property
    def records(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(task, possible answer) pairs matched by id; a class without a sandbox is an error naming the task."""
        path = self.data_dir / "possible_answer" / f"data_{self.category}.json"
        answers = {a["id"]: a for a in read_jsonl(path, check=field_types(ground_truth=(list, dict), mile_stone=list))}
        source = self.data_dir / f"data_{self.category}.json"
        tasks = read_jsonl(source, check=field_types(question=str, function=list, involved_classes=list))
        for task in tasks:
            if task["id"] not in answers:
                raise ValueError(f"{path}: no possible answer for {task['id']}")
            unknown = [c for c in task["involved_classes"] if c not in CLASSES]
            if unknown:
                raise ValueError(f"{source}: task {task['id']} uses {unknown}, which has no sandbox (known: {', '.join(CLASSES)})")
        return [(t, answers[t["id"]]) for t in tasks]

    def _task(self, record: dict[str, Any], answer: dict[str, Any]) -> Task:
        docs = function_docs(record)
        stones = answer["mile_stone"]
        n_calls = len(stones[0] if stones and isinstance(stones[0], list) else stones)
        classes = record["involved_classes"]
        features = {
            "n_functions_offered": len(docs),
            "n_expected_calls": n_calls,
            "n_classes": len(classes),
            "is_multi_turn": float(self.category == "agent_multi_turn"),
            "is_parallel": 0.0,
        } | pattern_features("multi_hop", n_calls)
        spec = TaskSpec(
            env=self.name, task_id=record["id"], tools=tuple(d["name"] for d in docs), state_keys=tuple(classes),
            verifier="acebench_agent_end_state", features=features, reward_type="binary" if self.reward == "end_state" else "fractional",
            text=task_text([record["question"]]),  # the classes' docs are shared: left out
        )  # fmt: skip
        system = f"{_TRAVEL_PROMPT if 'Travel' in classes else _PHONE_PROMPT} {_ENDING}"
        first = ({"role": "user", "content": record["question"]} if self.category == "agent_multi_step"
                 else self.user_settings.opening_message(record["question"], FINISH, user_prompt(classes)))  # a model user's: made once, when first read
        return Task(
            spec=spec, messages=({"role": "system", "content": system}, first),
            ground_truth={"record": record, "answer": answer}, max_turns=self.max_turns,
            tools=tuple(to_tool_schema(d) for d in docs),
        )  # fmt: skip

    @property
    def simulated_user(self) -> UserSettings | None:
        """Who plays the user in this category's episodes (multi_turn only; multi_step has one message)."""
        return self.user_settings if self.category == "agent_multi_turn" else None

    def _user(self, record: Mapping[str, Any]) -> UserSimulator:
        return self.user_settings.make(record["question"], FINISH, user_prompt(record["involved_classes"]))

    @cached_property
    def _tasks(self) -> list[Task]:
        return [self._task(r, a) for r, a in self.records]

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return list({s["function"]["name"]: dict(s) for t in self._tasks for s in t.tools}.values())

    def oracle_turns(self, task: Task) -> list[str]:
        """The task's milestones (the first alternative where there are several) as tool-call turns, one call
        each, then a closing answer: the scripted episodes of the SFT warm start. Milestones that upstream's
        own decoder cannot run (some are not valid Python, e.g. `'Domino's'`) are left out, so a few scripts
        miss the end state; the warm start keeps only the episodes that succeed."""
        stones = task.ground_truth["answer"]["mile_stone"]
        if stones and isinstance(stones[0], list):
            stones = stones[0]
        turns = []
        for stone in stones:
            try:
                calls = decode_agent_message(str(stone))
            except DecodeFailure:
                continue
            turns += [render_assistant_turn("", [ToolCall(name, dict(args))]) for name, args, why in calls if why is None]
        return [*turns, "All done."]

    def reset(self, task: Task) -> Episode:
        record = task.ground_truth["record"]
        user = self._user(record) if self.category == "agent_multi_turn" else None
        if user is not None:
            user.begin(task.messages[-1])  # the opening is in the task's prompt; the user goes on from it
        return AgentEpisode(self.category, record, task.ground_truth["answer"], self.reward, user)


def _register(category: str) -> None:
    register_env(f"acebench_{category}")(lambda **options: AceBenchAgentEnvironment(category, **options))


for _category in CATEGORIES:
    _register(_category)
