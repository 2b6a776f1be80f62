"""BFCL-v3 single-turn categories as environments, with the official AST checker re-implemented.

The checker follows `bfcl_eval/eval_checker/ast_eval/ast_checker.py` rule by rule (see
`../shared/data/README.md`, section 1) because a reward that disagrees with the leaderboard would
train towards the wrong target. Deliberate differences are listed in `docs/benchmarks.md`: the model
speaks Qwen3 `<tool_call>` JSON instead of Python call text, so the "decode" step is
`parsing.parse_tool_calls` and tuples never occur; Java/JavaScript categories are not supported
(their values are Java/JS source strings needing a type converter we have not written).

`check_bfcl` is the public entry point that external checks call; episodes reuse `check_calls`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from envsched_lightning.envs.base import Environment, Episode, Task, ToolCall, ToolResult, Verdict
from envsched_lightning.envs.patterns import PATTERNS
from envsched_lightning.envs.registry import register_env
from envsched_lightning.scheduling import TaskSpec

# The question files we load; every one but the last three has a possible_answer file.
CATEGORIES: tuple[str, ...] = (
    "simple", "multiple", "parallel", "parallel_multiple",
    "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
    "irrelevance", "live_irrelevance", "live_relevance",
)  # fmt: skip
NO_ANSWER_CATEGORIES = frozenset({"irrelevance", "live_irrelevance", "live_relevance"})

# BFCL doc type -> the Python type the official checker demands (`PYTHON_TYPE_MAPPING`).
PYTHON_TYPES: dict[str, type] = {
    "string": str, "integer": int, "float": float, "boolean": bool,
    "array": list, "tuple": list, "dict": dict, "any": str,
}  # fmt: skip
# BFCL doc type -> JSON-schema type, as BFCL's own FC handlers convert docs for `tools=`.
JSON_SCHEMA_TYPES: dict[str, str] = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}
_STANDARDIZE = re.compile(r"[ ,./\-_*^]")


# ---------------------------------------------------------------- data files
def resolve_data_dir(env_name: str, data_dir: str | os.PathLike[str] | None, sub: str) -> Path:
    """The benchmark folder: `data_dir/sub` if present, else `data_dir` itself.

    Accepting both lets one `ENVSCHED_DATA` root serve every family; a missing value fails here,
    at construction, naming the option, instead of deep inside a rollout.
    """
    if data_dir in (None, "", "None", "null"):
        raise ValueError(f"environment {env_name!r}: option `data_dir` is not set (set ENVSCHED_DATA=/path/to/data or env.{env_name}.data_dir=...)")
    root = Path(data_dir).expanduser()
    path = root / sub if (root / sub).is_dir() else root
    if not path.is_dir():
        raise FileNotFoundError(f"environment {env_name!r}: `data_dir` {str(root)!r} holds no {sub!r} folder")
    return path


def read_jsonl(
    path: str | os.PathLike[str], key: str = "id", check: Callable[[dict[str, Any]], str | None] | None = None
) -> list[dict[str, Any]]:
    """One object per line (BFCL and ACEBench `.json` files are JSON Lines); errors name file and line.

    Every record needs a unique `key`; `check(record)` may return a reason the record is unusable,
    reported with its line (`field_types` builds one from expected field types)."""
    records = []
    first_line: dict[str, int] = {}
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise ValueError(f"{path}:{lineno}: malformed JSON ({getattr(exc, 'msg', type(exc).__name__)})") from None
            if not isinstance(record, dict) or key not in record:
                raise ValueError(f"{path}:{lineno}: expected an object with a {key!r} field")
            rid = json.dumps(record[key], sort_keys=True)
            if rid in first_line:
                raise ValueError(f"{path}:{lineno}: duplicate {key} {record[key]!r} (first on line {first_line[rid]})")
            first_line[rid] = lineno
            problem = check(record) if check is not None else None
            if problem:
                raise ValueError(f"{path}:{lineno}: {problem}")
            records.append(record)
    return records


def field_types(**expected: type | tuple[type, ...]) -> Callable[[dict[str, Any]], str | None]:
    """A `read_jsonl` check: each named field present with one of the given JSON types."""

    def check(record: dict[str, Any]) -> str | None:
        for name, types in expected.items():
            if name not in record:
                return f"record {record.get('id', '?')!r} has no {name!r} field"
            if not isinstance(record[name], types):
                want = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
                return f"record {record.get('id', '?')!r}: {name!r} must be {want}, got {type(record[name]).__name__}"
        return None

    return check


def to_tool_schema(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL/ACEBench FunctionDoc as a Qwen3 `tools=` entry (types converted, names kept)."""

    def convert(node: Any) -> Any:
        if isinstance(node, list):
            return [convert(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if key == "type" and isinstance(value, str):
                out[key] = JSON_SCHEMA_TYPES.get(value, value)
            elif key == "properties" and isinstance(value, dict):  # keys are parameter names, not keywords
                out[key] = {name: convert(sub) for name, sub in value.items()}
            elif key in ("items", "additionalProperties"):
                out[key] = convert(value)
            else:
                out[key] = value
        return out

    params = convert(dict(doc.get("parameters") or {"type": "object", "properties": {}}))
    return {"type": "function", "function": {"name": doc["name"], "description": doc.get("description", ""), "parameters": params}}


def pattern_features(pattern: str, n_calls: float) -> dict[str, float]:
    """The shared ``pattern_*`` one-hot and ``n_calls`` that link benchmark tasks to the built-in worlds."""
    if pattern not in PATTERNS:
        raise ValueError(f"unknown execution pattern {pattern!r}; valid: {PATTERNS}")
    return {"n_calls": float(n_calls), **{f"pattern_{p}": float(p == pattern) for p in PATTERNS}}


# ---------------------------------------------------------------- the AST checker
def standardize_string(text: str) -> str:
    """Official normalisation: drop spaces and `, . / - _ * ^`, lowercase, `'` -> `"`."""
    return _STANDARDIZE.sub("", text).lower().replace("'", '"')


def _std(value: Any) -> Any:
    return standardize_string(value) if isinstance(value, str) else value


def _answer_type(allowed: Sequence[Any]) -> type | None:
    """Type of the first non-optional allowed value; a differing doc type marks a "variable" value."""
    return next((type(a) for a in allowed if a != ""), None)


def _type_error(param: str, value: Any, allowed: Sequence[Any], doc_type: str, nested: type | None) -> tuple[str | None, bool]:
    """(error or None, is_variable), mirroring the official `type_checker` one level deep."""
    expected = PYTHON_TYPES.get(doc_type, str)
    answer_type = _answer_type(allowed)
    if type(value) is expected:  # `is`, not isinstance: a bool is not an int here
        if nested is None:
            return None, answer_type is not None and answer_type is not expected
        for option in allowed:
            items = option if isinstance(option, list) else []
            if all(_type_error(param, item, items, nested.__name__, None)[0] is None for item in value):
                return None, answer_type is not None and answer_type is not expected
        return f"type_error:nested: {param!r} items must be {nested.__name__}, got {value!r}", False
    if answer_type is not None and type(value) is answer_type:
        return None, True
    return f"type_error: {param!r} expected {doc_type}, got {type(value).__name__} {value!r}", False


def _dict_error(param: str, value: dict, allowed: Sequence[Any]) -> str | None:
    for option in allowed:
        if option == "" or not isinstance(option, dict):
            continue
        bad = [k for k, v in value.items() if k not in option or _std(v) not in [_std(a) for a in option[k]]]
        missing = [k for k, v in option.items() if k not in value and "" not in v]
        if not bad and not missing:
            return None
    return f"value_error:dict: {param!r}={value!r} matches no allowed dict"


def _list_dict_error(param: str, value: list, allowed: Sequence[Any]) -> str | None:
    for option in allowed:
        if isinstance(option, list) and len(option) == len(value):
            if all(isinstance(v, dict) and _dict_error(param, v, [o]) is None for v, o in zip(value, option)):
                return None
    return f"value_error:list_dict: {param!r}={value!r} matches no allowed list"


def _value_error(param: str, value: Any, allowed: Sequence[Any], expected: type, nested: type | None) -> str | None:
    if expected is dict:
        return _dict_error(param, value, allowed)
    if expected is list and nested is dict:
        return _list_dict_error(param, value, allowed)
    if expected is str:
        ok = standardize_string(value) in [standardize_string(a) for a in allowed if isinstance(a, str)]
    elif expected is list:
        ok = [_std(v) for v in value] in [[_std(a) for a in option] for option in allowed if isinstance(option, list)]
    else:
        ok = value in allowed
    return None if ok else f"value_error: {param!r}={value!r} not in {list(allowed)!r}"


def check_call(doc: Mapping[str, Any], call: ToolCall, expected: Mapping[str, Sequence[Any]]) -> str | None:
    """The official `simple_function_checker` for one call; returns the first error or None."""
    name = doc["name"]
    if call.name not in (name, name.replace(".", "_")):  # "." -> "_" for models that cannot emit dots
        return f"wrong_func_name: expected {name!r}, got {call.name!r}"
    properties = doc.get("parameters", {}).get("properties", {})
    args = dict(call.arguments)
    missing = [p for p in doc.get("parameters", {}).get("required", []) if p not in args]
    if missing:
        return f"missing_required: {missing}"
    for param, value in args.items():
        if param not in properties or param not in expected:
            return f"unexpected_param: {param!r}"
        doc_type = properties[param].get("type", "any")
        nested = None
        if doc_type in ("array", "tuple"):
            nested = PYTHON_TYPES.get(properties[param].get("items", {}).get("type", "any"), str)
        if doc_type == "float" and type(value) is int:
            value = float(value)
        allowed = expected[param]
        error, is_variable = _type_error(param, value, allowed, doc_type, nested)
        if error:
            return error
        if is_variable:  # a value standing for a variable is compared verbatim
            error = None if value in allowed else f"value_error: {param!r}={value!r} not in {list(allowed)!r}"
        else:
            error = _value_error(param, value, allowed, PYTHON_TYPES.get(doc_type, str), nested)
        if error:
            return error
    omitted = [p for p, allowed in expected.items() if p not in args and "" not in allowed]
    return f"missing_optional: {omitted}" if omitted else None


def check_calls(
    record_id: str,
    docs: Sequence[Mapping[str, Any]],
    calls: Sequence[ToolCall],
    ground_truth: Sequence[Mapping[str, Mapping[str, Sequence[Any]]]] | None,
    decode_failed: bool = False,
) -> tuple[float, str]:
    """Score decoded calls by the official dispatch on the record id (the one checking mechanism)."""
    if "irrelevance" in record_id:  # no call wanted; the official decoder failing also counts as none
        return (1.0, "ok: no call") if decode_failed or not calls else (0.0, f"irrelevance: made {len(calls)} call(s)")
    if "relevance" in record_id:
        return (1.0, "ok: made a call") if calls and not decode_failed else (0.0, "relevance: no decodable call")
    if decode_failed:
        return 0.0, "decode_error: a <tool_call> block could not be decoded"
    if ground_truth is None:
        raise ValueError(f"{record_id}: category needs a possible_answer record")
    if len(calls) != len(ground_truth) or ("parallel" not in record_id and len(calls) != 1):
        return 0.0, f"wrong_count: expected {len(ground_truth)} call(s), got {len(calls)}"
    by_name = {d["name"]: d for d in docs}
    unmatched = list(range(len(calls)))
    for i, expected in enumerate(ground_truth):  # greedy, order-free (a single call for simple/multiple)
        (name, params), = expected.items()
        # The official simple checker takes the (only) offered doc and ignores the answer's key.
        doc = docs[0] if "parallel" not in record_id and "multiple" not in record_id else by_name.get(name)
        if doc is None:
            return 0.0, f"bad_record: expected function {name!r} is not offered"
        errors = [(j, check_call(doc, calls[j], params)) for j in unmatched]
        hit = next((j for j, error in errors if error is None), None)
        if hit is None:
            return 0.0, f"no model call matches expected call {i} ({name}): {errors[0][1] if errors else 'none left'}"
        unmatched.remove(hit)
    return 1.0, "ok"


def check_bfcl(question: dict, possible_answer: dict | None, completion: str) -> tuple[float, str]:
    """Score raw Qwen3 model text against one BFCL record; `possible_answer` is None for (ir)relevance."""
    from envsched_lightning.envs.parsing import parse_tool_calls

    turn = parse_tool_calls(completion)
    truth = None if possible_answer is None else possible_answer["ground_truth"]
    return check_calls(question["id"], question["function"], turn.calls, truth, decode_failed=bool(turn.errors))


def _first_choice(allowed: Sequence[Any]) -> Any:
    return next(a for a in allowed if a != "")


def _fill_template(template: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """An allowed dict is itself {key: [allowed values]}: keep first choices, drop `""`-first keys."""
    return {k: v[0] for k, v in template.items() if v and v[0] != ""}


def ground_truth_calls(question: Mapping[str, Any], possible_answer: Mapping[str, Any]) -> list[ToolCall]:
    """Each expected call as a model would make it.

    Per parameter the first allowed value is used; a parameter whose first choice is `""` is omitted
    unless the doc requires it (then its first real value is used). Dict and list-of-dict parameters
    hold templates of allowed lists, which are filled the same way one level down.
    """
    docs = {d["name"]: d for d in question["function"]}
    calls = []
    for expected in possible_answer["ground_truth"]:
        (name, params), = expected.items()
        doc = docs.get(name, question["function"][0] if len(docs) == 1 else {})
        props = doc.get("parameters", {}).get("properties", {})
        required = set(doc.get("parameters", {}).get("required", []))
        args: dict[str, Any] = {}
        for param, allowed in params.items():
            if param not in props and "" in allowed:  # not offered by the doc: only omission can pass
                continue
            if not allowed or all(a == "" for a in allowed) or (allowed[0] == "" and param not in required):
                continue
            value = _first_choice(allowed)
            kind = props.get(param, {}).get("type")
            if kind == "dict" and isinstance(value, dict):
                value = _fill_template(value)
            elif kind in ("array", "tuple") and isinstance(value, list) and all(isinstance(v, dict) for v in value):
                if props[param].get("items", {}).get("type") == "dict":
                    value = [_fill_template(v) for v in value]
            args[param] = value
        calls.append(ToolCall(doc.get("name", name), args))  # the offered name, as a model sees it
    return calls


# ---------------------------------------------------------------- environments
class BfclEpisode(Episode):
    """Single-turn BFCL: the calls of the first model turn are recorded (not executed) and judged."""

    def __init__(self, record: Mapping[str, Any], truth: Sequence[Any] | None) -> None:
        self._record, self._truth = record, truth
        self._calls: list[ToolCall] | None = None

    def step(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        if self._calls is None:
            self._calls = list(calls)
        return [ToolResult(c.name, "recorded: BFCL single-turn calls are judged, not executed") for c in calls]

    def verify(self, final_answer: str) -> Verdict:
        return Verdict(*check_calls(self._record["id"], self._record["function"], self._calls or [], self._truth))


class BfclEnvironment(Environment):
    """One BFCL-v3 single-turn category; tasks carry their own function docs as `tools`."""

    def __init__(self, category: str = "simple", data_dir: str | os.PathLike[str] | None = None) -> None:
        if category not in CATEGORIES:
            raise ValueError(f"unknown BFCL category {category!r}; valid: {', '.join(CATEGORIES)}")
        self.category = category
        self.name = f"bfcl_{category}"
        self.data_dir = resolve_data_dir(self.name, data_dir, "bfcl_v3")

    @cached_property
    def records(self) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """(question, possible_answer or None) pairs, matched by id; a missing answer is an error."""
        questions = read_jsonl(self.data_dir / f"BFCL_v3_{self.category}.json",
                               check=field_types(question=list, function=list))  # fmt: skip
        if self.category in NO_ANSWER_CATEGORIES:
            return [(q, None) for q in questions]
        answer_path = self.data_dir / "possible_answer" / f"BFCL_v3_{self.category}.json"
        answers = {a["id"]: a for a in read_jsonl(answer_path, check=field_types(ground_truth=(list, dict)))}
        missing = [q["id"] for q in questions if q["id"] not in answers]
        if missing:
            raise ValueError(f"{answer_path}: no answer for {len(missing)} question(s), e.g. {missing[:3]}")
        return [(q, answers[q["id"]]) for q in questions]

    def _task(self, question: dict[str, Any], answer: dict[str, Any] | None) -> Task:
        docs = question["function"]
        truth = answer["ground_truth"] if answer else []
        n_params = sum(len(next(iter(call.values()))) for call in truth)
        features = {
            "n_functions_offered": len(docs),
            "n_expected_calls": len(truth) if answer else float("relevance" in self.category and "ir" not in self.category),
            "n_params": n_params,
            "n_required_offered": sum(len(d.get("parameters", {}).get("required", [])) for d in docs),
            "is_parallel": "parallel" in self.category,
            "is_multiple": "multiple" in self.category,
            "is_no_call": "irrelevance" in self.category,
            "is_live": self.category.startswith("live_"),
        }
        pattern = "refuse" if "irrelevance" in self.category else "parallel" if "parallel" in self.category else "single"
        features |= pattern_features(pattern, features["n_expected_calls"])
        spec = TaskSpec(
            env=self.name, task_id=question["id"], tools=tuple(d["name"] for d in docs), state_keys=(),
            verifier="bfcl_ast", features=features, reward_type="binary",
        )  # fmt: skip
        return Task(
            spec=spec,
            messages=tuple(question["question"][0]),
            ground_truth={"question": question, "possible_answer": answer},
            max_turns=1,
            tools=tuple(to_tool_schema(d) for d in docs),
        )

    @cached_property
    def _tasks(self) -> list[Task]:
        return [self._task(q, a) for q, a in self.records]

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def tool_schemas(self) -> list[dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        for task in self._tasks:
            for schema in task.tools:
                seen.setdefault(schema["function"]["name"], dict(schema))
        return list(seen.values())

    def reset(self, task: Task) -> Episode:
        answer = task.ground_truth["possible_answer"]
        return BfclEpisode(task.ground_truth["question"], answer["ground_truth"] if answer else None)


def _register(category: str) -> None:
    register_env(f"bfcl_{category}")(lambda **options: BfclEnvironment(category, **options))


for _category in CATEGORIES:
    _register(_category)
