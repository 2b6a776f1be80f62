"""BFCL multi-turn categories on our own backends, scored and rendered as the official harness does.

`base` (v3 or v4 data) and v4's `miss_func`, `miss_param` and `long_context` share one
environment, `MultiTurnEnvironment(category=...)`; what differs is the data file and the few
per-category rules upstream keys on the record id (see "Categories" below).

Upstream (bfcl-eval 2026.3.23, `multi_turn_checker.py` + `multi_turn_utils.py`) runs the model's
and the ground truth's calls on two instances of its Python classes; `backends/` re-implements the
supported ones to behave the same, and `World` executes calls as `execute_multi_turn_func_call`
does, so both the verdict and every tool output the model reads are the official ones. Records
touching another class are excluded (`MultiTurnEnvironment.excluded` lists them).

Harness behaviours reproduced under ``rules="official"`` (the default; reported scores use it):
* a result is rendered as upstream renders it (`backends.render_result`); an exception becomes
  ``"Error during execution: <message>"``, Python's own message included (a bad keyword reads
  ``GorillaFileSystem.cd() got an unexpected keyword argument 'x'``); a name not offered reads
  ``name 'x' is not defined``; `kill`, `exit`, `quit`, `remove`, `unlink`, `popen`, `Popen`, `run`
  are refused; a non-finite float argument fails as its repr (``nan``) does under `eval`, and
  arguments nested 200 brackets deep as Python's parser does;
* Quirk: upstream prefixes the instance name to every ``tool(`` in the call *text*, string
  arguments included, so an argument such as ``"use sort(x)"`` reaches the tool as
  ``"<model>_<id>_GorillaFileSystem_instance.sort(x)"``; the prefix differs between the model's
  and the ground truth's instances, so such a string never matches. `MODEL_NAME` stands for
  upstream's model name. The same rewrite drops the blanks between any word and a following
  "(" (``"a day (x)"`` arrives as ``"a day(x)"``);
* the check, per turn: all the model's calls, then the ground truth's; a turn with ground truth
  and no model call fails; a turn whose ground truth is empty is not checked; every public
  attribute of each ground-truth instance must `==` the model's; the ground truth's outputs must
  be a sub-multiset of all the model's outputs so far (texts only: "None" from `touch` answers for
  "None" from `echo`);
* a conversation cut short fails; a user turn with more than `MAX_STEPS_PER_TURN` tool-calling
  steps is force-quit: the conversation stops there and fails, except (Quirk) when it is the last
  turn, which upstream still scores.

``rules="training"`` (opt-in, never for reported scores) changes only what would teach the wrong
thing: calls are checked against the offered function docs before they run (a wrong type is an
error, not silently accepted), no instance-name prefixing, no shared default lists in TwitterAPI,
`delete_message` accepts its documented `message_id`, the response check matches (tool, output)
pairs, and a force-quit fails on any turn.

Episodes span several user turns. The agent loop drives them through one extra method,
`MultiTurnEpisode.end_turn()`, called when the model answers without a tool call: it returns the
next user messages, or None when the conversation is over. Ground-truth call strings such as
``mv(source='a', destination='b')`` are read with `ast.parse` and `ast.literal_eval` only.

Categories (upstream's `base_handler` inference loops and `multi_turn_checker`):
* ``miss_param``: data only; a turn that lacks a needed value has an empty ground truth, and the
  next user turn supplies it. The checker treats it as any turn with an empty ground truth: not
  checked, its calls still run (upstream defines `multi_turn_irrelevance_checker`, which would fail
  any call there, but never calls it), so a call there fails only through the state or outputs
  it leaves for later turns.
* ``miss_func``: the record's ``missed_function`` ({turn: names}) holds functions out of the
  offered docs until that turn, whose user message is empty in the data. Upstream's Qwen FC
  handler (an OSS handler: multi-turn always through `inference_multi_turn_prompting`) never
  recompiles the tool list of its system prompt; that turn's user message is
  ``REVEAL_PROMPT.format(functions=<the held-out raw docs, a Python list repr>)``. We do the same:
  `Task.tools` (the prompt's tools) lack the held-out functions for the whole episode, and
  `end_turn()` returns that message at the reveal turn. This is also the only rendering that stays
  append-only: a chat template puts tools in the system prompt before the first turn, so adding
  them there mid-episode (what upstream's API FC path does, with the sentence alone) would rewrite
  the prefix the model already conditioned on. Upstream executes every method of an involved
  class, offered or not, so a held-out function called early runs (officially); the check then
  judges only state and outputs, as for any call.
* ``long_context``: every backend is loaded with ``long_context=True`` (upstream decides by
  ``"long_context" in category`` of the id, at inference and in the checker alike); the
  environment refuses to build when a backend's `load` has no such keyword.

``rules="training"`` adds, for these categories: a held-out function is "unknown" until its reveal
turn, and (upstream's unused `multi_turn_irrelevance_checker`) a call in a miss_func/miss_param
turn whose ground truth is empty fails.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import math
import os
import re
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any, NamedTuple

from envsched_lightning.envs.bfcl.backends import Backend, check_rules, render_result
from envsched_lightning.envs.bfcl.backends.file_system import GorillaFileSystem
from envsched_lightning.envs.bfcl.backends.math_api import MathAPI
from envsched_lightning.envs.bfcl.backends.message_api import MessageAPI
from envsched_lightning.envs.bfcl.backends.posting_api import TwitterAPI
from envsched_lightning.envs.bfcl.backends.ticket_api import TicketAPI
from envsched_lightning.envs.bfcl.backends.trading_bot import TradingBot
from envsched_lightning.envs.bfcl.backends.travel_booking import TravelAPI
from envsched_lightning.envs.bfcl.backends.vehicle_control import VehicleControlAPI
from envsched_lightning.envs.task_text import task_text, user_contents
from envsched_lightning.envs.base import Environment, Episode, Task, ToolCall, ToolResult, Verdict
from envsched_lightning.envs.benchmark_files import field_types, pattern_features, read_jsonl, to_tool_schema
from envsched_lightning.envs.bfcl.single_turn import resolve_bfcl_dir
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
    "TicketAPI": TicketAPI, "TradingBot": TradingBot, "TravelAPI": TravelAPI, "VehicleControlAPI": VehicleControlAPI,
}  # fmt: skip
MAX_STEPS_PER_TURN = 20  # upstream MAXIMUM_STEP_LIMIT: the 21st tool-calling step of a turn force-quits
MODEL_NAME = "model"  # stands for upstream's model name inside instance names (see the module docstring)
ERROR_PREFIX = "Error during execution: "
BLOCKED = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
CALLED_NAME = re.compile(r"\b([a-zA-Z_]\w*)\s*(?=\()")  # what upstream prefixes with the instance name
MAX_NESTING = 200  # brackets inside a call's arguments from which upstream's `eval` cannot parse it
INFERENCE, MODEL_EVAL, TRUTH_EVAL = "", "_eval", "_ground_truth_eval"  # upstream's instance-name roles
CATEGORIES = ("base", "miss_func", "miss_param", "long_context")  # all but base exist in v4 data only
REVEAL_PROMPT = "{functions}\nI have updated some more functions you can choose from. What about now?"
"""Upstream's prompting-path user message of a miss_func reveal turn (`{functions}`: the held-out docs' list repr)."""


def record_category(record: Mapping[str, Any]) -> str:
    """The category as upstream reads it from the id (``multi_turn_miss_func_3`` -> ``multi_turn_miss_func``)."""
    return str(record["id"]).rsplit("_", 1)[0]


def is_long_context(record: Mapping[str, Any]) -> bool:
    """Whether upstream loads this record's instances with ``long_context=True``."""
    category = record_category(record)
    return "long_context" in category or "composite" in category


def lacks_long_context(classes: Sequence[str] = tuple(BACKENDS)) -> list[str]:
    """The backend classes whose `load` takes no ``long_context`` keyword (their long-context mode is missing)."""
    return [c for c in classes if "long_context" not in inspect.signature(BACKENDS[c].load).parameters]


@functools.cache
def _method_order(name: str) -> tuple[str, ...] | None:
    """Parameter names of the backend method `name`, in its own order (None: no backend has it).

    Upstream evaluates a call string against the method, so a positional argument binds by the
    method's order, which is not always the doc's (TravelAPI.purchase_insurance takes booking_id
    first; its doc lists insurance_cost first)."""
    for backend in BACKENDS.values():
        if name in backend.tool_names:
            params = list(inspect.signature(getattr(backend, name)).parameters)
            return tuple(p for p in params if p != "self")
    return None


def parse_call_string(text: str, docs: Mapping[str, Mapping[str, Any]]) -> ToolCall:
    """``f(1, b='x')`` -> ToolCall; positional arguments bind in the backend method's parameter
    order, as upstream's evaluation of the string does (the doc's order for a tool without a
    backend). No eval."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"not a call: {text!r} ({exc.msg})") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {text!r}")
    name = node.func.id
    if name not in docs:
        raise ValueError(f"call to undocumented function {name!r}: {text!r}")
    order = list(_method_order(name) or docs[name].get("parameters", {}).get("properties", {}))
    if len(node.args) > len(order):
        raise ValueError(f"too many positional arguments: {text!r}")
    args = {order[i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    args.update({kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None})
    return ToolCall(name, args)


def _non_literal(value: Any) -> str | None:
    """The first float whose repr is not a literal (``nan``, ``inf``), in evaluation order."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf"
    items = value if isinstance(value, list) else [x for kv in value.items() for x in kv] if isinstance(value, dict) else []
    return next((bad for bad in map(_non_literal, items) if bad), None)


def _too_deep(values: Sequence[Any]) -> bool:
    """Whether any value's repr nests `MAX_NESTING` brackets (a list or dict is one level);
    iterative, so arbitrarily deep input cannot exhaust the stack."""
    stack = [(v, 1) for v in values if isinstance(v, (list, dict))]
    while stack:
        value, depth = stack.pop()
        if depth >= MAX_NESTING:
            return True
        children = value if isinstance(value, list) else [x for kv in value.items() for x in kv]
        stack += [(c, depth + 1) for c in children if isinstance(c, (list, dict))]
    return False


class World:
    """The instances of one record's involved classes, executing calls as upstream's harness does.

    `role` picks upstream's instance names (`INFERENCE` live, `MODEL_EVAL`/`TRUTH_EVAL` in the
    checker); `shared` is handed to every backend (upstream's per-process state); `schemas` are
    every doc the conversation offers, used to pre-check calls under ``rules="training"``, where a
    function of the record's ``missed_function`` stays unknown until `start_turn` reaches its turn.
    """

    def __init__(self, record: Mapping[str, Any], rules: str = "official", role: str = INFERENCE,
                 shared: dict[str, Any] | None = None, schemas: Sequence[Mapping[str, Any]] = ()) -> None:  # fmt: skip
        self.rules, self._schemas = check_rules(rules), list(schemas)
        self._missed: Mapping[str, Sequence[str]] = record.get("missed_function") or {}
        self.start_turn(0)
        shared = {} if shared is None else shared
        options = {"long_context": True} if is_long_context(record) else {}
        if options and (missing := lacks_long_context(record["involved_classes"])):
            raise ValueError(f"record {record['id']!r} needs the backends' long-context mode, which "
                             f"{', '.join(missing)} lack (their `load` takes no long_context keyword)")  # fmt: skip
        self.instances: dict[str, Backend] = {}
        self._owner: dict[str, Backend] = {}
        self._prefix: dict[str, str] = {}
        for cls in record["involved_classes"]:
            instance = BACKENDS[cls](rules, shared)
            instance.load(copy.deepcopy(record["initial_config"].get(cls, {})), **options)
            self.instances[cls] = instance
            name = re.sub(r"[-./:]", "_", f"{MODEL_NAME}{role}_{record['id']}_{cls}_instance")
            for tool in instance.tool_names:  # a later class wins a shared name, as upstream
                self._owner[tool], self._prefix[tool] = instance, name

    def start_turn(self, turn: int) -> None:
        """Enter user turn `turn`: functions held out until a later turn stay unknown (training rules only)."""
        self.hidden = {name for t, names in self._missed.items() if int(t) > turn for name in names}

    @property
    def offered(self) -> list[Mapping[str, Any]]:
        """The docs offered so far: `schemas` less the functions still held out."""
        return [s for s in self._schemas if s.get("function", s).get("name") not in self.hidden]

    def _mangle(self, value: Any) -> Any:
        """`value` after upstream's text rewrite of ``tool(`` inside its repr (strings only change)."""
        if type(value) is str:
            text = repr(value)
            rewritten = CALLED_NAME.sub(lambda m: f"{self._prefix[m[1]]}.{m[1]}" if m[1] in self._prefix else m[1], text)
            if rewritten == text:
                return value
            with warnings.catch_warnings():  # a broken escape ("\t" + "ail(") stays as eval leaves it
                warnings.simplefilter("ignore")
                return ast.literal_eval(rewritten)
        if isinstance(value, list):
            return [self._mangle(v) for v in value]
        if isinstance(value, dict):
            return {self._mangle(k): self._mangle(v) for k, v in value.items()}
        return value

    def execute(self, call: ToolCall) -> ToolResult:
        """Run one call; the result's `content` is the text upstream would produce, never raises."""
        name = call.name
        try:
            if self.rules == "training":
                invalid = validate_call(call, self.offered) if self._schemas else None
                if invalid:
                    return ToolResult(name, f"Error: {invalid}", invalid)
                arguments = dict(call.arguments)
            else:
                if name in BLOCKED:
                    raise PermissionError(f"Function call {name} is not allowed.")
                if _too_deep(list(call.arguments.values())):
                    raise SyntaxError("too many nested parentheses (<string>, line 1)")  # Python's parser limit
                arguments = {k: self._mangle(v) for k, v in call.arguments.items()}
            if name not in self._owner:
                raise NameError(f"name {name!r} is not defined")
            if self.rules == "official" and (bad := _non_literal(list(arguments.values()))):
                raise NameError(f"name {bad!r} is not defined")
            result = self._owner[name].call(name, arguments)
            text = render_result(result)
        except Exception as exc:  # noqa: BLE001 - upstream turns every exception into this text
            text = f"{ERROR_PREFIX}{exc}"
            return ToolResult(name, text, text)
        error = result.get("error") if type(result) is dict else None
        return ToolResult(name, text, None if error is None else str(error))

    def state(self) -> dict[str, dict[str, Any]]:
        return {cls: instance.public_state() for cls, instance in self.instances.items()}


class Replay(NamedTuple):
    """A checker run: the verdict and, per executed turn, each call's output text."""

    verdict: Verdict
    model_outputs: list[list[str]]  # [turn][call] for the model's calls, as upstream's checker renders them
    truth_outputs: list[list[str]]  # [turn][call] for the ground truth's calls


def replay(record: Mapping[str, Any], truth: Sequence[Sequence[ToolCall]], model: Sequence[Sequence[ToolCall]],
           rules: str = "official", schemas: Sequence[Mapping[str, Any]] = ()) -> Replay:  # fmt: skip
    """Replay both call sequences on fresh worlds, checking each turn as `multi_turn_checker` does."""
    model_out: list[list[str]] = []
    truth_out: list[list[str]] = []
    if len(model) != len(truth):
        return Replay(Verdict(0.0, f"force terminated: {len(model)} of {len(truth)} user turns played"), [], [])
    shared: dict[str, Any] = {}  # upstream's per-process state, common to both instances
    model_world = World(record, rules, MODEL_EVAL, shared, schemas)
    truth_world = World(record, rules, TRUTH_EVAL, shared, schemas)

    def key(result: ToolResult) -> Any:
        return result.content if rules == "official" else (result.name, result.content)

    seen: Counter[Any] = Counter()
    no_call_turns = rules == "training" and any(c in record_category(record) for c in ("miss_func", "miss_param"))
    for t, (expected, made) in enumerate(zip(truth, model)):
        model_world.start_turn(t)
        truth_world.start_turn(t)
        made_results = [model_world.execute(c) for c in made]
        wanted = [truth_world.execute(c) for c in expected]
        model_out.append([r.content for r in made_results])
        truth_out.append([r.content for r in wanted])
        seen.update(key(r) for r in made_results)
        if expected and not made:
            return Replay(Verdict(0.0, f"turn {t}: empty turn, ground truth makes {len(expected)} call(s)"), model_out, truth_out)
        if not expected and made and no_call_turns:  # upstream's multi_turn_irrelevance_checker (unused there)
            return Replay(Verdict(0.0, f"turn {t}: {len(made)} call(s) where the ground truth makes none"), model_out, truth_out)
        if not expected:
            continue  # upstream checks nothing after a turn whose ground truth is empty
        for cls, truth_instance in truth_world.instances.items():
            if diff := truth_instance.differences(model_world.instances[cls]):
                return Replay(Verdict(0.0, f"turn {t}: state mismatch in {cls}.{diff[0]}"), model_out, truth_out)
        missing = Counter(key(r) for r in wanted) - seen
        if missing:
            return Replay(Verdict(0.0, f"turn {t}: missing ground-truth result {str(next(iter(missing)))[:120]}"),
                          model_out, truth_out)  # fmt: skip
    return Replay(Verdict(1.0, "ok"), model_out, truth_out)


def check_turns(record: Mapping[str, Any], truth: Sequence[Sequence[ToolCall]], model: Sequence[Sequence[ToolCall]],
                rules: str = "official", schemas: Sequence[Mapping[str, Any]] = ()) -> Verdict:  # fmt: skip
    """The verdict of `replay`: every turn must pass the official checks."""
    return replay(record, truth, model, rules, schemas).verdict


class MultiTurnEpisode(Episode):
    """Executes model calls live (for the model to read) and re-checks the whole log at the end.

    `user_turns`: each user turn's messages as upstream's inference sends them (default: the
    record's questions); `schemas`: every doc the conversation offers (see `World`)."""

    def __init__(self, record: Mapping[str, Any], truth: Sequence[Sequence[ToolCall]],
                 schemas: Sequence[Mapping[str, Any]] = (), rules: str = "official",
                 user_turns: Sequence[Sequence[Mapping[str, str]]] | None = None) -> None:  # fmt: skip
        self._record, self._truth, self._schemas, self._rules = record, truth, list(schemas), check_rules(rules)
        self._user_turns = record["question"] if user_turns is None else user_turns
        self._world = World(record, rules, INFERENCE, None, schemas)
        self.turns: list[list[ToolCall]] = [[]]  # the calls made in each user turn so far
        self._steps = 0  # tool-calling steps in the current user turn
        self._quit_turn: int | None = None  # the user turn that hit the step limit, if any

    def step(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        if not calls:  # upstream: a step without a call ends the user turn, it is not counted
            return []
        if self._quit_turn is not None:  # upstream stops the conversation: nothing runs any more
            why = f"Model has been forced to quit after {MAX_STEPS_PER_TURN} steps."
            return [ToolResult(c.name, why, why) for c in calls]
        self._steps += 1
        self.turns[-1].extend(calls)
        results = [self._world.execute(c) for c in calls]
        if self._steps > MAX_STEPS_PER_TURN:
            self._quit_turn = len(self.turns) - 1
        return results

    def end_turn(self, answer: str = "") -> tuple[Mapping[str, str], ...] | None:
        """Close the current user turn; the next user turn's messages, or None when all are done."""
        if self._quit_turn is not None or len(self.turns) >= len(self._user_turns):
            return None
        self.turns.append([])
        self._steps = 0
        self._world.start_turn(len(self.turns) - 1)
        return tuple(self._user_turns[len(self.turns) - 1])

    @property
    def offered(self) -> list[str]:
        """Names of the functions offered so far: the prompt's tools plus those a user turn revealed."""
        return [s.get("function", s)["name"] for s in self._world.offered]

    def verify(self, final_answer: str) -> Verdict:
        last = len(self._record["question"]) - 1
        if self._quit_turn is not None and (self._rules == "training" or self._quit_turn < last):
            return Verdict(0.0, f"turn {self._quit_turn}: force-quit after {MAX_STEPS_PER_TURN} steps")
        return check_turns(self._record, self._truth, self.turns, self._rules, self._schemas)


@register_env("bfcl_multi_turn_base")
class MultiTurnEnvironment(Environment):
    """One BFCL multi-turn category (`category`: base, miss_func, miss_param, long_context), restricted
    to records whose classes all have a backend. base reads v3 or v4 data (`version`, as
    `BfclEnvironment`); the others exist in v4 only."""

    name = "bfcl_multi_turn_base"

    def __init__(self, data_dir: str | os.PathLike[str] | None = None, rules: str = "official", version: str = "auto",
                 category: str = "base") -> None:  # fmt: skip
        if category not in CATEGORIES:
            raise ValueError(f"unknown BFCL multi-turn category {category!r}; valid: {', '.join(CATEGORIES)}")
        self.category, self.name = category, f"bfcl_multi_turn_{category}"
        if category != "base" and version == "v3":
            raise ValueError(f"environment {self.name!r}: multi_turn_{category} exists in BFCL v4 data only, but "
                             f"`version` 'v3' was asked for: leave `version` auto or v4 (`python -m "
                             f"envsched_lightning.data fetch bfcl` writes v4 data)")  # fmt: skip
        self.data_dir, self.version = resolve_bfcl_dir(self.name, data_dir, version)
        if category != "base" and self.version != "v4":
            raise ValueError(f"environment {self.name!r}: multi_turn_{category} exists in BFCL v4 data only, but the "
                             f"`data_dir` {str(data_dir)!r} resolved to {self.version} data ({self.data_dir}) with "
                             f"`version` {version!r}: point `data_dir` at a folder holding bfcl_v4/ (`python -m "
                             f"envsched_lightning.data fetch bfcl`) and leave `version` auto or v4")  # fmt: skip
        if category == "long_context" and (missing := lacks_long_context()):
            raise ValueError(f"environment {self.name!r}: the backends' long-context mode is missing ({', '.join(missing)}"
                             f" `load` take no long_context keyword); upstream loads every class with "
                             f"long_context=True for this category, so its outputs and verdicts would be wrong")  # fmt: skip
        self.rules = check_rules(rules)  # "official" for reported scores; "training" see the module docstring

    @cached_property
    def docs(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Class -> tool name -> FunctionDoc, for every class (so exclusions are by data, not by file)."""
        return {
            cls: {d["name"]: d for d in read_jsonl(self.data_dir / "multi_turn_func_doc" / f"{stem}.json", key="name")}
            for cls, stem in FUNC_DOC_FILES.items()
        }

    @cached_property
    def _loaded(self) -> tuple[list[tuple[dict[str, Any], list[list[ToolCall]]]], list[str]]:
        stem = f"BFCL_{self.version}_multi_turn_{self.category}.json"
        questions = read_jsonl(self.data_dir / stem,
                               check=field_types(question=list, involved_classes=list, initial_config=dict))  # fmt: skip
        answer_path = self.data_dir / "possible_answer" / stem
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

    def _docs_of(self, record: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every function doc of the record's classes, in upstream's order (class by class, file order)."""
        return [d for cls in record["involved_classes"] for d in self.docs[cls].values()]

    def _user_turns(self, record: Mapping[str, Any]) -> list[tuple[Mapping[str, str], ...]]:
        """Each user turn's messages as upstream's inference sends them: a miss_func reveal turn (empty
        in the data) becomes `REVEAL_PROMPT` with the held-out raw docs, in `missed_function` order."""
        by_name = {d["name"]: d for d in self._docs_of(record)}
        turns = []
        for t, messages in enumerate(record["question"]):
            revealed = (record.get("missed_function") or {}).get(str(t))
            if revealed is None:
                turns.append(tuple(messages))
                continue
            if messages:  # upstream asserts this too
                raise ValueError(f"record {record['id']}: turn {t} reveals functions but has a user message")
            text = REVEAL_PROMPT.format(functions=[by_name[n] for n in revealed if n in by_name])
            turns.append(({"role": "user", "content": text},))
        return turns

    def _task(self, record: dict[str, Any], truth: list[list[ToolCall]]) -> Task:
        classes = record["involved_classes"]
        held_out = {n for names in (record.get("missed_function") or {}).values() for n in names}
        docs = [d for d in self._docs_of(record) if d["name"] not in held_out]  # the prompt's tools, all episode long
        user_turns = self._user_turns(record)
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
            text=task_text(user_contents(record["question"])),  # the classes' docs are shared: left out
        )  # fmt: skip
        return Task(
            spec=spec, messages=user_turns[0], ground_truth={"record": record, "calls": truth, "user_turns": user_turns},
            max_turns=(MAX_STEPS_PER_TURN + 1) * len(record["question"]), tools=tuple(to_tool_schema(d) for d in docs),
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

    def schemas(self, task: Task) -> list[dict[str, Any]]:
        """Every doc the conversation offers: the prompt's tools plus the functions a later turn reveals."""
        return [to_tool_schema(d) for d in self._docs_of(task.ground_truth["record"])]

    def reset(self, task: Task) -> Episode:
        gt = task.ground_truth
        return MultiTurnEpisode(gt["record"], gt["calls"], self.schemas(task), self.rules, gt["user_turns"])


def _register(category: str) -> None:
    register_env(f"bfcl_multi_turn_{category}")(lambda **options: MultiTurnEnvironment(category=category, **options))


for _category in CATEGORIES[1:]:  # base is the class itself
    _register(_category)
