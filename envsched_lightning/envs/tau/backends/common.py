"""Shared machinery for our tau-bench tools: schemas, the official call convention, `calculate`, DB hashing.

Our tools are written from tau-bench's tool code (sierra-research/tau-bench, `tau_bench/envs/*/tools/`)
and reproduce what the model sees there, byte for byte: each tool returns the official string (JSON of
the record, or ``"Error: ..."``), and `TauDomain.execute` follows the official `Env.step`: an unknown
tool gives ``"Unknown action <name>"`` (no "Error:" prefix), any exception a tool raises becomes
``f"Error: {exception}"``, and bad keyword arguments give the `TypeError` text Python gives for the
official `<ToolClass>.invoke(data, ...)` signature. Official quirks are named where they happen.

`rules="training"` (opt-in, never for reported scores) changes the few official rules that would
teach a model something false about the world; see `airline.py` and docs/benchmarks.md.

The reward compares database hashes. Official hash: `sha256(str(to_hashable(data)))`, where dicts
become key-sorted tuples of pairs and lists tuples, so `1` and `1.0` differ and dict key order does
not matter. We hash record by record with the same `str(to_hashable(record))` per record, which gives
equal hashes for exactly the databases the official hash calls equal, without re-hashing megabytes.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import inspect
import operator
import typing
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, ClassVar

RULES = ("official", "training")


def check_rules(rules: str) -> str:
    if rules not in RULES:
        raise ValueError(f"rules must be one of {', '.join(map(repr, RULES))}, got {rules!r}")
    return rules


# ---------------------------------------------------------------- schemas
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object", list: "array"}


def tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a method as a tool; its schema comes from the signature and the docstring's first line."""
    fn._is_tool = True  # type: ignore[attr-defined]
    return fn


def _json_type(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return {"type": "string", "enum": list(typing.get_args(hint))}
    if origin is list:
        (item,) = typing.get_args(hint) or (str,)
        return {"type": "array", "items": _json_type(item)}
    if typing.is_typeddict(hint):  # a list item with named fields, as the official item schemas
        fields = typing.get_type_hints(hint)
        return {"type": "object", "properties": {k: _json_type(v) for k, v in fields.items()}, "required": list(fields)}
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


def _quoted(names: list[str]) -> str:
    q = [f"'{n}'" for n in names]
    return q[0] if len(q) == 1 else f"{q[0]} and {q[1]}" if len(q) == 2 else f"{', '.join(q[:-1])}, and {q[-1]}"


def call_error(domain: str, name: str, params: list[str], kwargs: Mapping[str, Any]) -> str | None:
    """Python's TypeError text for `<Class>.invoke(data=..., **kwargs)`, as the official tools raise it."""
    cls = "".join(part.capitalize() for part in name.split("_"))
    if "data" in kwargs:  # raised at the call site, so CPython names the module too
        return f"tau_bench.envs.{domain}.tools.{name}.{cls}.invoke() got multiple values for keyword argument 'data'"
    unexpected = [k for k in kwargs if k not in params]
    if unexpected:
        return f"{cls}.invoke() got an unexpected keyword argument '{unexpected[0]}'"
    missing = [p for p in params if p not in kwargs]
    if missing:
        plural = "argument" if len(missing) == 1 else "arguments"
        return f"{cls}.invoke() missing {len(missing)} required positional {plural}: {_quoted(missing)}"
    return None


# ---------------------------------------------------------------- calculate
CALC_CHARS = "0123456789+-*/(). "
MAX_INT_BITS = 4_000_000  # larger intermediate integers are refused (the official eval could run for hours)
MAX_DIV_WORK = 1 << 36  # quotient bits x divisor bits of one `//`: above it schoolbook division takes > 0.1 s
_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow,
}  # fmt: skip
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _too_big(op: type, a: Any, b: Any) -> bool:
    if not (type(a) is int and type(b) is int):
        return False
    if op is ast.Pow:
        return b > 0 and abs(a) > 1 and b * abs(a).bit_length() > MAX_INT_BITS
    if op is ast.FloorDiv:  # one C call that holds the interpreter: no time limit can interrupt it
        return max(a.bit_length() - b.bit_length(), 0) * b.bit_length() > MAX_DIV_WORK
    return op is ast.Mult and a.bit_length() + b.bit_length() > MAX_INT_BITS


def _evaluate(expression: str) -> Any:
    """The value Python's `eval` gives for an expression of CALC_CHARS, without running eval.

    Such an expression can only parse to number constants, `...`, `()`, + - * / // ** and calls
    (``1(2)``); each is evaluated as Python would, so results and error texts match. Iterative, so
    nesting as deep as the parser accepts works.
    """
    if not isinstance(expression, str):
        raise TypeError("eval() arg 1 must be a string, bytes or code object")
    try:  # eval strips leading spaces and tabs, and compiles under the file name "<string>"
        tree = ast.parse(expression.lstrip(" \t"), filename="<string>", mode="eval").body
    except RecursionError:
        raise RecursionError("maximum recursion depth exceeded during compilation") from None
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    values: list[Any] = []
    while stack:
        node, ready = stack.pop()
        children = ([node.left, node.right] if isinstance(node, ast.BinOp) else [node.operand] if isinstance(node, ast.UnaryOp)
                    else [node.func, *node.args] if isinstance(node, ast.Call) else [])  # fmt: skip
        if not ready and children:
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(children))
            continue
        if isinstance(node, ast.Constant):
            values.append(node.value)
        elif isinstance(node, ast.Tuple) and not node.elts:
            values.append(())
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            right, left = values.pop(), values.pop()
            if _too_big(type(node.op), left, right):
                raise OverflowError("integer result too large to evaluate")
            values.append(_BINOPS[type(node.op)](left, right))
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            values.append(_UNARY[type(node.op)](values.pop()))
        elif isinstance(node, ast.Call) and not node.keywords:
            del values[len(values) - len(node.args) :]
            raise TypeError(f"'{type(values.pop()).__name__}' object is not callable")
        else:  # unreachable for CALC_CHARS input; refuse rather than guess
            raise ValueError(f"unsupported expression element {type(node).__name__}")
    return values.pop()


def calculate(expression: Any) -> str:
    """Official `calculate`: a character whitelist, then ``str(round(float(value), 2))`` (so "4" -> "4.0")."""
    if not all(char in CALC_CHARS for char in expression):  # `in` a str: "12" passes as a substring, as upstream
        return "Error: invalid characters in expression"
    try:
        return str(round(float(_evaluate(expression)), 2))
    except Exception as exc:  # noqa: BLE001 - the official tool reports every failure as text
        return f"Error: {exc}"


# ---------------------------------------------------------------- database
def to_hashable(item: Any) -> Any:
    """The official hash's normal form: dicts -> key-sorted tuples of pairs, lists -> tuples."""
    if isinstance(item, dict):
        return tuple((key, to_hashable(value)) for key, value in sorted(item.items()))
    if isinstance(item, list):
        return tuple(to_hashable(element) for element in item)
    if isinstance(item, set):
        return tuple(sorted(to_hashable(element) for element in item))
    return item


def _digest(record: Any) -> str:
    return hashlib.sha256(str(to_hashable(record)).encode()).hexdigest()


class Overlay(MutableMapping[str, Any]):
    """One episode's view of a shared table: a record is deep-copied on first access (copy-on-read).

    Copying a multi-megabyte database per rollout costs more than the rollout; copying only the
    records a tool touches keeps episodes isolated (the shared rows are never handed out) and cheap.
    Tools that only scan (searches, find-user) read through `peek_values` and copy nothing.
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
        raise KeyError(key)  # no official tool deletes a top-level record

    def __contains__(self, key: object) -> bool:
        return key in self.own or key in self._base

    def __iter__(self) -> Iterator[str]:
        yield from self._base
        yield from (k for k in self.own if k not in self._base)

    def __len__(self) -> int:
        return len(self._base) + sum(k not in self._base for k in self.own)

    def peek_values(self) -> Iterator[Any]:
        """Records in table order, without copying: the caller must not mutate them."""
        return (self.own[k] if k in self.own else self._base[k] for k in self)

    def peek_items(self) -> Iterator[tuple[str, Any]]:
        return ((k, self.own[k] if k in self.own else self._base[k]) for k in self)


class SharedDatabase:
    """The pristine tables, loaded once per environment, with per-record digests for fast hashing."""

    def __init__(self, tables: Mapping[str, dict[str, Any]]) -> None:
        self.tables = dict(tables)
        self.digests = {t: {k: _digest(v) for k, v in rows.items()} for t, rows in self.tables.items()}

    def fresh(self) -> dict[str, Overlay]:
        return {t: Overlay(rows) for t, rows in self.tables.items()}

    def hash(self, data: Mapping[str, Overlay]) -> str:
        """Equal for two views exactly when the official whole-database hash is equal."""
        h = hashlib.sha256()
        for table in sorted(data):
            digests = {**self.digests[table], **{k: _digest(v) for k, v in data[table].own.items()}}
            for key in sorted(digests):
                h.update(f"{table}\0{key}\0{digests[key]}\n".encode())
        return h.hexdigest()


def materialize(data: Mapping[str, Overlay]) -> dict[str, dict[str, Any]]:
    """The whole database as plain dicts (for comparisons with the official tools; slow)."""
    return {t: dict(rows.peek_items()) for t, rows in data.items()}


class TauDomain:
    """One domain's database plus its tools; `execute` is the only entry point from model calls."""

    domain: ClassVar[str] = ""
    files: ClassVar[tuple[str, ...]] = ()  # the JSON files under <domain>/data/, each one top-level table
    _tools: ClassVar[dict[str, Callable[..., Any]]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._tools = {name: fn for klass in reversed(cls.__mro__) for name, fn in vars(klass).items() if getattr(fn, "_is_tool", False)}

    def __init__(self, db: SharedDatabase, rules: str = "official") -> None:
        self._db, self.rules = db, check_rules(rules)
        self.data = db.fresh()  # this episode's private view
        self.training = rules == "training"

    @classmethod
    def tool_schemas(cls) -> list[dict[str, Any]]:
        return [tool_schema(fn) for fn in cls._tools.values()]

    def execute(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        """Official `Env.step` for one tool action: the observation string the model sees.

        None where the official tool returns None (a fourth `send_certificate`): upstream's
        `EnvResponse` then fails validation, the run raises, and its harness scores the task 0.
        """
        fn = self._tools.get(name)
        if fn is None:
            return f"Unknown action {name}"
        # The arguments are copied: upstream stores the caller's lists in the DB by reference, which
        # only matters when the same task's kwargs are replayed twice in one process.
        kwargs = copy.deepcopy(dict(arguments))
        params = [p for p in inspect.signature(fn).parameters if p != "self"]
        problem = call_error(self.domain, name, params, kwargs)
        if problem is not None:
            return f"Error: {problem}"
        try:
            out = fn(self, **kwargs)
        except Exception as exc:  # noqa: BLE001 - Env.step renders any exception as text
            return f"Error: {exc}"
        return out

    def hash(self) -> str:
        return self._db.hash(self.data)

    # ---- tools every domain has
    @tool
    def calculate(self, expression: str) -> str:
        """Calculate the result of an arithmetic expression (numbers, + - * /, parentheses and spaces)."""
        return calculate(expression)

    @tool
    def think(self, thought: str) -> str:
        """Think about something; it looks nothing up and changes nothing, only logs the thought."""
        return ""

    @tool
    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the user to a human agent with a summary of the issue, only if asked or the tools cannot resolve it."""
        return "Transfer successful"
