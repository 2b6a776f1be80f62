"""Shared machinery for our tau-bench tools: `@tool` schemas from signatures, safe `calculate`, DB hashing.

tau-bench's tool code was not shipped, so each domain re-implements its tools (named as upstream)
over the shipped JSON databases. Tools return strings, as upstream: JSON for records, ``"Error: ..."``
for refused actions, so the model reads the same kind of text. The database hash is a SHA-256 of the
canonical JSON (record by record), the quantity tau-bench's reward compares after replaying the ground-truth actions.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import inspect
import json
import operator
import typing
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, ClassVar

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object", list: "array"}


class ToolError(Exception):
    """A refused action; rendered as ``Error: <message>`` and leaves the database unchanged."""


def tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a method as a tool; its schema comes from the signature and the docstring's first line."""
    fn._is_tool = True  # type: ignore[attr-defined]
    return fn


def _json_type(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin is list:
        (item,) = typing.get_args(hint) or (str,)
        return {"type": "array", "items": _json_type(item)}
    if origin is dict or hint is dict:
        return {"type": "object"}
    return {"type": _JSON_TYPES.get(hint, "string")}


def tool_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(fn)
    params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
    properties = {p.name: _json_type(hints.get(p.name, str)) for p in params}
    required = [p.name for p in params if p.default is inspect.Parameter.empty]
    description = (inspect.getdoc(fn) or fn.__name__).split("\n")[0]
    return {"type": "function", "function": {"name": fn.__name__, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}}  # fmt: skip


_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.USub: operator.neg, ast.UAdd: operator.pos,
}  # fmt: skip


MAX_EXPRESSION_CHARS = 1_000


def safe_arithmetic(expression: str) -> float:
    """Evaluate + - * / and parentheses over numbers by walking the AST; anything else is refused."""

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.operand))
        raise ToolError("invalid characters in expression")

    if not isinstance(expression, str) or len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"expression must be a string of at most {MAX_EXPRESSION_CHARS} characters")
    try:
        return walk(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ZeroDivisionError, RecursionError, OverflowError, MemoryError, ValueError) as exc:
        raise ToolError(f"cannot calculate {expression!r}: {exc}") from None


def _digest(record: Any) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()


class Overlay(MutableMapping[str, Any]):
    """One episode's view of a shared table: a record is deep-copied on first access (copy-on-read).

    Copying a multi-megabyte database per rollout costs more than the rollout; copying only the
    records a tool touches keeps episodes isolated (the shared rows are never handed out) and cheap.
    """

    def __init__(self, base: Mapping[str, Any]) -> None:
        self._base, self.own = base, {}

    def __getitem__(self, key: str) -> Any:
        if key not in self.own:
            self.own[key] = copy.deepcopy(self._base[key])
        return self.own[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.own[key] = value

    def __delitem__(self, key: str) -> None:
        raise ToolError("records are never deleted")

    def __contains__(self, key: object) -> bool:
        return key in self.own or key in self._base

    def __iter__(self) -> Iterator[str]:
        yield from self._base
        yield from (k for k in self.own if k not in self._base)

    def __len__(self) -> int:
        return len(self._base) + sum(k not in self._base for k in self.own)


class SharedDatabase:
    """The pristine tables, loaded once per environment, with per-record digests for fast hashing."""

    def __init__(self, tables: Mapping[str, dict[str, Any]]) -> None:
        self.tables = dict(tables)
        self.digests = {t: {k: _digest(v) for k, v in rows.items()} for t, rows in self.tables.items()}

    def fresh(self) -> dict[str, Overlay]:
        return {t: Overlay(rows) for t, rows in self.tables.items()}

    def hash(self, data: Mapping[str, Overlay]) -> str:
        """Equal to hashing the whole materialised database record by record, in key order."""
        h = hashlib.sha256()
        for table in sorted(data):
            digests = {**self.digests[table], **{k: _digest(v) for k, v in data[table].own.items()}}
            for key in sorted(digests):
                h.update(f"{table}\0{key}\0{digests[key]}\n".encode())
        return h.hexdigest()


class TauDomain:
    """One domain's database plus its tools; `execute` is the only entry point from model calls."""

    files: ClassVar[tuple[str, ...]] = ()  # the JSON files under <domain>/data/, each one top-level table
    _tools: ClassVar[dict[str, Callable[..., Any]]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._tools = {name: fn for klass in reversed(cls.__mro__) for name, fn in vars(klass).items() if getattr(fn, "_is_tool", False)}

    def __init__(self, db: SharedDatabase) -> None:
        self._db = db
        self.data = db.fresh()  # this episode's private view

    @classmethod
    def tool_schemas(cls) -> list[dict[str, Any]]:
        return [tool_schema(fn) for fn in cls._tools.values()]

    def execute(self, name: str, arguments: Mapping[str, Any]) -> str:
        fn = self._tools.get(name)
        if fn is None:
            return f"Error: unknown tool {name!r}"
        try:
            inspect.signature(fn).bind(self, **dict(arguments))
        except TypeError as exc:
            return f"Error: {name}: {exc}"
        try:  # every write tool validates before it mutates, so a refused action changes nothing
            out = fn(self, **dict(arguments))
        except Exception as exc:  # noqa: BLE001 - a tool's failure on model input is an error result
            return f"Error: {exc.args[0] if isinstance(exc, ToolError) else repr(exc)[:200]}"
        try:
            return out if isinstance(out, str) else json.dumps(out)
        except (TypeError, ValueError, RecursionError) as exc:
            return f"Error: {name}: result not renderable ({type(exc).__name__})"

    def hash(self) -> str:
        return self._db.hash(self.data)

    # ---- tools every domain has
    @tool
    def calculate(self, expression: str) -> str:
        """Calculate the result of an arithmetic expression (numbers, + - * / and parentheses)."""
        return str(round(safe_arithmetic(expression), 2))

    @tool
    def think(self, thought: str) -> str:
        """Think about something; it changes nothing and returns nothing."""
        return ""

    @tool
    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the user to a human agent, with a summary of the issue; ends the episode."""
        return "Transfer successful"


def find(table: Mapping[str, Any], key: str, what: str) -> dict[str, Any]:
    if key not in table:
        raise ToolError(f"{what} not found")
    return table[key]
