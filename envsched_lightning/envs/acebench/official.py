"""ACEBench's official normal/special verdicts, quirks included (our code, upstream's behaviour).

Upstream (chenchen0103/ACEBench, `eval_main.py`, `model_eval/checker.py`, `model_inference/utils.py`)
scores one text per record: it decodes `[ApiName(key=value, ...)]` with Python's `ast` and checks the
calls, or (special categories) looks for phrases in the text. This module re-implements that path
as written, oddities and all, so a reported score is the official one. Each oddity is tagged (D =
decoding, N = normal checker, S = special) where it is reproduced; `docs/benchmarks.md` lists them.
Nothing is `eval`ed: the one place upstream calls `eval` (arithmetic in a value, D6) is computed
here on literals only. Where upstream raises (its whole run would stop) the record scores 0 (N12).
"""

from __future__ import annotations

import ast
import keyword
import operator
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

Call = tuple[str, dict[Any, Any]]  # a decoded call: (dotted name, keyword arguments)

_STANDARDIZE = re.compile(r"[ ,./\-_*^]")
_SUFFIX = re.compile(r"_\d+$")
# checker.py's PYTHON_TYPE_MAPPING (note "number" -> int and "enum" -> enumerate, which no value has).
_PY: dict[str, type] = {
    "string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list, "dict": dict,
    "any": str, "list": list, "object": dict, "objectArray": list, "list(string)": list, "list(enum)": list,
    "int": int, "enum": enumerate, "number": int,
}  # fmt: skip
_NESTED = ("array", "tuple", "list(string)", "list(enum)", "object", "objectArray")
_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}  # fmt: skip
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}
_MAX_BITS, _MAX_LEN = 100_000, 100_000  # D6 bounds: upstream's eval would hang or exhaust memory beyond them
MAX_DECODED_SIZE = 100_000
"""Elements one decoded output may hold (list/tuple/dict items and string characters, counted through nesting and
repetition): `[[0]*100]*100` is 10,100 however its lists share references, since checkers and renderers walk it as a tree."""


class DecodeError(ValueError):
    """The output is not a list of calls upstream's decoder accepts."""


class DecodeBudget:
    """What is left of `MAX_DECODED_SIZE` for one output: every decoded value spends its expanded size before it is built."""

    def __init__(self, limit: int = MAX_DECODED_SIZE) -> None:
        self.limit, self.left = limit, limit

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise DecodeError(f"decoded value too large: more than {self.limit:,} elements through nesting and repetition")


def expanded_size(value: Any, memo: dict[int, int] | None = None) -> int:
    """Elements of `value` walked as a tree (a string counts its characters), computed once per shared object."""
    memo = {} if memo is None else memo
    key = id(value)
    if key in memo:
        return memo[key]
    if isinstance(value, str):
        size = max(1, len(value))
    elif isinstance(value, (list, tuple)):
        size = 1 + sum(expanded_size(v, memo) for v in value)
    elif isinstance(value, dict):
        size = 1 + sum(expanded_size(k, memo) + expanded_size(v, memo) for k, v in value.items())
    else:
        size = 1
    memo[key] = size
    return size


def standardize(text: str) -> str:
    """Upstream's normalisation (inherited from BFCL): drop spaces and `, . / - _ * ^`, lowercase, `'` -> `"`."""
    return _STANDARDIZE.sub("", text).lower().replace("'", '"')


# --- decoding -----------------------------------------------------------------------------------


def render(calls: Sequence[tuple[str, Mapping[str, Any]]], check: bool = True) -> str:
    """Calls as the text upstream's prompt asks for: `[Name(key=value, ...), ...]`, values as Python literals.

    With `check`, a name that text cannot hold (not a dotted identifier, a keyword argument that is
    not an identifier or is a Python keyword) is a DecodeError: upstream's parser would refuse it."""
    if check:
        for name, args in calls:
            for word in (*name.split("."), *args):
                if not isinstance(word, str) or not word.isidentifier() or keyword.iskeyword(word):
                    raise DecodeError(f"{word!r:.40} in call {name!r:.40} cannot be written as upstream's Python syntax")
    return "[" + ", ".join(f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})" for name, args in calls) + "]"


def outer_brackets(text: str) -> str | None:
    """The first outermost `[...]` (D1: brackets inside string literals count; a `]` before any `[` unbalances)."""
    start, depth = -1, 0
    for i, char in enumerate(text):
        if char == "[":
            if depth == 0:
                start = i
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0 and start != -1:
                return text[start : i + 1]
    return None


def decode(text: str, multi_turn: bool) -> list[Call]:
    """Upstream's decoding of one output; any failure (upstream catches every exception) is a DecodeError."""
    try:
        # D2: multi-turn steps skip the bracket extraction and drop ALL whitespace, inside strings too.
        source = "".join(text.split()) if multi_turn else outer_brackets(text)
        if source is None:
            raise DecodeError("no [...] in the output")
        body = ast.parse(source, mode="eval").body
        if not isinstance(body, (ast.List, ast.Tuple, ast.Set)):  # upstream reads `body.elts`
            raise DecodeError(f"expected a list of calls, got {type(body).__name__}")
        calls, budget = [], DecodeBudget()
        for node in body.elts:
            if not isinstance(node, ast.Call):
                raise DecodeError(f"list item is a {type(node).__name__}, not a call")
            ((name, args),) = _call(node, budget=budget).items()
            calls.append((name, args))
        return calls
    except DecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - upstream turns every decoding exception into a format error
        raise DecodeError(f"{type(exc).__name__}: {str(exc)[:120]}") from None


def _dotted(func: ast.expr) -> str:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))  # a base that is neither (`f()(x=1)`) contributes nothing


def _call(node: ast.Call, agent: bool = False, budget: DecodeBudget | None = None) -> dict[str, dict[Any, Any]]:
    """One call's {dotted name: keyword arguments}; `budget` is shared by every call of one output."""
    budget = DecodeBudget() if budget is None else budget
    args: dict[Any, Any] = {}
    budget.spend(len(node.keywords))
    for keyword in node.keywords:  # D3: positional arguments are ignored; a repeated keyword: the last wins
        args[keyword.arg] = _value(keyword.value, agent, budget)  # `**x` gives key None (then fails as an unexpected param)
    return {_dotted(node.func): args}


def _value(node: ast.AST, agent: bool, budget: DecodeBudget) -> Any:
    """A decoded value. `agent`: the agent categories' decoder, which keeps a call without keywords as its source text."""
    if isinstance(node, ast.Constant):
        budget.spend(len(node.value) if isinstance(node.value, str) else 1)
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        # D5: every unary operator negates a constant operand (`+5` -> -5, `not True` -> -1).
        if not isinstance(node.operand, ast.Constant):
            raise DecodeError("unary operator on a non-constant")
        return -node.operand.value
    if isinstance(node, (ast.List, ast.Tuple)):
        budget.spend(len(node.elts))
        items = [_value(e, agent, budget) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise DecodeError("`**` in a dict")
        budget.spend(len(node.keys))
        return {_value(k, agent, budget): _value(v, agent, budget) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.BinOp):
        return _arith(node, budget)
    if isinstance(node, ast.Name):
        return node.id  # D4: a bare name is its own text (`true` -> "true")
    if isinstance(node, ast.Call):
        if agent and not node.keywords:
            text = ast.unparse(node)
            budget.spend(len(text))
            return text
        return _call(node, agent, budget)
    if isinstance(node, ast.Subscript):
        return f"{ast.unparse(node.value)}[{ast.unparse(node.slice)}]"  # D7: kept as source text
    raise DecodeError(f"unsupported {type(node).__name__}")  # D7: lambdas too (upstream's lambda branch always raises)


def _arith(node: ast.AST, budget: DecodeBudget) -> Any:
    """D6: upstream `eval`s a BinOp's source; we compute it when it is arithmetic on literals only."""
    if isinstance(node, ast.Constant) and node.value is not Ellipsis:
        budget.spend(len(node.value) if isinstance(node.value, str) else 1)
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        budget.spend(len(node.elts))
        items = [_arith(e, budget) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:  # inside eval, real Python semantics
        return _UNARY[type(node.op)](_arith(node.operand, budget))
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        left, right = _arith(node.left, budget), _arith(node.right, budget)
        _bounded(node.op, left, right)
        budget.spend(_result_size(node.op, left, right))  # before the product exists
        return _ARITH[type(node.op)](left, right)
    raise DecodeError(f"{ast.unparse(node)[:60]!r} is not literal arithmetic (upstream would eval it)")


def _result_size(op: ast.operator, left: Any, right: Any) -> int:
    """The expanded size of a sequence that `left op right` builds (repetition multiplies shared items), else 0."""
    if isinstance(op, ast.Mult):
        seq, n = (left, right) if isinstance(left, (str, list, tuple)) else (right, left)
        if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
            return max(n, 0) * expanded_size(seq)
    if isinstance(op, ast.Add) and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
        return expanded_size(left) + expanded_size(right)
    return 0


def _bounded(op: ast.operator, left: Any, right: Any) -> None:
    if isinstance(op, ast.Mod) and isinstance(left, str):
        raise DecodeError("%-formatting is not computed")
    if isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int):
        if abs(right) > _MAX_BITS or max(abs(left), 2).bit_length() * abs(right) > _MAX_BITS:
            raise DecodeError("power too large to compute")
    if isinstance(op, ast.Mult):
        if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > _MAX_BITS:
            raise DecodeError("product too large to compute")
        seq, n = (left, right) if isinstance(left, (str, list, tuple)) else (right, left)
        if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > _MAX_LEN:
            raise DecodeError("repetition too long to compute")


# --- normal categories --------------------------------------------------------------------------


def normal_reason(functions: Sequence[Mapping[str, Any]], truth: Any, calls: Sequence[Call]) -> str | None:
    """None if upstream's normal_checker accepts `calls` for any ground-truth alternative, else why not."""
    alternatives = truth if isinstance(truth, list) else [truth]
    reasons = []
    for answer in alternatives:
        try:
            reason = _match(functions, answer, calls)
        except Exception as exc:  # noqa: BLE001 - N12: upstream raises here and its run stops; we score 0
            return f"upstream checker raises {type(exc).__name__}: {str(exc)[:120]}"
        if reason is None:
            return None
        reasons.append(reason)
    return reasons[0] if reasons else "no ground truth"


def _match(functions: Sequence[Mapping[str, Any]], answer: Mapping[str, Any], calls: Sequence[Call]) -> str | None:
    if len(calls) != len(answer):
        return f"wrong_count: expected {len(answer)} call(s), got {len(calls)}"
    # N1: the `_N` suffix is stripped from every key, even where a real function name ends in `_N`.
    expected = [(key, _SUFFIX.sub("", key), params) for key, params in answer.items()]
    if Counter(name for name, _ in calls) != Counter(name for _, name, _ in expected):
        return f"wrong_functions: expected {sorted(n for _, n, _ in expected)}, got {sorted(n for n, _ in calls)}"
    for key, name, params in expected:
        # N2: the doc is the first whose name is a substring of the (unstripped) ground-truth key.
        doc = next((d for d in functions if d["name"] in key), None)
        reasons = []
        for call_name, args in calls:  # N3: model calls are not consumed; two expected calls may share one
            if call_name == name:
                reasons.append(_call_reason(doc, call_name, args, params))
                if reasons[-1] is None:
                    break
        if None not in reasons:
            return f"{name}: {reasons[0]}"
    return None


def _call_reason(doc: Any, name: str, args: dict[Any, Any], want: Any) -> str | None:
    """checker.py's simple_function_checker."""
    params = doc["parameters"]
    if args == {} and params == {}:
        return None
    if args == {} or params == {}:  # N4: a call without arguments fails whenever the doc has parameters
        return f"wrong_param: {'call without arguments' if args == {} else 'arguments for a function without parameters'}"
    if want == params["properties"]:  # N4: passes outright (reachable when both are empty)
        return None
    if want == {}:
        return "wrong_param: the ground truth has no arguments"
    if doc["name"] != name:
        return f"wrong_function_name: {doc['name']!r}"
    props = params["properties"]
    for param in params["required"]:
        if param not in args:
            return f"lack_args: {param!r}"
    for param, value in args.items():  # N5: ground-truth params left out are not looked at
        if param not in props or param not in want:
            return f"addition_args: {param!r}"
        kind = props[param]["type"]
        py = _PY[kind]
        nested = None
        if kind in _NESTED:
            try:
                item_kind = props[param]["items"]["type"]
            except Exception:  # noqa: BLE001 - N9: no `items` -> "string"/"enum" if the type says so, else dict
                item_kind = "string" if "string" in kind else "enum" if "enum" in kind else "dict"
            nested = _PY[item_kind]
        if kind == "tuple" and type(value) is tuple:
            value = list(value)
        if kind == "float" and type(value) is int:
            value = float(value)
        valid, variable = _type_ok(value, want[param], py, nested)
        if not valid:
            if type(value) is py and nested is not None:
                return f"type_error: {param!r} fails the nested type check against {want[param]!r:.60} (N9)"
            return f"type_error: {param!r} expected {kind}, got {type(value).__name__} {value!r:.60}"
        if variable:  # N6: the value has the ground truth's type, which differs from the doc's: not compared
            continue
        if py is dict:
            reason = _dict_reason(value, want[param])
        elif py is list and nested is dict:
            if kind == "objectArray":
                if len(value) != len(want[param]):
                    return f"value_error: {param!r} wrong number of items"
                if value:
                    raise TypeError("dict_checker() missing 1 required positional argument: 'func_name'")
            reason = _list_dict_reason(value, want[param])
        elif py is str:
            reason = None if standardize(want[param]) in standardize(value) else "substring"  # N11
        elif py is list:
            got = [standardize(x) if type(x) is str else x for x in value]
            expected = [standardize(x) if type(x) is str else x for x in (want[param][i] for i in range(len(want[param])))]
            reason = None if got == expected else "list differs"  # N11
        else:
            continue  # N8: top-level numbers and booleans are only type-checked
        if reason is not None:
            return f"value_error: {param!r}={value!r:.80} ({reason}), expected {want[param]!r:.80}"
    return None


def _type_ok(value: Any, want: Any, py: type, nested: type | None) -> tuple[bool, bool]:
    """checker.py's type_checker: (valid, is_variable)."""
    want_type = None if isinstance(want, str) and want == "" else type(want)
    variable = want_type is not None and want_type is not py
    if isinstance(value, str) and value in ("true", "false"):  # N7: before any type test, even for strings
        value = value == "true"
    nested_failed = False
    if type(value) is py:  # N6: exact type, so `number` (int) refuses a float here and a bool is not an int
        if nested is None:
            return True, variable
        for item in want:  # N9: iterates the ground truth; an empty one never passes
            if type(item) is list and not all(_type_ok(v, item, nested, None)[0] for v in value):
                continue
            return True, variable
        nested_failed = True
    if want_type is not None and (type(value) is want_type or want == value):  # N6: 2023.0 == 2023, True == 1
        return not nested_failed, True
    return False, variable


def _dict_reason(value: Any, want: Any) -> str | None:
    """N10: same key count, recursive; leaves pass when str(gt) is a substring of str(value), standardized."""
    if not isinstance(value, dict):
        return "not a dict"
    if len(value) != len(want.keys()):
        return f"{len(value)} keys, expected {len(want)}"
    for key, got in value.items():
        if isinstance(got, str) and got in ("true", "false"):
            got = got == "true"
        if key not in want:
            return f"unexpected key {key!r}"
        expected = want[key]
        if isinstance(expected, dict):
            reason = _dict_reason(got, expected)
            if reason is not None:
                return reason
            continue
        got_std = standardize(got) if type(got) is str else got
        expected_std = standardize(expected) if type(expected) is str else expected
        if str(expected_std) not in str(got_std):  # a list leaf is its str(): case and spaces count
            return f"{key!r}: {str(expected_std)[:40]!r} not in {str(got_std)[:40]!r}"
    return None


def _list_dict_reason(value: list[Any], want: Any) -> str | None:
    if len(value) != len(want):
        return f"{len(value)} items, expected {len(want)}"
    for i, item in enumerate(value):
        reason = _dict_reason(item, want[i])
        if reason is not None:
            return f"item {i}: {reason}"
    return None


# --- special categories -------------------------------------------------------------------------


def special_reason(category: str, truth: Any, text: str) -> str | None:
    """S1: case-sensitive phrases in the raw text; None if upstream's special_eval accepts it."""
    try:
        if "incomplete" in category:  # phrase, API name and each missing parameter
            needed = [s for name, params in truth.items() for s in ("Missing necessary parameters", name, *params)]
        elif "error" in category:  # phrase and each wrong value; the parameter names are not checked
            needed = [s for values in truth.values() for s in ("There is incorrect value", *values)]
        else:
            needed = ["the limitations of the function"]
        absent = [s for s in needed if s not in text]
    except Exception as exc:  # noqa: BLE001 - N12
        return f"upstream checker raises {type(exc).__name__}: {str(exc)[:120]}"
    return f"answer lacks {sorted(set(absent))}" if absent else None
