"""ACEBench (English) normal and special categories, with the official checker's rules.

Rules follow `model_eval/checker.py` as summarised in `../shared/data/README.md`, section 2; the
string standardisation is BFCL's (`bfcl.standardize_string`), which ACEBench inherited. The model
speaks Qwen3 `<tool_call>` JSON, so the official "extract the outer `[...]` and parse it with `ast`"
step is the agent loop's `parse_tool_calls`. Two deliberate differences (see `docs/benchmarks.md`):
a special-category episode that makes any tool call scores 0 (upstream only reads the text), and
multi-turn conversations are scored per step (process accuracy), one task per record.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from envsched_lightning.envs.base import Environment, Episode, Task, ToolCall, ToolResult, Verdict
from envsched_lightning.envs.bfcl import field_types, pattern_features, read_jsonl, resolve_data_dir, standardize_string, to_tool_schema
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
# JSON-schema type -> accepted Python types ("number" takes int, and float by the variable rule below).
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "float": (float, int), "boolean": (bool,),
    "array": (list,), "object": (dict,), "dict": (dict,),
}  # fmt: skip
_SUFFIX = re.compile(r"_\d+$")


def function_docs(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The record's docs with `parameters` filled (some ACEBench distractors spell it `arguments`)."""
    empty = {"type": "object", "properties": {}}
    return [{**d, "parameters": d.get("parameters") or d.get("arguments") or empty} for d in record["function"]]


def expected_calls(truth: Mapping[str, Any], offered: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """Ground-truth (name, params); a repeated function's `_1`/`_2` key suffix is stripped."""
    calls = []
    for key, params in truth.items():
        name = key if key in offered else _SUFFIX.sub("", key)
        calls.append((name, dict(params)))
    return calls


def _leaf_ok(value: Any, expected: Any) -> bool:
    return standardize_string(str(expected)) in standardize_string(str(value))


def _dict_ok(value: Any, expected: Mapping[str, Any]) -> bool:
    """Same key count, recursive; leaves compared as substrings of `str()`."""
    if not isinstance(value, dict) or len(value) != len(expected):
        return False
    for key, want in expected.items():
        if key not in value:
            return False
        got = value[key]
        if not (_dict_ok(got, want) if isinstance(want, dict) else _leaf_ok(got, want)):
            return False
    return True


def check_call(doc: Mapping[str, Any], call: ToolCall, expected: Mapping[str, Any]) -> str | None:
    """One call against one ground-truth call; the first error, or None."""
    props = doc["parameters"].get("properties", {})
    args = dict(call.arguments)
    missing = [p for p in doc["parameters"].get("required", []) if p not in args]
    if missing:
        return f"missing_required: {missing}"
    for param, value in args.items():
        if param not in props or param not in expected:
            return f"unexpected_param: {param!r}"
        kind, want = props[param].get("type", "string"), expected[param]
        if kind == "boolean" and value in ("true", "false"):
            value = value == "true"
        accepted = _TYPES.get(kind, (object,))
        if type(value) not in accepted and type(value) is not type(want):  # the variable rule
            return f"type_error: {param!r} expected {kind}, got {type(value).__name__}"
        if isinstance(value, str) and isinstance(want, str):
            ok = standardize_string(want) in standardize_string(value)
        elif isinstance(want, list):
            ok = isinstance(value, list) and [_std(v) for v in value] == [_std(w) for w in want]
        elif isinstance(want, dict):
            ok = _dict_ok(value, want)
        else:
            ok = True  # upstream quirk: top-level numbers and booleans are only type-checked
        if not ok:
            return f"value_error: {param!r}={value!r}, expected {want!r}"
    return None


def _std(value: Any) -> Any:
    return standardize_string(value) if isinstance(value, str) else value


def check_normal(record: Mapping[str, Any], truth: Any, calls: Sequence[ToolCall]) -> tuple[float, str]:
    """Call count, name multiset, then a greedy same-name match per expected call."""
    if isinstance(truth, list):  # rare: alternatives
        verdicts = [check_normal(record, alt, calls) for alt in truth]
        return max(verdicts, key=lambda v: v[0])
    docs = {d["name"]: d for d in function_docs(record)}
    expected = expected_calls(truth, set(docs))
    if len(calls) != len(expected):
        return 0.0, f"wrong_count: expected {len(expected)} call(s), got {len(calls)}"
    if Counter(c.name for c in calls) != Counter(n for n, _ in expected):
        return 0.0, f"wrong_functions: expected {sorted(n for n, _ in expected)}, got {sorted(c.name for c in calls)}"
    free = list(range(len(calls)))
    for name, params in expected:
        errors = [(j, check_call(docs[name], calls[j], params)) for j in free if calls[j].name == name]
        hit = next((j for j, e in errors if e is None), None)
        if hit is None:
            return 0.0, f"{name}: {errors[0][1]}"
        free.remove(hit)
    return 1.0, "ok"


def check_special(category: str, truth: Any, text: str, calls: Sequence[ToolCall]) -> tuple[float, str]:
    """Text rules on the final answer; a tool call instead of the refusal/clarification fails."""
    if calls:
        return 0.0, f"{category}: made {len(calls)} call(s) instead of answering"
    if category == "special_irrelevant":
        needed = ["the limitations of the function"]
    elif category == "special_incomplete":
        needed = ["Missing necessary parameters"] + [s for name, params in truth.items() for s in (name, *params)]
    else:
        needed = ["There is incorrect value"] + [str(v) for values in truth.values() for v in values]
    absent = [s for s in needed if s not in text]
    return (0.0, f"{category}: answer lacks {absent}") if absent else (1.0, "ok")


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
    def __init__(self, category: str, record: Mapping[str, Any], truth: Any) -> None:
        self._category, self._record, self._truth = category, record, truth
        self.calls: list[ToolCall] = []

    def step(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        self.calls.extend(calls)
        return [ToolResult(c.name, "recorded: ACEBench normal calls are judged, not executed") for c in calls]

    def verify(self, final_answer: str) -> Verdict:
        if self._category in SPECIAL:
            return Verdict(*check_special(self._category, self._truth, final_answer, self.calls))
        return Verdict(*check_normal(self._record, self._truth, self.calls))


class AceBenchEnvironment(Environment):
    """One ACEBench-en normal/special category."""

    def __init__(self, category: str = "normal_single_turn_single_function", data_dir: str | os.PathLike[str] | None = None) -> None:
        if category not in CATEGORIES:
            raise ValueError(f"unknown ACEBench category {category!r}; valid: {', '.join(CATEGORIES)}")
        self.category, self.name = category, f"acebench_{category}"
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
            features=features, reward_type="binary",
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
        return AceEpisode(self.category, task.ground_truth["record"], task.ground_truth["truth"])


def _register(category: str) -> None:
    register_env(f"acebench_{category}")(lambda **options: AceBenchEnvironment(category, **options))


for _category in CATEGORIES:
    _register(_category)
