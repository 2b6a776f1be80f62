"""The BFCL single-turn verdict for Qwen3 `<tool_call>` text: decoder, AST checker, dispatch.

Written from bfcl-eval 2026.3.23 (`QwenFCHandler.decode_ast`, `eval_checker/ast_eval/ast_checker.py`,
`eval_runner._evaluate_single_{ast,relevance}_entry`) as configured for `Qwen/Qwen3-8B-FC`, and
checked against that code by `tests/bfcl/test_single_turn_agreement.py`. Under `rules="official"`
every quirk of the official verdict is kept, each named `QUIRK` below and in `docs/benchmarks.md`,
because a reported score must be the leaderboard's. `rules="training"` departs from it in two places
only, both where the official rule rewards a wrong behaviour (`TRAINING` below); it is for rewards,
never for reported scores.

The Java and JavaScript categories go through the same checker with `language` set: each argument
must then be a string of source code, read into a typed value by `languages.from_source` as
upstream's type converters read it (`language` defaults to the one named by the record id, as
upstream takes it from the category name).

Where the official code would raise (an answer shape it does not handle), the verdict is a failure
whose reason starts with `official_checker_raises`: upstream the whole evaluation would stop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.bfcl.languages import (
    COLLECTION_TYPES,
    LANGUAGES,
    SOURCE_TYPES,
    TYPE_ERROR,
    UnsupportedType,
    from_source,
    language_of,
)

RULES = ("official", "training")

# BFCL doc type -> the Python type the official checker demands.
PYTHON_TYPES: dict[str, type] = {
    "string": str, "integer": int, "float": float, "boolean": bool,
    "array": list, "tuple": list, "dict": dict, "any": str,
}  # fmt: skip
_STANDARDIZE = re.compile(r"[ ,./\-_*^]")
# QUIRK (decoder): a block counts only if written exactly `<tool_call>\n...\n</tool_call>`; the body is
# the shortest run up to the next "\n</tool_call>", so a block missing its newline swallows the next.
_QWEN_BLOCK = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.DOTALL)
OPEN_TAG = "<tool_call>"


class OfficialCrash(Exception):
    """An input on which the official checker raises instead of giving a verdict."""


# What the official checker raises on answers it cannot handle; ValueError covers int() of a
# digit string too long to convert, which upstream's Java/JavaScript converters do not catch.
UPSTREAM_RAISES = (OfficialCrash, UnsupportedType, KeyError, IndexError, TypeError, AttributeError, RecursionError, ValueError)


def check_rules(rules: str, where: str = "BFCL") -> str:
    """`rules` itself, or a ValueError naming the option and its valid values."""
    if rules not in RULES:
        raise ValueError(f"{where}: option `rules` must be one of {', '.join(map(repr, RULES))}; got {rules!r}")
    return rules


# ---------------------------------------------------------------- decoding
class Decoded(NamedTuple):
    """What the official Qwen FC decoder makes of one model message."""

    calls: list[ToolCall]  # decoded calls, in order (names may be any hashable JSON value)
    failure: str | None  # why `decode_ast` would raise; None when it returns `calls`
    dropped: int  # well-delimited blocks whose JSON did not parse (skipped silently upstream)
    attempts: int  # `<tool_call>` tags in the scored text, well-formed or not


def scored_text(text: str) -> str:
    """QUIRK (thinking): only the text after the last `</think>` is stored as the response and scored."""
    return text.split("</think>")[-1].lstrip("\n") if "</think>" in text else text


def decode_qwen_fc(text: str) -> Decoded:
    """Decode `<tool_call>` blocks as the official Qwen3 FC handler does.

    QUIRK (decoder): a body that is not JSON is dropped silently (the other blocks still count); a
    body that is JSON but not an object, or an object without `name`, without `arguments`, or whose
    `arguments` is not an object (a JSON-encoded string, say), makes the whole decode fail.
    """
    text = scored_text(text) if isinstance(text, str) else ""
    bodies = _QWEN_BLOCK.findall(text)
    objects: list[Any] = []
    dropped = 0
    for body in bodies:
        try:
            objects.append(json.loads(body))
        except Exception:  # noqa: BLE001 - upstream skips a block on any decoding error
            dropped += 1
    attempts = text.count(OPEN_TAG)
    if any(type(obj) is not dict for obj in objects):
        return Decoded([], "decoder_failed: a <tool_call> body is not a JSON object", dropped, attempts)
    calls = []
    for obj in objects:
        name, args = obj.get("name", KeyError), obj.get("arguments", KeyError)
        if name is KeyError or args is KeyError:
            return Decoded([], "decoder_failed: a <tool_call> object lacks 'name' or 'arguments'", dropped, attempts)
        if isinstance(name, (list, dict)):  # used as a dict key upstream: unhashable
            return Decoded([], "decoder_failed: a <tool_call> 'name' is not a string", dropped, attempts)
        if type(args) is not dict:
            return Decoded([], f"decoder_failed: 'arguments' is a {type(args).__name__}, not an object", dropped, attempts)
        calls.append(ToolCall(name, dict(args)))
    return Decoded(calls, None, dropped, attempts)


# ---------------------------------------------------------------- one call
def standardize_string(text: str) -> str:
    """Official normalisation: drop spaces and `, . / - _ * ^`, lowercase, `'` -> `"`."""
    return _STANDARDIZE.sub("", text).lower().replace("'", '"')


def _std(value: Any) -> Any:
    return standardize_string(value) if type(value) is str else value


def _answer_type(allowed: Any) -> type | None:
    """Type of the first allowed value that is not `""`; None when only `""` is allowed."""
    return next((type(a) for a in allowed if a != ""), None)


def _type_check(value: Any, allowed: Sequence[Any], expected: type, nested: type | None) -> tuple[bool, bool]:
    """(type ok, is_variable): the official `type_checker`.

    QUIRK (variable): if the allowed values have another type than the doc's (a string naming a
    variable, say), a value of that type passes and is later compared verbatim.
    QUIRK (nested): array items are checked one level deep, against each allowed list in turn; an
    allowed value that is not a list (the `""` of an optional array) passes the items unchecked;
    items get no int -> float conversion.
    """
    answer_type = _answer_type(allowed)
    is_variable = answer_type is not None and answer_type is not expected
    if type(value) is expected:
        if nested is None:
            return True, is_variable
        for option in allowed:
            if type(option) is not list:
                return True, is_variable
            item_types = (nested, _answer_type(option))  # an item may also be a "variable" of the answer's type
            if all(type(item) in item_types for item in value):
                return True, is_variable
        return False, False
    return (True, True) if answer_type is not None and type(value) is answer_type else (False, False)


def _items(option: Any) -> list[Any]:
    """What indexing `option[0..len-1]` gives upstream: a string its characters, an empty dict
    nothing; any other non-list raises there."""
    if isinstance(option, (list, str)):
        return list(option)
    if isinstance(option, dict) and not option:
        return []
    raise OfficialCrash(f"indexing the allowed value {option!r} by position")


def _list_ok(value: list, allowed: Sequence[Any]) -> bool:
    """QUIRK (empty list): each allowed value is iterated, so `""` stands for `[]` and an optional
    array passes when the model sends an empty list; strings inside the lists are standardised."""
    options = [[_std(x) for x in _items(option)] for option in allowed]
    return [_std(x) for x in value] in options


def _dict_ok(value: Any, allowed: Sequence[Any]) -> bool:
    """One allowed dict accepts every model key with a (standardised) allowed value, and each of its
    keys the model left out allows `""`. QUIRK: values are not type-checked and nested dicts are
    compared whole."""
    for option in allowed:
        if option == "":
            continue
        if type(option) is not dict or type(value) is not dict:
            raise OfficialCrash(f"dict check of {value!r} against {option!r}")
        keys_ok = all(k in option and _std(v) in [_std(a) for a in _items(option[k])] for k, v in value.items())
        missing_ok = all(k in value or "" in vals for k, vals in option.items())  # checked even after a bad key
        if keys_ok and missing_ok:
            return True
    return False


def _list_dict_ok(value: list, allowed: Sequence[Any]) -> bool:
    """Same length as one allowed list, dict by dict in order (`""` again stands for `[]`)."""
    for option in allowed:
        if not isinstance(option, (list, str, dict)):
            raise OfficialCrash(f"len() of the allowed value {option!r}")
        if len(value) != len(option):
            continue
        if all(_dict_ok(v, [o]) for v, o in zip(value, _items(option) if value else [])):
            return True
    return False


def check_call(doc: Mapping[str, Any], call: ToolCall, expected: Mapping[str, Sequence[Any]],
               language: str = "python") -> str | None:  # fmt: skip
    """The official `simple_function_checker` for one call in `language`: its first error (official
    error type first), or None. May raise `OfficialCrash` (or what upstream would raise).

    QUIRK (names): the name must be the doc's exactly. `Qwen/Qwen3-8B-FC` has
    `underscore_to_dot=False`, so the dotted name it is shown (`math.hypot`) is the only one
    accepted; `math_hypot` fails.
    QUIRK (Java/JavaScript): every argument must be a JSON string; its converted value then meets
    the same type and value rules, without the int -> float promotion.
    """
    if not isinstance(doc, Mapping):
        raise OfficialCrash("the expected function is not among the offered docs")
    name, properties, required = doc["name"], doc["parameters"]["properties"], doc["parameters"]["required"]
    if call.name != name:
        return f"simple_function_checker:wrong_func_name: expected {name!r}, got {call.name!r}"
    args = call.arguments
    for param in required:
        if param not in args:
            return f"simple_function_checker:missing_required: {param!r}"
    for param, value in args.items():
        if param not in properties or param not in expected:
            return f"simple_function_checker:unexpected_param: {param!r}"
        doc_type = properties[param]["type"]
        if language == "python":
            kind = PYTHON_TYPES[doc_type]
            nested = PYTHON_TYPES[properties[param]["items"]["type"]] if doc_type in ("array", "tuple") else None
            if doc_type == "float" and type(value) is int:  # Python's int -> float promotion, top level only
                value = float(value)
        else:
            types = SOURCE_TYPES[language]
            kind = types[doc_type]  # an unknown doc type raises upstream too
            if type(value) is not str:
                return f"{TYPE_ERROR[language]}: {param!r} ({doc_type}) must be a string of source, got {value!r}"
            item_type = properties[param]["items"]["type"] if doc_type in COLLECTION_TYPES else None
            nested = types[item_type] if doc_type in COLLECTION_TYPES else None
            value = from_source(language, value, doc_type, item_type)
        allowed = expected[param]
        type_ok, is_variable = _type_check(value, allowed, kind, nested)
        if not type_ok:
            return f"type_error:{'nested' if type(value) is kind else 'simple'}: {param!r} ({doc_type}) got {value!r}"
        if is_variable:
            ok, what = value in allowed, "others"
        elif kind is dict:
            ok, what = _dict_ok(value, allowed), "dict"
        elif kind is list and nested is dict:
            ok, what = _list_dict_ok(value, allowed), "list_dict"
        elif kind is str:
            ok, what = standardize_string(value) in [standardize_string(a) for a in allowed if type(a) is str], "string"
        elif kind is list:
            ok, what = _list_ok(value, allowed), "list/tuple"
        else:
            ok, what = value in allowed, "others"
        if not ok:
            return f"value_error:{what}: {param!r}={value!r} not in {list(allowed)!r}"
    omitted = [p for p in expected if p not in args and "" not in expected[p]]
    return f"simple_function_checker:missing_optional: {omitted[0]!r}" if omitted else None


# ---------------------------------------------------------------- one record
def _find_doc(docs: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((d for d in docs if d["name"] == name), None)


def _match_all(docs: Sequence[Mapping[str, Any]], calls: Sequence[ToolCall], truth: Sequence[Mapping[str, Any]],
               language: str) -> bool:  # fmt: skip
    """TRAINING: a perfect matching of expected to model calls (augmenting paths), so any order of a
    correct answer passes; the official greedy matcher can fail one (`parallel_178`)."""
    def fits_one(expected: Mapping[str, Any], call: ToolCall) -> bool:
        (name, params), = expected.items()
        try:
            return check_call(_find_doc(docs, name), call, params, language) is None
        except UPSTREAM_RAISES:  # a shape upstream cannot check
            return False

    fits = [[fits_one(t, c) for c in calls] for t in truth]
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j, fit in enumerate(fits[i]):
            if fit and j not in seen:
                seen.add(j)
                if j not in owner or place(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return all(place(i, set()) for i in range(len(truth)))


def _ast_verdict(record_id: str, docs: Sequence[Mapping[str, Any]], calls: Sequence[ToolCall],
                 truth: Sequence[Mapping[str, Any]], rules: str, language: str) -> tuple[float, str]:  # fmt: skip
    """The official `ast_checker` dispatch: "parallel" in the category, then "multiple", else simple."""
    if "parallel" in record_id:
        if len(calls) != len(truth):
            return 0.0, f"parallel_function_checker_no_order:wrong_count: expected {len(truth)}, got {len(calls)}"
        if rules == "training":
            return (1.0, "ok") if _match_all(docs, calls, truth, language) else (0.0, "no perfect matching of expected to model calls")
        unmatched = list(range(len(calls)))
        for i, expected in enumerate(truth):  # QUIRK (greedy): the first passing model call is consumed
            (name, params), = expected.items()
            doc = _find_doc(docs, name)
            first_error = None
            for j in unmatched:  # stops at the first pass: a later call is never checked (nor can raise)
                error = check_call(doc, calls[j], params, language)
                if error is None:
                    unmatched.remove(j)
                    break
                first_error = first_error or error
            else:
                return 0.0, f"parallel_function_checker_no_order:cannot_find_match for expected call {i} ({name}): {first_error}"
        return 1.0, "ok"
    if "multiple" in record_id:
        if len(calls) != len(truth):
            return 0.0, f"multiple_function_checker:wrong_count: expected {len(truth)}, got {len(calls)}"
        (name, params), = truth[0].items()
        doc = _find_doc(docs, name)
    else:
        if len(calls) != 1:
            return 0.0, f"simple_function_checker:wrong_count: expected 1, got {len(calls)}"
        # QUIRK (simple): the first offered doc is used and the answer's function name is ignored.
        doc, params = docs[0], next(iter(truth[0].values()))
    error = check_call(doc, calls[0], params, language)
    return (0.0, error) if error else (1.0, "ok")


def verdict(record_id: str, docs: Sequence[Mapping[str, Any]], text: str, truth: Sequence[Mapping[str, Any]] | None,
            rules: str = "official", language: str | None = None) -> tuple[float, str]:  # fmt: skip
    """(reward, reason) for raw model text on one BFCL single-turn record; `language` defaults to
    the one its id names (`simple_java_3` -> "java").

    QUIRK (irrelevance): a decode that fails, or finds no block, counts as "no call" and passes.
    TRAINING: any `<tool_call>` tag the decoder could not turn into a call fails the turn, in every
    category: a malformed block is a call attempt, not a refusal, and a half-garbled parallel answer
    is not a correct one (upstream silently drops JSON that does not parse).
    """
    check_rules(rules)
    language = language or language_of(str(record_id))
    if language not in LANGUAGES:
        raise ValueError(f"BFCL: language must be one of {', '.join(LANGUAGES)}; got {language!r}")
    decoded = decode_qwen_fc(text)
    if rules == "training" and (decoded.failure or decoded.attempts != len(decoded.calls)):
        bad = decoded.failure or f"{decoded.attempts - len(decoded.calls)} malformed <tool_call> block(s)"
        return 0.0, f"training rules: {bad}"
    if "irrelevance" in record_id:
        made = decoded.failure is None and len(decoded.calls) > 0
        return (0.0, f"irrelevance_error:decoder_success: made {len(decoded.calls)} call(s)") if made else (1.0, "ok: no call")
    if "relevance" in record_id:
        made = decoded.failure is None and len(decoded.calls) > 0
        return (1.0, "ok: made a call") if made else (0.0, f"relevance_error:decoder_failed: {decoded.failure or 'no call'}")
    if truth is None:
        raise ValueError(f"{record_id}: category needs a possible_answer record")
    if decoded.failure:
        return 0.0, f"ast_decoder:{decoded.failure}"
    try:
        return _ast_verdict(record_id, docs, decoded.calls, truth, rules, language)
    except UPSTREAM_RAISES as exc:
        return 0.0, f"official_checker_raises: {type(exc).__name__}: {str(exc)[:200]}"
