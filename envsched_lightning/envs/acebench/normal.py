"""ACEBench (English) normal and special categories, scored by the official checker by default.

`rules="official"` (the default, and what every `conf/env/acebench_*.yaml` sets) reproduces upstream's
verdict, quirks included (`official.py`; tags D/N/S in `docs/benchmarks.md`). The model
speaks Qwen3 `<tool_call>` JSON; upstream scores one text `[ApiName(key=value, ...)]`, so the calls
are rendered into that text (Python literals) and decoded as upstream decodes it. With no tool call,
the model's answer text itself is decoded, so a model prompted in ACEBench's own format is scored
as upstream would. `rules="training"` departs where the official rule would teach the wrong thing
(T1-T9, tagged below); it is for reward shaping only, never for reported scores. Multi-turn conversations
are scored per step (upstream's process accuracy), one task per record.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from envsched_lightning.envs.acebench import official
from envsched_lightning.envs.task_text import task_text
from envsched_lightning.envs.base import Environment, Episode, Task, ToolCall, ToolResult, Verdict
from envsched_lightning.envs.benchmark_files import field_types, pattern_features, read_jsonl, resolve_data_dir, to_tool_schema
from envsched_lightning.envs.registry import register_env
from envsched_lightning.scheduling import TaskSpec

NORMAL = (
    "normal_single_turn_single_function", "normal_single_turn_parallel_function", "normal_similar_api",
    "normal_preference", "normal_atom_bool", "normal_atom_enum", "normal_atom_list", "normal_atom_number",
    "normal_atom_object_deep", "normal_atom_object_short", "normal_multi_turn_user_adjust",
    "normal_multi_turn_user_switch",
)  # fmt: skip
SPECIAL = ("special_incomplete", "special_error_param", "special_irrelevant")
CATEGORIES = NORMAL + SPECIAL
RULES = ("official", "training")
_SUFFIX = re.compile(r"_\d+$")
_THINK_END = "</think>"


def check_rules(rules: str) -> str:
    """`rules` if valid; the error names the option and its values (the same option as BFCL and tau-bench)."""
    if rules not in RULES:
        raise ValueError(f"rules must be one of {', '.join(map(repr, RULES))}; got {rules!r}")
    return rules


def function_docs(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The record's docs with `parameters` filled (some ACEBench distractors spell it `arguments`)."""
    empty = {"type": "object", "properties": {}}
    return [{**d, "parameters": d.get("parameters") or d.get("arguments") or empty} for d in record["function"]]


def expected_calls(truth: Mapping[str, Any], offered: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """Ground-truth (name, params); a repeated function's `_1`/`_2` key suffix is stripped (T7: unless offered)."""
    return [(key if key in offered else _SUFFIX.sub("", key), dict(params)) for key, params in truth.items()]


def answer_text(final_answer: str) -> str:
    """The answer after a reasoning block (upstream's inference keeps what follows `</think>`)."""
    _, sep, tail = final_answer.partition(_THINK_END)
    return tail.strip() if sep else final_answer


# --- training rules -----------------------------------------------------------------------------

_KINDS: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int, float), "number": (int, float), "float": (int, float), "boolean": (bool,),
    "array": (list,), "tuple": (list,), "object": (dict,), "dict": (dict,),
}  # fmt: skip  (a float passes an integer param when equal, as officially: N6)


def _same(value: Any, want: Any, substring: bool) -> bool:
    """T5/T6: one value rule at every depth. Strings: standardized ground truth a substring (in a dict,
    or a top-level value) or equal (in a list); numbers, booleans and None by value; lists item by
    item; dicts with the same keys."""
    if isinstance(want, bool):
        if isinstance(value, str) and value in ("true", "false"):  # upstream's leniency, kept
            value = value == "true"
        return value is want
    if want is None or isinstance(want, (int, float)):
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return value is None if want is None else number and value == want
    if isinstance(want, str):
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return False
        got, expected = official.standardize(str(value)), official.standardize(want)
        return expected in got if substring else expected == got
    if isinstance(want, list):
        same_length = isinstance(value, list) and len(value) == len(want)
        return same_length and all(_same(v, w, False) for v, w in zip(value, want))
    if isinstance(want, dict):
        same_keys = isinstance(value, dict) and value.keys() == want.keys()
        return same_keys and all(_same(value[k], w, True) for k, w in want.items())
    return value == want


def _kind_ok(value: Any, kind: str) -> bool:
    accepted = _KINDS.get(kind)
    if accepted is None:  # a type name we do not know: not held against the model
        return True
    return (bool in accepted) if isinstance(value, bool) else isinstance(value, accepted)


def check_call(doc: Mapping[str, Any], call: ToolCall, expected: Mapping[str, Any]) -> str | None:
    """Training rules for one call against one ground-truth call; the first error, or None."""
    props = doc["parameters"].get("properties", {})
    args = dict(call.arguments)
    if not args and expected:  # official, except that an empty ground truth is passable (T3)
        return "wrong_param: call without arguments"
    missing = [p for p in doc["parameters"].get("required", []) if p not in args]
    if missing:
        return f"missing_required: {missing}"
    for param, value in args.items():
        if param not in props or param not in expected:
            return f"unexpected_param: {param!r}"
        kind, want = props[param].get("type", "string"), expected[param]
        if kind == "boolean" and value in ("true", "false"):  # T4: only for boolean params
            value = value == "true"
        if not _kind_ok(value, kind) and type(value) is not type(want):  # the doc's type, or the ground truth's
            return f"type_error: {param!r} expected {kind}, got {type(value).__name__}"
        if not _same(value, want, substring=True):
            return f"value_error: {param!r}={value!r:.80}, expected {want!r:.80}"
    return None


def training_reason(record: Mapping[str, Any], truth: Any, calls: Sequence[ToolCall]) -> str | None:
    """Call count, name multiset, then per expected call a same-name model call, each used once (T2)."""
    if isinstance(truth, list):  # rare: alternatives
        reasons = [training_reason(record, alt, calls) for alt in truth]
        return None if None in reasons else reasons[0] if reasons else "no ground truth"
    docs = {d["name"]: d for d in function_docs(record)}
    expected = expected_calls(truth, set(docs))
    if len(calls) != len(expected):
        return f"wrong_count: expected {len(expected)} call(s), got {len(calls)}"
    if Counter(c.name for c in calls) != Counter(n for n, _ in expected):
        return f"wrong_functions: expected {sorted(n for n, _ in expected)}, got {sorted(c.name for c in calls)}"
    free = list(range(len(calls)))
    for name, params in expected:
        if name not in docs:  # T9: an ordinary verdict where upstream would raise
            return f"{name}: the ground truth names a function the record does not offer"
        errors = [(j, check_call(docs[name], calls[j], params)) for j in free if calls[j].name == name]
        hit = next((j for j, e in errors if e is None), None)
        if hit is None:
            return f"{name}: {errors[0][1]}"
        free.remove(hit)
    return None


# --- verdicts -------------------------------------------------------------------------------------


def official_text(calls: Sequence[ToolCall], check: bool = True) -> str:
    """The calls as the one text upstream would score (DecodeError, with `check`, if text cannot hold them)."""
    return official.render([(c.name, c.arguments) for c in calls], check)


def judge(category: str, record: Mapping[str, Any], truth: Any, calls: Sequence[ToolCall], final_answer: str,
          rules: str = "official") -> Verdict:  # fmt: skip
    """The verdict for one finished episode: its tool calls and its final answer text."""
    text = answer_text(final_answer)
    if category in SPECIAL:
        if rules == "training" and calls:  # T8
            return Verdict(0.0, f"[rules=training] {category}: made {len(calls)} call(s) instead of answering")
        # upstream reads only the text; calls written as text would be part of it
        reason = official.special_reason(category, truth, f"{text}\n{official_text(calls, False)}" if calls else text)
    elif rules == "training":  # T1: only real tool calls count, as structured JSON
        reason = training_reason(record, truth, calls)
    else:
        try:
            decoded = official.decode(official_text(calls) if calls else text, "multi_turn" in category)
        except official.DecodeError as exc:
            return Verdict(0.0, f"wrong_output_format: {exc}")
        reason = official.normal_reason(record["function"], truth, decoded)
    tag = "[rules=training] " if rules == "training" else ""
    return Verdict(0.0, f"{tag}{category}: {reason}") if reason else Verdict(1.0, f"{tag}ok")


def ground_truth_answer(category: str, record: Mapping[str, Any], truth: Any) -> tuple[list[ToolCall], str]:
    """What a perfect model does: the expected calls, or the expected text for special categories."""
    if category == "special_irrelevant":
        return [], str(truth)
    if category == "special_incomplete":
        (name, params), = truth.items()
        return [], f"Missing necessary parameters ({', '.join(params)}) for the api ({name})"
    if category == "special_error_param":
        pairs = [(k, v) for k, values in truth.items() for v in values]
        return [], f"There is incorrect value ({', '.join(str(v) for _, v in pairs)}) for the parameters ({', '.join(k for k, _ in pairs)})."
    first = truth[0] if isinstance(truth, list) else truth
    offered = {d["name"] for d in record["function"]}
    return [ToolCall(name, params) for name, params in expected_calls(first, offered)], ""


class AceEpisode(Episode):
    def __init__(self, category: str, record: Mapping[str, Any], truth: Any, rules: str = "official") -> None:
        self._category, self._record, self._truth, self._rules = category, record, truth, check_rules(rules)
        self.calls: list[ToolCall] = []

    def step(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        self.calls.extend(calls)
        return [ToolResult(c.name, "recorded: ACEBench normal calls are judged, not executed") for c in calls]

    def verify(self, final_answer: str) -> Verdict:
        return judge(self._category, self._record, self._truth, self.calls, final_answer, self._rules)


class AceBenchEnvironment(Environment):
    """One ACEBench-en normal/special category; `rules`: "official" (reported scores) or "training"."""

    def __init__(
        self, category: str = "normal_single_turn_single_function", data_dir: str | os.PathLike[str] | None = None,
        rules: str = "official",
    ) -> None:  # fmt: skip
        if category not in CATEGORIES:
            raise ValueError(f"unknown ACEBench category {category!r}; valid: {', '.join(CATEGORIES)}")
        self.category, self.name, self.rules = category, f"acebench_{category}", check_rules(rules)
        self.data_dir = resolve_data_dir(self.name, data_dir, os.path.join("acebench", "data_en"))

    @cached_property
    def records(self) -> list[tuple[dict[str, Any], Any]]:
        """(question, ground_truth) pairs matched by id."""
        path = self.data_dir / "possible_answer" / f"data_{self.category}.json"
        answers = {a["id"]: a["ground_truth"] for a in read_jsonl(path, check=field_types(ground_truth=(list, dict, str)))}
        questions = read_jsonl(self.data_dir / f"data_{self.category}.json", check=field_types(question=str, function=list))
        missing = [q["id"] for q in questions if q["id"] not in answers]
        if missing:
            raise ValueError(f"{path}: no answer for {missing[:3]}")
        return [(q, answers[q["id"]]) for q in questions]

    def _task(self, record: dict[str, Any], truth: Any) -> Task:
        docs = function_docs(record)
        first = truth[0] if isinstance(truth, list) else truth
        n_calls = len(first) if self.category in NORMAL else 0
        context = f"Current time: {record['time']}" if "time" in record else f"User profile: {record.get('profile', '')}"
        features = {
            "n_functions_offered": len(docs),
            "n_expected_calls": n_calls,
            "n_params": sum(len(p) for p in first.values()) if self.category in NORMAL else 0,
            "is_parallel": n_calls > 1,
            "is_no_call": self.category in SPECIAL,
            "is_multi_turn_history": record["question"].count("\nuser:") > 0,
        }
        pattern = {"special_incomplete": "missing_arg", "special_error_param": "refuse", "special_irrelevant": "refuse"}.get(
            self.category, "parallel" if n_calls > 1 else "single")
        features |= pattern_features(pattern, n_calls)
        spec = TaskSpec(
            env=self.name, task_id=record["id"], tools=tuple(d["name"] for d in docs), state_keys=(),
            verifier="acebench_special_text" if self.category in SPECIAL else "acebench_ast",
            features=features, reward_type="binary", text=task_text([record["question"]], docs),
        )  # fmt: skip
        return Task(
            spec=spec,
            messages=({"role": "system", "content": context}, {"role": "user", "content": record["question"]}),
            ground_truth={"record": record, "truth": truth}, max_turns=1, tools=tuple(to_tool_schema(d) for d in docs),
        )  # fmt: skip

    @cached_property
    def _tasks(self) -> list[Task]:
        return [self._task(q, t) for q, t in self.records]

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return list({s["function"]["name"]: dict(s) for t in self._tasks for s in t.tools}.values())

    def reset(self, task: Task) -> Episode:
        return AceEpisode(self.category, task.ground_truth["record"], task.ground_truth["truth"], self.rules)


def _register(category: str) -> None:
    register_env(f"acebench_{category}")(lambda **options: AceBenchEnvironment(category, **options))


for _category in CATEGORIES:
    _register(_category)
