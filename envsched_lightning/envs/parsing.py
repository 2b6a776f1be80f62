"""Turn model text into tool calls, check calls against JSON-schema function docs, and render calls back.

Qwen3 emits ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`` blocks, one per call,
several per turn for parallel calls. Everything here is total: any input string yields a
`ParsedTurn` (malformed blocks become error strings, never exceptions), because a rollout must
never crash on what a half-trained model writes. Only `json` is used to decode; nothing is
evaluated.

A block body is decoded with `json.JSONDecoder.raw_decode`, so a ``</tool_call>`` inside a JSON
string value does not cut the block short and `render_tool_call` -> `parse_tool_calls` round-trips
every JSON-serialisable call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .calls import ToolCall

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
_DECODER = json.JSONDecoder()
_WS = " \t\n\r"
_MAX_ERR = 80  # characters of a bad block quoted back in its error message
MAX_BLOCKS = 64  # tool-call blocks parsed per turn; more is one error
MAX_ARG_DEPTH = 16  # nesting of lists / objects inside `arguments`
MAX_ARG_CHARS = 20_000  # total characters of strings and keys inside `arguments`
MAX_ARG_NUMBER = 1e100  # |number| allowed in `arguments` (integers of 101+ digits are refused)


class ParsedTurn(NamedTuple):
    """One assistant message split into its prose and its tool calls."""

    content: str  # text outside tool-call blocks, stripped
    calls: list[ToolCall]  # well-formed calls in the order written
    errors: list[str]  # one reason per block that could not be turned into a call


def _snippet(s: str) -> str:
    s = s.strip()
    return repr(s if len(s) <= _MAX_ERR else s[:_MAX_ERR] + "...")


def _call_from_json(obj: Any) -> ToolCall | str:
    """A `ToolCall`, or the reason the decoded block is not one."""
    if not isinstance(obj, dict):
        return f"tool call must be a JSON object, got {type(obj).__name__}"
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return "tool call has no 'name' string"
    args = obj.get("arguments", {})
    if isinstance(args, str):  # some models emit the arguments as a JSON-encoded string
        try:
            args = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError) as e:
            return f"tool call {name!r}: arguments string is not JSON ({e})"
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return f"tool call {name!r}: arguments must be an object, got {type(args).__name__}"
    problem = argument_problem(args)
    if problem:
        return f"tool call {name!r}: {problem}"
    return ToolCall(name=name.strip(), arguments=args)


def argument_problem(args: Any) -> str | None:
    """Why `args` is too deep, too long or holds a number no tool should compute with; None if fine.

    Iterative, so a value nested thousands deep is refused without recursing into it."""
    chars, stack = 0, [(args, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_ARG_DEPTH:
            return f"arguments nested deeper than {MAX_ARG_DEPTH} levels"
        if isinstance(value, dict):
            chars += sum(len(str(k)) for k in value)
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, str):
            chars += len(value)
        elif isinstance(value, bool) or value is None:
            pass
        elif isinstance(value, (int, float)):
            if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
                return f"non-finite number {value!r} in arguments"
            if abs(value) > MAX_ARG_NUMBER:
                return f"a number in arguments exceeds {MAX_ARG_NUMBER:g} in magnitude"
        if chars > MAX_ARG_CHARS:
            return f"arguments longer than {MAX_ARG_CHARS} characters"
    return None


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _strip_stray_close(segment: str, errors: list[str]) -> str:
    if CLOSE in segment:
        errors.append(f"stray {CLOSE} without an opening {OPEN}")
        segment = segment.replace(CLOSE, "")
    return segment


def parse_tool_calls(text: str) -> ParsedTurn:
    """Split `text` into prose and `<tool_call>` blocks; never raises."""
    if not isinstance(text, str):
        return ParsedTurn("", [], [f"expected text, got {type(text).__name__}"])
    content: list[str] = []
    calls: list[ToolCall] = []
    errors: list[str] = []
    pos = 0
    next_close = -2  # cached position of the next close tag (-2: not looked up yet; -1: none left)
    while True:
        start = text.find(OPEN, pos)
        if start < 0:
            content.append(_strip_stray_close(text[pos:], errors))
            break
        if len(calls) + len(errors) >= MAX_BLOCKS:
            errors.append(f"more than {MAX_BLOCKS} {OPEN} blocks in one turn: the rest is ignored")
            content.append(_strip_stray_close(text[pos:start], errors))
            break
        content.append(_strip_stray_close(text[pos:start], errors))
        body = start + len(OPEN)
        try:
            obj, end = _DECODER.raw_decode(text, _skip_ws(text, body))
            after = _skip_ws(text, end)
            if text.startswith(CLOSE, after):
                made = _call_from_json(obj)
                (calls if isinstance(made, ToolCall) else errors).append(made)
                pos = after + len(CLOSE)
                continue
        except (ValueError, RecursionError):
            pass
        # Not a clean JSON body: the block ends at the next close tag, or is unclosed if another
        # block (or the end of the text) comes first.
        if next_close == -2 or 0 <= next_close < body:  # each close tag is searched for once: linear overall
            next_close = text.find(CLOSE, body)
        close, reopen = next_close, text.find(OPEN, body)
        if close < 0 or 0 <= reopen < close:
            errors.append(f"unclosed {OPEN} block: {_snippet(text[body:reopen if reopen >= 0 else None])}")
            if reopen < 0:
                break
            pos = reopen
            continue
        raw = text[body:close]
        try:
            obj = json.loads(raw)
            made = _call_from_json(obj)
            (calls if isinstance(made, ToolCall) else errors).append(made)
        except (ValueError, RecursionError) as e:
            errors.append(f"tool call is not valid JSON ({type(e).__name__}: {str(e)[:60]}): {_snippet(raw)}")
        pos = close + len(CLOSE)
    return ParsedTurn("".join(content).strip(), calls, errors)


def render_tool_call(call: ToolCall) -> str:
    """The exact block Qwen3's chat template writes for `call` (and what a model should emit)."""
    body = json.dumps({"name": call.name, "arguments": dict(call.arguments)}, ensure_ascii=False)
    return f"{OPEN}\n{body}\n{CLOSE}"


def render_assistant_turn(content: str, calls: Sequence[ToolCall]) -> str:
    """An assistant message as the chat template lays it out: prose, then one block per call."""
    blocks = [render_tool_call(c) for c in calls]
    return "\n".join([content, *blocks] if content else blocks)


# --- schema validation -------------------------------------------------------------------------

_TYPE_ALIASES = {"dict": "object", "float": "number", "tuple": "array", "int": "integer", "bool": "boolean",
                 "str": "string", "list": "array"}  # BFCL-style function docs use Python type names


def _is_type(value: Any, kind: str) -> bool:
    kind = _TYPE_ALIASES.get(kind, kind)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":  # an integer is a valid number; a bool is neither
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "null":
        return value is None
    return True  # "any" or a type this checker does not know: do not reject what we cannot judge


def _check_value(value: Any, schema: Mapping[str, Any], where: str) -> str | None:
    """Reason `value` violates `schema` (type, enum, object keys, array items), or None."""
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else []
    if kinds and not any(_is_type(value, k) for k in kinds):
        shown = _snippet(json.dumps(value, default=str))
        return f"{where} must be {'/'.join(map(str, kinds))}, got {type(value).__name__} {shown}"
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        return f"{where} must be one of {enum}, got {value!r}"
    if isinstance(value, dict) and ("properties" in schema or "required" in schema):
        return _check_object(value, schema, where)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            reason = _check_value(item, schema["items"], f"{where}[{i}]")
            if reason:
                return reason
    return None


def _check_object(value: Mapping[str, Any], schema: Mapping[str, Any], where: str) -> str | None:
    props = schema.get("properties") or {}
    missing = [k for k in schema.get("required") or [] if k not in value]
    if missing:
        return f"{where} is missing required {', '.join(map(str, missing))}"
    if schema.get("additionalProperties") is not True:
        extra = [k for k in value if k not in props]
        if extra:
            return f"{where} has unexpected {', '.join(map(str, extra))}"
    for key, item in value.items():
        reason = _check_value(item, props.get(key, {}), f"{where}.{key}" if where != "arguments" else key)
        if reason:
            return reason
    return None


def _function_docs(schema: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    docs = [schema] if isinstance(schema, Mapping) else list(schema)
    out: dict[str, Mapping[str, Any]] = {}
    for doc in docs:
        fn = doc.get("function", doc) if isinstance(doc, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            out[fn["name"]] = fn
    return out


def validate_call(call: ToolCall, schema: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> str | None:
    """Why `call` does not fit the function doc(s) `schema` (one doc or the list offered), or None.

    Checks the tool name, required and unexpected arguments, JSON-schema types (an integer is a
    number, a bool is not an integer), `enum`s, and nested objects and arrays.
    """
    fn = _function_docs(schema).get(call.name)
    if fn is None:
        return f"unknown tool {call.name!r}"
    params = fn.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(call.arguments, Mapping):
        return f"arguments of {call.name!r} must be an object"
    reason = _check_object(dict(call.arguments), params, "arguments")
    return f"{call.name}: {reason}" if reason else None
