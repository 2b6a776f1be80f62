"""Differential check: our ACEBench checker against upstream's own code, on generated outputs.

    .venv/bin/python tests/official/acebench_diff.py SNAPSHOT [--data DIR] [--rules official|training] [--show N]

SNAPSHOT is a checkout of chenchen0103/ACEBench (it needs `eval_main.py`, `model_eval/` and
`model_inference/utils.py`) or its bare git directory (read with `git archive`). Upstream's code is
not on a package registry, so this is a standalone script, not a test. Upstream's per-category
evaluation functions (`normal_single_turn_eval`, `normal_multi_turn_eval`, `special_eval`) run as
written, one record at a time, with their file writing stubbed out; a record counts as passed when
its `correct_count` is 1, and an exception (upstream's run would stop) counts as a failure.

For every normal/special record the outputs are: the ground truth, perturbations of its calls
(values by type, nested leaves, parameters, calls), all sent as tool calls through JSON and shown
to upstream as `[Name(key=value, ...)]`; raw-text variants in ACEBench's own format (prose around
the list, bare names, positional arguments, unary plus, arithmetic, brackets in strings, ...); and,
for special categories, phrase variants. Prints agreement per category and the disagreements.
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from envsched_lightning.envs.acebench.normal import CATEGORIES, NORMAL, AceBenchEnvironment, ground_truth_answer, judge, official_text  # noqa: E402
from envsched_lightning.envs.base import ToolCall  # noqa: E402
from envsched_lightning.envs.parsing import parse_tool_calls, render_tool_call  # noqa: E402

_EVAL_MAIN = {"extract_outermost_bracket_content", "normal_single_turn_eval", "normal_multi_turn_eval", "special_eval"}


def snapshot_dir(path: str) -> str:
    """A checkout folder: `path` itself, or a bare git directory extracted into a temporary folder."""
    if os.path.isfile(os.path.join(path, "eval_main.py")):
        return path
    out = tempfile.mkdtemp(prefix="acebench_snapshot_")
    files = ["eval_main.py", "model_eval", "model_inference/utils.py"]
    archive = subprocess.run(["git", "--git-dir", path, "archive", "HEAD", *files], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", out], input=archive, check=True)
    return out


def upstream_judge(root: str):
    """upstream(category, record, answer, text) -> (passed, detail), from upstream's own functions."""
    sys.path.insert(0, root)
    checker = importlib.import_module("model_eval.checker")
    namespace = dict(vars(checker))
    namespace["decode_ast"] = importlib.import_module("model_inference.utils").decode_ast
    written: list[Any] = []
    namespace["save_score_as_json"] = lambda name, data, subdir=None: written.append(data)
    namespace["convert_result_to_excel"] = lambda *args, **kwargs: None
    namespace["OUTPUT_PATH"] = ""
    for file, wanted in (("eval_main.py", _EVAL_MAIN), ("model_eval/evaluation_helper.py", {"multiplt_turn_accuracy"})):
        tree = ast.parse(Path(root, file).read_text(encoding="utf-8"))
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
        exec(compile(ast.Module(defs, []), file, "exec"), namespace)  # upstream's functions, unchanged

    def judge(category: str, record: dict, answer: dict, text: str) -> tuple[bool, str]:
        if "special" in category:
            evaluate = namespace["special_eval"]
        elif "normal_multi_turn" in category:
            evaluate = namespace["normal_multi_turn_eval"]
        else:
            evaluate = namespace["normal_single_turn_eval"]
        written.clear()
        try:
            evaluate([{"id": record["id"], "result": text}], [record], [answer], category, "model", {})
        except Exception as exc:  # noqa: BLE001 - upstream's run would stop: no pass
            return False, f"raises {type(exc).__name__}: {exc}"
        header, *errors = written[-1]
        return header["correct_count"] == 1, str(errors[:1])[:300]

    return judge


# --- generated outputs --------------------------------------------------------------------------


def value_variants(value: Any) -> list[tuple[str, Any]]:
    """Mutations of one argument value, by type (labels name the mutation)."""
    if isinstance(value, bool):
        return [("bool_flip", not value), ("bool_str", str(value).lower()), ("bool_str_flip", str(not value).lower()),
                ("bool_int", int(value)), ("bool_Str", str(value))]  # fmt: skip
    if isinstance(value, int):
        return [("int_plus1", value + 1), ("int_as_float", float(value)), ("int_plus_half", value + 0.5),
                ("int_str", str(value)), ("int_neg", -value - 1), ("int_true", True), ("int_list", [value]),
                ("int_digit_prefix", int(f"1{abs(value)}"))]  # fmt: skip
    if isinstance(value, float):
        return [("float_plus1", value + 1), ("float_int", int(value)), ("float_str", str(value)),
                ("float_digits", float(f"{value}1") if "e" not in str(value) else value * 2)]  # fmt: skip
    if isinstance(value, str):
        out = [("str_wrong", "zq9"), ("str_upper", value.upper()), ("str_extra", value + " extra"),
               ("str_nospace", value.replace(" ", "")), ("str_true", "true"), ("str_half", value[: len(value) // 2]),
               ("str_int", 5), ("str_list", [value]), ("str_empty", "")]  # fmt: skip
        if value in ("true", "false"):
            out.append(("str_bool", value == "true"))
        return out
    if value is None:
        return [("none_str", "None"), ("none_zero", 0), ("none_list", [])]
    if isinstance(value, list):
        out = [("list_empty", []), ("list_str", str(value)), ("list_dict", {"items": value})]
        if value:
            out += [("list_reverse", value[::-1]), ("list_drop", value[:-1]), ("list_dup", value + value[:1]),
                    ("list_item_mut", [mutate_leaf(value[0]), *value[1:]])]  # fmt: skip
            if all(isinstance(x, str) for x in value):
                out += [("list_upper", [x.upper() for x in value]), ("list_nospace", [x.replace(" ", "") for x in value])]
        return out
    if isinstance(value, dict):
        out = [("dict_empty", {}), ("dict_extra", {**value, "zq_extra": 1}), ("dict_list", [value])]
        for key in list(value)[:4]:
            out.append(("dict_drop", {k: v for k, v in value.items() if k != key}))
            for label, leaf in value_variants(value[key])[:6]:
                out.append((f"dict_leaf_{label}", {**value, key: leaf}))
        return out
    return []


def mutate_leaf(value: Any) -> Any:
    variants = value_variants(value)
    return variants[0][1] if variants else "zq9"


def call_variants(calls: list[ToolCall], functions: list[dict]) -> list[tuple[str, list[ToolCall]]]:
    out: list[tuple[str, list[ToolCall]]] = [("ground_truth", calls)]
    first, rest = calls[0], calls[1:]
    args = dict(first.arguments)
    for param, value in args.items():
        out.append(("param_drop", [ToolCall(first.name, {k: v for k, v in args.items() if k != param}), *rest]))
        for label, new in value_variants(value):
            out.append((label, [ToolCall(first.name, {**args, param: copy.deepcopy(new)}), *rest]))
    out += [
        ("param_extra", [ToolCall(first.name, {**args, "zq_unexpected": 1}), *rest]),
        ("param_space_name", [ToolCall(first.name, {**args, "zq key": 1}), *rest]),
        ("param_keyword_name", [ToolCall(first.name, {**args, "from": 1}), *rest]),
        ("call_no_args", [ToolCall(first.name, {}), *rest]),
        ("call_dup", [*calls, first]),
        ("call_drop", rest),
        ("call_rename", [ToolCall(first.name + "_zq", args), *rest]),
        ("calls_reversed", calls[::-1]),
    ]
    others = [d["name"] for d in functions if d["name"] != first.name]
    if others:
        out.append(("call_other_function", [ToolCall(others[0], args), *rest]))
    same = [i for i, c in enumerate(calls) if c.name == first.name and i > 0]
    if same:  # a repeated function: the first call twice, the other one dropped
        out.append(("same_name_repeat", [first if i == same[0] else c for i, c in enumerate(calls)]))
        # one call whose strings contain both expected calls' strings, the other call broken (N3)
        other = dict(calls[same[0]].arguments)
        shared = {k: f"{v} {other[k]}" if isinstance(v, str) and isinstance(other.get(k), str) else v for k, v in args.items()}
        broken = {k: "zq9" if isinstance(v, str) else v for k, v in other.items()}
        variant = [ToolCall(first.name, shared if i == 0 else broken) if i in (0, same[0]) else c for i, c in enumerate(calls)]
        out.append(("same_name_shared", variant))
    return out


def text_variants(calls: list[ToolCall]) -> list[tuple[str, str]]:
    text = official_text(calls)
    first = calls[0]
    out = [("text_exact", text), ("text_prose", f"Sure, here you go: {text} Done."), ("text_fence", f"```\n{text}\n```"),
           ("text_newlines", text.replace(", ", ",\n  ")), ("text_empty_list", "[]"), ("text_none", "I cannot help."),
           ("text_bracket_prose", f"[Note] {text}"), ("text_bare_call", text[1:-1])]  # fmt: skip
    name_args = ", ".join(f"{k}={v!r}" for k, v in first.arguments.items())
    tail = text[len(f"[{first.name}({name_args})") :]
    for key, value in first.arguments.items():
        literal = None
        if isinstance(value, bool):
            literal, label = ("true" if value else "false"), "text_bare_bool"
        elif isinstance(value, int) and value > 1:
            literal, label = f"+{value}", "text_unary_plus"
            out.append(("text_arith", _with(first, key, f"{value - 1}+1", tail)))
            out.append(("text_eval_call", _with(first, key, f"len('a')+{value - 1}", tail)))
        elif isinstance(value, str):
            literal, label = repr(value + "]"), "text_bracket_in_str"
            out.append(("text_bare_name", _with(first, key, "zq_name", tail)))
        elif isinstance(value, list):
            literal, label = repr(tuple(value)), "text_tuple"
        if literal is not None:
            out.append((label, _with(first, key, literal, tail)))
    out.append(("text_positional", f"[{first.name}({', '.join(repr(v) for v in first.arguments.values())}){tail}"))
    return out


def _with(call: ToolCall, key: str, literal: str, tail: str) -> str:
    args = ", ".join(f"{k}={literal if k == key else repr(v)}" for k, v in call.arguments.items())
    return f"[{call.name}({args}){tail}"


def special_variants(text: str) -> list[tuple[str, list[ToolCall], str]]:
    head = text.split(" (")[0]
    return [("special_gt", [], text), ("special_lower", [], text.lower()), ("special_prose", [], f"I see. {text} Please tell me."),
            ("special_phrase_only", [], head), ("special_empty", [], ""), ("special_drop_last", [], text[: text.rfind(",")] if "," in text else head),
            ("special_with_call", [ToolCall("some_api", {"x": 1})], text), ("special_call_only", [ToolCall("some_api", {"x": 1})], ""),
            ("special_other", [], "Due to the limitations of the function, I cannot solve this problem.")]  # fmt: skip


_KINDS = {"s": "string", "i": "integer", "n": "number", "fl": "float", "b": "boolean", "e": "enum", "any": "any",
          "ao": "array", "o": "object", "ls": "list(string)", "oa": "objectArray"}  # fmt: skip
_TYPED = {"a": {"type": "array", "items": {"type": "string"}}, "t": {"type": "tuple", "items": {"type": "integer"}},
          "nn": {"type": "array", "items": {"type": "array"}}}  # fmt: skip
_GT_VALUES = ["x", "", "true", "5", 5, 5.0, True, None, [], ["a b", "c"], [[1, 2]], {}, {"k": 5}, {"k": ["a b"]}, [{"k": 5}]]
_LITERALS = ["'x'", "'X-tra'", "''", "'true'", "5", "5.0", "15", "True", "None", "[]", "['a b', 'c']", "['A B', 'c']",
             "('a b', 'c')", "{}", "{'k': 5}", "{'k': 15}", "{'k': ['a b']}", "{'k': 'true'}", "[{'k': 5}]", "[[1, 2]]",
             "true", "-5", "+5", "2*3", "x[0]"]  # fmt: skip
_EXTRA_DOCS = [
    {"name": "f_2", "parameters": {"type": "object", "properties": {"s": {"type": "string"}}, "required": []}},  # N1
    {"name": "get", "parameters": {"type": "object", "properties": {"s": {"type": "string"}}, "required": []}},  # N2
    {"name": "get_weather", "parameters": {"type": "object", "properties": {"s": {"type": "string"}}, "required": []}},
    {"name": "noreq", "parameters": {"type": "object", "properties": {"s": {"type": "string"}}}},  # N12
    {"name": "odd", "parameters": {"type": "object", "properties": {"s": {"type": "null"}}, "required": []}},  # N12
    {"name": "bare", "parameters": {}},  # N4
    {"name": "noprops", "parameters": {"type": "object", "properties": {}, "required": []}},  # N4
]
_CALL_CASES = [  # (ground truth, output)
    ({"f_2": {"s": "a"}}, "[f_2(s='a')]"), ({"f_2": {"s": "a"}}, "[f(s='a')]"), ({"get_weather": {"s": "a"}}, "[get_weather(s='a')]"),
    ({"get": {"s": "a"}}, "[get(s='a')]"), ({"noreq": {"s": "a"}}, "[noreq(s='a')]"), ({"odd": {"s": "a"}}, "[odd(s='a')]"),
    ({"bare": {}}, "[bare()]"), ({"bare": {}}, "[bare(s=1)]"), ({"noprops": {}}, "[noprops()]"), ({"noprops": {}}, "[noprops(s=1)]"),
    ({"f": {"s": "a"}}, "[f()]"), ({"f": {"s": "a"}}, "[f('a')]"), ({"f": {"s": "a"}}, "[f(s='a', **k)]"),
    ({"f_1": {"s": "a"}, "f_2": {"s": "ab"}}, "[f(s='ab'), f(s='zz')]"), ({"f": {"s": "a"}}, "{f(s='a')}"),
    ({"f": {"s": "a"}}, "(f(s='a'),)"), ({"f": {"s": "a"}}, "f(s='a')"), ({"f": {"s": "a"}}, "[f(s=lambda: 1)]"),
    ({"f": {"s": "a"}}, "[f(s={**k})]"), ({"f": {"s": "a"}}, "[m.f(s='a')]"), ({"f": {"s": "a"}}, "[f(s='a', s='b')]"),
    ({"f": {"s": "a"}}, "[f(s='a')] and [g()]"), ({"f": {"s": "a"}}, "] [f(s='a')]"), ({"f": {"s": "a"}}, "[f(s='a'),]"),
]  # fmt: skip


def synthetic_cases() -> list[tuple[str, dict, dict, str]]:
    """Hand-built docs that reach the checker's corners: every doc type against many ground truths and values."""
    props = {**{p: {"type": t} for p, t in _KINDS.items()}, **_TYPED}
    docs = [{"name": "f", "parameters": {"type": "object", "properties": props, "required": ["s"]}}, *_EXTRA_DOCS]
    cases = []
    for category in ("normal_atom_list", "normal_multi_turn_user_adjust"):
        n = 0
        for param in props:
            for gt in _GT_VALUES:
                for literal in _LITERALS:
                    truth = {"f": {"s": "a", param: gt}} if param != "s" else {"f": {"s": gt}}
                    text = f"[f(s='a', {param}={literal})]" if param != "s" else f"[f(s={literal})]"
                    cases.append((category, {"id": f"synthetic_{n}_0", "question": "", "function": docs}, {"ground_truth": truth}, text))
                    n += 1
        for truth, text in _CALL_CASES:
            cases.append((category, {"id": f"synthetic_{n}_0", "question": "", "function": docs}, {"ground_truth": truth}, text))
            n += 1
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("snapshot")
    parser.add_argument("--data", default=os.environ.get("ENVSCHED_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data")))
    parser.add_argument("--rules", default="official", choices=("official", "training"))
    parser.add_argument("--show", type=int, default=3, help="disagreements printed per (category, variant)")
    parser.add_argument("--by-variant", action="store_true", help="also print pass rates per variant")
    args = parser.parse_args()
    upstream = upstream_judge(snapshot_dir(args.snapshot))
    totals, agree, kinds = Counter(), Counter(), defaultdict(list)
    per_variant: defaultdict[str, Counter] = defaultdict(Counter)
    for category in CATEGORIES:
        env = AceBenchEnvironment(category, args.data, rules=args.rules)
        for task in env.tasks():
            record, truth = task.ground_truth["record"], task.ground_truth["truth"]
            answer = {"id": record["id"], "ground_truth": truth}
            calls, text = ground_truth_answer(category, record, truth)
            outputs: list[tuple[str, list[ToolCall], str]] = []
            if category in NORMAL:
                for label, variant in call_variants(calls, record["function"]):
                    sent = parse_tool_calls("\n".join(render_tool_call(c) for c in variant)).calls  # through JSON
                    outputs.append((label, sent, ""))
                outputs += [(label, [], t) for label, t in text_variants(calls)]
            else:
                outputs = special_variants(text)
            for label, sent, answer_text in outputs:
                shown = official_text(sent, False) if sent and category in NORMAL else answer_text
                if sent and category not in NORMAL:
                    shown = f"{answer_text}\n{official_text(sent, False)}"
                theirs, detail = upstream(category, record, answer, shown)
                episode = env.reset(task)
                episode.step(sent)
                verdict = episode.verify(answer_text)
                totals[category] += 1
                per_variant[label].update(n=1, upstream=theirs, ours=verdict.reward == 1.0)
                if (verdict.reward == 1.0) == theirs:
                    agree[category] += 1
                else:
                    kinds[(category, label)].append((record["id"], theirs, verdict.reason, detail, shown))
    for category, record, answer, text in synthetic_cases():
        answer = {"id": record["id"], **answer}
        theirs, detail = upstream(category, record, answer, text)
        verdict = judge(category, record, answer["ground_truth"], [], text, args.rules)
        key = f"synthetic ({category})"
        totals[key] += 1
        per_variant[key].update(n=1, upstream=theirs, ours=verdict.reward == 1.0)
        if (verdict.reward == 1.0) == theirs:
            agree[key] += 1
        else:
            kinds[(key, "synthetic")].append((record["id"], theirs, verdict.reason, detail, text))
    print(f"rules={args.rules}: agreement with upstream per category")
    for category in totals:
        print(f"  {category:40s} {agree[category]:6d} / {totals[category]:6d}  ({100 * agree[category] / totals[category]:.2f}%)")
    total, agreed = sum(totals.values()), sum(agree.values())
    print(f"  {'all':40s} {agreed:6d} / {total:6d}  ({100 * agreed / total:.2f}%)")
    if args.by_variant:
        print("\nvariant: outputs, passed upstream, passed ours")
        for label, counts in sorted(per_variant.items()):
            print(f"  {label:28s} {counts['n']:6d} {counts['upstream']:6d} {counts['ours']:6d}")
    for (category, label), cases in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        print(f"\n{category} / {label}: {len(cases)} disagreement(s)")
        for record_id, theirs, ours, detail, shown in cases[: args.show]:
            print(f"  {record_id}: upstream {'passes' if theirs else 'fails'} ({detail[:160]}); ours: {ours[:160]}")
            print(f"    output: {shown[:200]}")


if __name__ == "__main__":
    main()
