"""Our BFCL single-turn verdict (`rules="official"`) against the official bfcl-eval code, output by output.

Run by scripts/bfcl_check.sh in its own environment (bfcl-eval pins numpy 1.26.4 and a dozen SDKs).
For every record of the 13 single-turn categories (11 Python, Java, JavaScript) this builds raw
Qwen3-style model texts:
the ground truth rendered as `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>` blocks,
other allowed answers, and systematic perturbations of layout (newlines, arguments as a string or
missing, non-object bodies, bad JSON, thinking), names (dotted vs underscored), values (types, int vs
float, wrong values, `[]` for optional arrays, standardised strings), parameters (missing optional /
required, extra) and calls (order, count, another function), plus no-call and call texts for the
(ir)relevance categories. In Java and JavaScript, where every argument is a source string, values are
also written in other syntaxes of either language (quoting, suffixes, collection forms, JSON, the bare
Python value). Each text is scored by the official pipeline as `Qwen/Qwen3-8B-FC` runs it
(`QwenFCHandler._parse_query_response_prompting` keeps the text after `</think>`, then
`eval_runner._evaluate_single_ast_entry` / `_evaluate_single_relevance_entry`: decode_ast, format
check, ast_checker, with the `Language` eval_runner picks for the category) and by
`envsched_lightning.envs.bfcl.single_turn.check_bfcl`. The verdicts must agree, and our decoder must return what
the official `decode_ast` returns. Our Java/JavaScript value conversion is also compared with
upstream's type converters directly, on generated source strings.

`pytest -s` prints agreement per category and any residual disagreement by task id, with both reasons.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from bfcl_eval.constants.enums import Language, ReturnFormat
from bfcl_eval.eval_checker import eval_runner
from bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter import java_type_converter
from bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter import js_type_converter
from bfcl_eval.utils import add_language_specific_hint_to_function_doc, is_java, is_js

from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.bfcl.single_turn import CATEGORIES, BfclEnvironment, check_bfcl, ground_truth_calls
from envsched_lightning.envs.bfcl.checker import decode_qwen_fc
from envsched_lightning.envs.bfcl.languages import COLLECTION_TYPES, SOURCE_TYPES, from_source, hinted_docs, to_source

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("ENVSCHED_DATA") or ROOT.parent / "shared" / "data")
MODEL = "Qwen/Qwen3-8B-FC"
MODEL_DIR_NAME = MODEL.replace("/", "_")  # as the runner passes it; ast_checker maps "_" back to "/"

# Disagreements we accept, by (task id, variant) -> reason. Empty: every output agrees.
KNOWN_RESIDUALS: dict[tuple[str, str], str] = {}


# ---------------------------------------------------------------- texts
def _block(obj: Any, newlines: bool = True) -> str:
    body = json.dumps(obj, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>" if newlines else f"<tool_call>{body}</tool_call>"


def _text(calls: list[tuple[Any, Any]], newlines: bool = True) -> str:
    return "\n".join(_block({"name": n, "arguments": a}, newlines) for n, a in calls)


def _pairs(calls: list[ToolCall]) -> list[tuple[Any, dict[str, Any]]]:
    return [(c.name, copy.deepcopy(dict(c.arguments))) for c in calls]


def _fill(value: Any, rng: random.Random) -> Any:
    """An allowed dict is a template {key: [allowed values]}: pick one value per key ("" omits it)."""
    if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        out = {}
        for k, allowed in value.items():
            pick = rng.choice(allowed) if allowed else ""
            if pick != "":
                out[k] = pick
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_fill(v, rng) for v in value]
    return value


def _random_answer(question: dict, answer: dict, rng: random.Random, language: str) -> list[tuple[Any, dict[str, Any]]]:
    """Another answer from the allowed lists: a random allowed value per parameter ("" omits it),
    written as source in Java/JavaScript."""
    docs = {d["name"]: d for d in question["function"]}
    calls = []
    for expected in answer["ground_truth"]:
        (name, params), = expected.items()
        doc = docs.get(name, question["function"][0])
        args = {}
        for param, allowed in params.items():
            pick = rng.choice(allowed) if allowed else ""
            if pick != "":
                value = _fill(pick, rng)
                schema = doc["parameters"]["properties"].get(param, {})
                args[param] = value if language == "python" else to_source(language, schema, value)
        calls.append((doc["name"], args))
    return calls


def _mutations(value: Any, rng: random.Random) -> Iterator[tuple[str, Any]]:
    """Typed perturbations of one argument value."""
    if isinstance(value, bool):
        yield "bool_flipped", not value
        yield "bool_as_int", int(value)
        yield "bool_as_string", str(value).lower()
    elif isinstance(value, int):
        yield "int_as_float", float(value)
        yield "int_as_string", str(value)
        yield "int_wrong", value + 1
    elif isinstance(value, float):
        yield "float_as_int", int(value)
        yield "float_as_string", str(value)
        yield "float_wrong", value + 0.5
    elif isinstance(value, str):
        yield "string_restyled", value.upper().replace(" ", "_") + "."
        yield "string_wrong", value + " zq"
        yield "string_as_list", [value]
        if value.strip().lstrip("-").isdigit():
            yield "string_as_int", int(value)
    elif isinstance(value, list):
        yield "list_empty", []
        yield "list_reversed", value[::-1]
        yield "list_extra_item", [*value, value[0] if value else "zq"]
        yield "list_items_as_float", [float(v) if type(v) is int else v for v in value]
        yield "list_items_as_int", [int(v) if type(v) is float else v for v in value]
        yield "list_as_string", json.dumps(value)
    elif isinstance(value, dict):
        if value:
            yield "dict_key_dropped", dict(list(value.items())[1:])
            key = next(iter(value))
            yield "dict_value_restyled", {**value, key: value[key].upper() if isinstance(value[key], str) else value[key]}
        yield "dict_extra_key", {**value, "zq": 1}
        yield "dict_empty", {}
    yield "null", None


def _source_variants(src: str, value: Any) -> Iterator[tuple[str, Any]]:
    """The expected `value` (Python) and its source `src` written other ways, in either language."""
    yield "src_python_value", value  # not a string: a type error in Java/JavaScript
    yield "src_json", json.dumps(value)
    yield "src_double_quoted", f'"{src}"'
    yield "src_single_quoted", f"'{src}'"
    if len(src) >= 2 and src[0] == src[-1] and src[0] in "'\"":
        yield "src_unquoted", src[1:-1]
    yield "src_padded", f" {src} "
    yield "src_newline", src + "\n"
    yield "src_capitalised", src.capitalize()
    for suffix in ("L", "f", "n", ".0", "d"):
        yield f"src_suffix_{suffix}", src + suffix
    if src[-1:] in ("L", "l", "f", "F", "n"):
        yield "src_suffix_dropped", src[:-1]
    if re.fullmatch(r"-?\d+\.\d+", src):
        yield "src_exponent", f"{float(src):e}"
        yield "src_exponent_f", f"{float(src):e}f"
    if isinstance(value, list):
        quoted = [json.dumps(v) for v in value]
        bare = [str(v).lower() if isinstance(v, bool) else str(v) for v in value]
        for style, parts in (("quoted", quoted), ("bare", bare), ("single", [f"'{b}'" for b in bare])):
            joined = ", ".join(parts)
            yield f"src_aslist_{style}", f"new ArrayList<>(Arrays.asList({joined}))"
            yield f"src_add_{style}", "new ArrayList<String>() {{ " + " ".join(f"add({x});" for x in parts) + " }}"
            yield f"src_java_array_{style}", f"new String[]{{{joined}}}"
            yield f"src_js_array_{style}", f"[{joined}]"
            yield f"src_new_array_{style}", f"new Array({joined})"
            yield f"src_2d_{style}", f"[[{joined}], [{joined}]]"
            yield f"src_list_of_{style}", f"List.of({joined})"
        yield "src_no_spaces", "[" + ",".join(quoted) + "]"
        yield "src_empty_arraylist", "new ArrayList<>()"
        yield "src_empty_java_array", "new int[]{}"
        yield "src_empty_js_array", "[]"
    if isinstance(value, dict):
        puts = " ".join(f'put("{k}", {json.dumps(v)});' for k, v in value.items())
        bare_puts = " ".join(f'put("{k}", {v});' for k, v in value.items())
        yield "src_hashmap", f"new HashMap<String, Object>() {{{{ {puts} }}}}"
        yield "src_hashmap_single_brace", f"new HashMap<>() {{ {puts} }}"
        yield "src_hashmap_bare_values", f"new HashMap<String, String>() {{{{{bare_puts}}}}}"
        single_quoted = " ".join(f"put('{k}', {json.dumps(v)});" for k, v in value.items())
        yield "src_hashmap_single_quoted_keys", "new HashMap<>() {{ " + single_quoted + " }}"
        yield "src_map_of", "Map.of(" + ", ".join(f'"{k}", {json.dumps(v)}' for k, v in value.items()) + ")"
        yield "src_js_object_quoted", "{" + ", ".join(f"'{k}': '{v}'" for k, v in value.items()) + "}"
        yield "src_js_object_bare", "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
        yield "src_js_object_nested", "{outer: {" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in value.items()) + "}}"
        yield "src_empty_object", "{}"
        yield "src_empty_hashmap", "new HashMap<>()"


def _answered_cases(question: dict, answer: dict, rng: random.Random, language: str) -> Iterator[tuple[str, str]]:
    rid, docs = question["id"], question["function"]
    gold = _pairs(ground_truth_calls(question, answer, language))
    by_name = {d["name"]: d for d in docs}
    yield "canonical", _text(gold)
    yield "no_newlines", _text(gold, newlines=False)
    yield "no_leading_newline", _text(gold).replace("<tool_call>\n", "<tool_call>", 1)
    yield "spaces_around_body", _text(gold).replace("<tool_call>\n", "<tool_call>\n  ").replace("\n</tool_call>", "  \n</tool_call>")
    yield "prose_then_calls", "Sure, calling the function.\n" + _text(gold)
    yield "thinking_then_calls", "<think>\nThe user wants a call.\n</think>\n\n" + _text(gold)
    yield "calls_inside_thinking", "<think>\n" + _text(gold) + "\n</think>\n\nDone."
    yield "arguments_as_string", "\n".join(_block({"name": n, "arguments": json.dumps(a)}) for n, a in gold)
    yield "arguments_missing", "\n".join(_block({"name": n}) if i == 0 else _block({"name": n, "arguments": a}) for i, (n, a) in enumerate(gold))
    yield "arguments_null", _text([(gold[0][0], None), *gold[1:]])
    yield "arguments_list", _text([(gold[0][0], [gold[0][1]]), *gold[1:]])
    yield "name_missing", "\n".join(_block({"arguments": a}) for _, a in gold)
    yield "name_as_number", _text([(7, gold[0][1]), *gold[1:]])
    yield "name_as_list", _text([([gold[0][0]], gold[0][1]), *gold[1:]])
    yield "body_is_array", "<tool_call>\n" + json.dumps([{"name": n, "arguments": a} for n, a in gold]) + "\n</tool_call>"
    yield "body_is_string", "<tool_call>\n" + json.dumps(gold[0][0]) + "\n</tool_call>"
    yield "bad_json_block_first", "<tool_call>\n{\"name\": \"" + gold[0][0] + "\", \"arguments\": {,}}\n</tool_call>\n" + _text(gold)
    yield "bad_json_replaces_first", "<tool_call>\n{\"name\": \"" + gold[0][0] + "\", \"arguments\": {,}}\n</tool_call>\n" + _text(gold[1:])
    yield "empty_block", "<tool_call>\n\n</tool_call>\n" + _text(gold)
    yield "no_call", "I am not able to help with that."
    yield "duplicate_first", _text([gold[0], *gold])
    yield "dropped_last", _text(gold[:-1])
    yield "reversed", _text(gold[::-1])
    yield "other_allowed", _text(_random_answer(question, answer, rng, language))
    yield "other_allowed_2", _text(_random_answer(question, answer, rng, language))
    if any("." in n for n, _ in gold):
        yield "underscored_names", _text([(n.replace(".", "_"), a) for n, a in gold])
    if any("_" in n for n, _ in gold):
        yield "dotted_names", _text([(n.replace("_", ".", 1), a) for n, a in gold])
    others = [d["name"] for d in docs if d["name"] not in {n for n, _ in gold}]
    if others:
        yield "other_function", _text([(rng.choice(others), gold[0][1]), *gold[1:]])
    # parameter-level variants, on a random call of the answer
    idx = rng.randrange(len(gold))
    name, args = gold[idx]
    doc = by_name.get(name, docs[0])
    props, required = doc["parameters"]["properties"], doc["parameters"]["required"]
    expected = next(iter(answer["ground_truth"][idx].values()))

    def with_args(new_args: dict[str, Any]) -> str:
        return _text([*gold[:idx], (name, new_args), *gold[idx + 1:]])

    yield "extra_param_unknown", with_args({**args, "zq_extra": 1})
    extra_doc = [p for p in props if p not in args]
    if extra_doc:
        p = rng.choice(extra_doc)
        yield "extra_param_from_doc", with_args({**args, p: "zq"})
        if p in expected and expected[p]:
            yield "omitted_param_given", with_args({**args, p: _fill(next((a for a in expected[p] if a != ""), ""), rng)})
    for p in args:
        yield f"drop_{'required' if p in required else 'optional'}", with_args({k: v for k, v in args.items() if k != p})
    for p, allowed in expected.items():
        kind = props.get(p, {}).get("type")
        if kind in ("array", "tuple") and p not in required:
            yield "empty_list_for_optional", with_args({**args, p: []})
        if kind == "dict" and p not in required:
            yield "empty_dict_for_optional", with_args({**args, p: {}})
        if "" in allowed and p in args:
            yield "empty_string_for_optional", with_args({**args, p: ""})
    for p in rng.sample(sorted(args), min(3, len(args))):
        for kind, value in _mutations(args[p], rng):
            yield f"value_{kind}", with_args({**args, p: value})
    if language != "python":
        python_args = _pairs(ground_truth_calls(question, answer, "python"))[idx][1]
        for p in sorted(args):
            for kind, value in _source_variants(args[p], python_args[p]):
                yield f"value_{kind}", with_args({**args, p: value})


def _dummy(schema: dict[str, Any], rng: random.Random) -> Any:
    kind = schema.get("type")
    if "enum" in schema and schema["enum"]:
        return rng.choice(schema["enum"])
    return {"integer": 1, "float": 1.5, "boolean": True, "array": ["a"], "tuple": ["a"], "dict": {"k": "v"}}.get(kind, "x")


def _no_answer_cases(question: dict, rng: random.Random) -> Iterator[tuple[str, str]]:
    doc = rng.choice(question["function"]) if question["function"] else {"name": "f", "parameters": {"properties": {}, "required": []}}
    props = doc["parameters"].get("properties", {})
    args = {p: _dummy(props[p], rng) for p in doc["parameters"].get("required", []) if p in props}
    call = [(doc["name"], args)]
    yield "no_call", "I cannot answer that with the tools I have."
    yield "empty", ""
    yield "call", _text(call)
    yield "call_no_newlines", _text(call, newlines=False)
    yield "call_arguments_as_string", _block({"name": doc["name"], "arguments": json.dumps(args)})
    yield "call_arguments_missing", _block({"name": doc["name"]})
    yield "call_empty_arguments", _text([(doc["name"], {})])
    yield "call_unknown_name", _text([("zq_unknown", {})])
    yield "two_calls", _text(call * 2)
    yield "bad_json", "<tool_call>\n{\"name\": \"" + doc["name"] + "\", \"arguments\": {,}}\n</tool_call>"
    yield "body_is_array", "<tool_call>\n[]\n</tool_call>"
    yield "empty_block", "<tool_call>\n\n</tool_call>"
    yield "call_inside_thinking", "<think>\n" + _text(call) + "\n</think>\n\nNo function fits."
    yield "thinking_then_call", "<think>\nhmm\n</think>\n\n" + _text(call)
    yield "unclosed_think_then_call", "<think>\nhmm\n" + _text(call)


# ---------------------------------------------------------------- scoring
class Official:
    """The official pipeline for one raw text, as bfcl-eval runs Qwen/Qwen3-8B-FC."""

    def __init__(self) -> None:
        self.handler = eval_runner.get_handler(MODEL)

    def stored(self, raw: str) -> str:
        response = SimpleNamespace(choices=[SimpleNamespace(text=raw)], usage=SimpleNamespace(prompt_tokens=0, completion_tokens=0))
        return self.handler._parse_query_response_prompting(response)["model_responses"]

    def decode(self, stored: str) -> list | None:
        try:
            return self.handler.decode_ast(stored, ReturnFormat.PYTHON, False)
        except Exception:  # noqa: BLE001 - a failed decode is a verdict input, not an error
            return None

    def verdict(self, question: dict, answer: dict | None, category: str, stored: str) -> tuple[bool, str]:
        if answer is None:
            out = eval_runner._evaluate_single_relevance_entry(self.handler, question["id"], stored, question, MODEL_DIR_NAME, category)
        else:
            # the language and return format eval_runner.ast_file_runner picks for the category
            language, return_format = ((Language.JAVA, ReturnFormat.JAVA) if is_java(category)
                                       else (Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT) if is_js(category)
                                       else (Language.PYTHON, ReturnFormat.PYTHON))  # fmt: skip
            out = eval_runner._evaluate_single_ast_entry(
                self.handler, question["id"], stored, answer["ground_truth"], question, MODEL_DIR_NAME,
                category, language, return_format,
            )  # fmt: skip
        return bool(out["valid"]), out.get("error_type", "ok")


@pytest.fixture(scope="module")
def official() -> Official:
    return Official()


def test_single_turn_agreement(official: Official, data_root: tuple[Path, str]) -> None:
    root, version = data_root
    rng = random.Random(0)
    per_category: dict[str, Counter] = defaultdict(Counter)
    per_variant: Counter = Counter()
    residual: list[str] = []
    decode_mismatch: list[str] = []
    unexpected: dict[tuple[str, str], str] = {}
    for category in CATEGORIES:
        env = BfclEnvironment(category, root, version=version)
        upstream_category = env.file_stem.split("_", 2)[2]  # v4 calls `simple` simple_python
        for question, answer in env.records:
            cases = _answered_cases(question, answer, rng, env.language) if answer else _no_answer_cases(question, rng)
            for variant, raw in cases:
                stored = official.stored(raw)
                decoded = official.decode(stored)
                ours_decoded = decode_qwen_fc(raw)
                ours_as_official = None if ours_decoded.failure else [{c.name: dict(c.arguments)} for c in ours_decoded.calls]
                if ours_as_official != decoded:
                    decode_mismatch.append(f"{question['id']} [{variant}]: official {decoded!r:.120} ours {ours_as_official!r:.120}")
                try:
                    ok, error_type = official.verdict(question, answer, upstream_category, stored)
                except Exception as exc:  # noqa: BLE001 - upstream would stop the whole evaluation here
                    ok, error_type = None, f"raises {type(exc).__name__}"
                reward, reason = check_bfcl(question, answer, raw, language=env.language)
                stats = per_category[category]
                stats["outputs"] += 1
                stats["official_pass"] += ok is True
                stats["official_raises"] += ok is None
                agree = reason.startswith("official_checker_raises") if ok is None else (reward == 1.0) == ok
                if agree:
                    stats["agree"] += 1
                    stats["same_error_type"] += ok is not False or reason.startswith(error_type)
                    continue
                key = (question["id"], variant)
                line = f"{question['id']} [{variant}]: official {'pass' if ok else error_type}, ours {reward} ({reason[:160]})"
                per_variant[variant] += 1
                if key in KNOWN_RESIDUALS:
                    residual.append(f"{line} -- known: {KNOWN_RESIDUALS[key]}")
                else:
                    unexpected[key] = line
    total = Counter()
    print(f"\nBFCL {version}")
    print(f"{'category':<24}{'outputs':>9}{'agree':>9}{'agree %':>9}{'official pass':>15}{'raises':>8}{'same error type':>17}")
    for category in CATEGORIES:
        s = per_category[category]
        total.update(s)
        print(f"{category:<24}{s['outputs']:>9}{s['agree']:>9}{100 * s['agree'] / s['outputs']:>8.2f}%{s['official_pass']:>15}"
              f"{s['official_raises']:>8}{s['same_error_type']:>17}")  # fmt: skip
    print(f"{'all':<24}{total['outputs']:>9}{total['agree']:>9}{100 * total['agree'] / total['outputs']:>8.2f}%"
          f"{total['official_pass']:>15}{total['official_raises']:>8}{total['same_error_type']:>17}")  # fmt: skip
    for line in residual + list(unexpected.values())[:60]:
        print("DISAGREE", line)
    if per_variant:
        print("disagreements by variant:", dict(per_variant.most_common()))
    for line in decode_mismatch[:20]:
        print("DECODE", line)
    assert total["outputs"] > 50_000
    assert not decode_mismatch, f"{len(decode_mismatch)} decode mismatches, e.g. {decode_mismatch[:3]}"
    assert not unexpected, f"{len(unexpected)} unexplained disagreements, e.g. {list(unexpected.values())[:5]}"


def test_java_and_javascript_docs_are_shown_as_upstream_shows_them(data_root: tuple[Path, str]) -> None:
    """The hinted docs of every Java/JavaScript task are what upstream's inference loads
    (`load_dataset_entry` -> `add_language_specific_hint_to_function_doc`)."""
    root, version = data_root
    for category in ("java", "javascript"):
        env = BfclEnvironment(category, root, version=version)
        for question, _ in env.records:
            (theirs,) = add_language_specific_hint_to_function_doc([copy.deepcopy(question)])
            assert hinted_docs(question["function"], env.language) == theirs["function"], question["id"]


# ---------------------------------------------------------------- shapes the data does not have
def _doc(name: str, **props: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "description": "", "parameters": {"type": "dict", "properties": props, "required": []}}


SYNTHETIC: list[tuple[str, list[dict], list[dict], list[Any]]] = [
    # (id, docs, ground truth, model argument dicts for the first expected function)
    ("simple_9001", [_doc("f", xs={"type": "array", "items": {"type": "string"}})],
     [{"f": {"xs": [["a", "b"], "ab", ""]}}], [{"xs": ["a", "b"]}, {"xs": ["A", "B"]}, {"xs": []}, {"xs": ["ab"]}]),
    ("simple_9002", [_doc("f", xs={"type": "array", "items": {"type": "integer"}})],
     [{"f": {"xs": [[1, 2], 5]}}], [{"xs": [1, 2]}, {"xs": [2, 1]}, {"xs": 5}]),  # 5 as an option: len() raises
    ("simple_9003", [_doc("f", d={"type": "dict", "properties": {}})],
     [{"f": {"d": [{"k": ["v"]}, "name_var"]}}], [{"d": {"k": "v"}}, {"d": {"k": "x"}}, {"d": "name_var"}]),
    ("simple_9004", [_doc("f", ds={"type": "array", "items": {"type": "dict"}})],
     [{"f": {"ds": [[{"a": [1]}], ""]}}], [{"ds": [{"a": 1}]}, {"ds": ["x"]}, {"ds": []}, {}, {"ds": [{"a": 2}]}]),
    ("simple_9005", [_doc("f", ys={"type": "array", "items": {"type": "float"}})],
     [{"f": {"ys": [[1.0, 2.0]]}}], [{"ys": [1, 2]}, {"ys": [1.0, 2.0]}, {"ys": [1.0, 2]}]),
    ("simple_9006", [_doc("f", ys={"type": "array", "items": {"type": "float"}})],
     [{"f": {"ys": [[1.0, 2.0], ""]}}], [{"ys": [1, 2]}, {"ys": [1.0, 2.0]}, {"ys": []}, {}]),
    ("simple_9007", [_doc("f", v={"type": "any"}, n={"type": "integer"})],
     [{"f": {"v": [True], "n": [1, ""]}}], [{"v": True}, {"v": "True"}, {"v": True, "n": True}, {"v": True, "n": 1.0}]),
    ("multiple_9008", [_doc("f", a={"type": "string"}), _doc("g", a={"type": "string"})],
     [{"h": {"a": ["x"]}}], [{"a": "x"}]),  # the expected function is not offered: upstream raises
    ("parallel_9009", [_doc("f", a={"type": "string"})],
     [{"f": {"a": ["x", "y"]}}, {"f": {"a": ["x"]}}], [{"a": "x"}, {"a": "y"}]),
    ("simple_9010", [_doc("f", t={"type": "tuple", "items": {"type": "integer"}}, b={"type": "boolean"})],
     [{"f": {"t": [[1, 2]], "b": [False, ""]}}], [{"t": [1, 2], "b": 0}, {"t": [1, 2], "b": False}, {"t": [1.0, 2]}]),
    # Java and JavaScript: types and shapes the data lacks, and types upstream cannot convert
    ("java_9011", [_doc("f", x={"type": "float"}, b={"type": "byte"}, c={"type": "char"})],
     [{"f": {"x": [1.5], "b": [7, ""], "c": ["a", ""]}}],
     [{"x": "1.5f"}, {"x": "1.5"}, {"x": "15e-1F"}, {"x": "1.5f", "b": "7"}, {"x": "1.5f", "b": "7L"}, {"x": "1.5f", "c": "'a'"},
      {"x": "1.5f", "c": "a"}, {"x": 1.5}, {"x": "1" * 5000}]),
    ("java_9012", [_doc("f", s={"type": "Set", "items": {"type": "String"}}, q={"type": "Queue"}, o={"type": "Object"})],
     [{"f": {"s": [["a"], ""], "q": [["a"], ""], "o": ["x", ""]}}], [{"s": "new HashSet<>()"}, {"q": "x"}, {"o": "x"}, {}]),
    ("java_9013", [_doc("f", xs={"type": "ArrayList", "items": {"type": "HashMap"}}, m={"type": "HashMap"})],
     [{"f": {"xs": [[{"a": [1]}], ""], "m": [{"k": [True], "j": [2.5, ""]}, ""]}}],
     [{"xs": 'new ArrayList<>(Arrays.asList(new HashMap<>() {{ put("a", 1); }}))'}, {"m": 'new HashMap<>() {{ put("k", true); }}'},
      {"m": 'new HashMap<>() {{ put("k", true); put("j", 2.5f); }}'}, {"m": "new HashMap<>()"}, {"xs": "new ArrayList<>()"}]),
    ("javascript_9014", [_doc("f", n={"type": "Bigint"}, ok={"type": "Boolean"}, d={"type": "dict"})],
     [{"f": {"n": [12, ""], "ok": [True, ""], "d": [{"a": [[1, 2]], "b": [{"c": [1]}]}, ""]}}],
     [{"n": "12n"}, {"n": "12"}, {"n": "1" * 5000 + "n"}, {"ok": "true"}, {"ok": "True"}, {"d": "{a: [1, 2], b: {c: 1}}"},
      {"d": "{a: [1, 2]}"}, {"d": "{}"}, {"d": "{'a': '[1, 2]'}"}]),
    ("javascript_9015", [_doc("f", xs={"type": "array", "items": {"type": "dict"}}, ys={"type": "array", "items": {"type": "array"}})],
     [{"f": {"xs": [[{"a": [1]}], ""], "ys": [[[1, 2]], ""]}}],
     [{"xs": "[{a: 1}]"}, {"xs": "[{a: 2}]"}, {"xs": "[]"}, {"ys": "[[1, 2]]"}, {"ys": "[[1, 2], [3]]"}, {"ys": "['1, 2']"},
      {"xs": "new Array({a: 1})"}, {"ys": "[1, 2"}]),
    ("javascript_9016", [_doc("f", w={"type": "Weird"}, s={"type": "String"})],
     [{"f": {"w": ["x", ""], "s": ["it's", ""]}}], [{"w": "x"}, {"s": "\"it's\""}, {"s": "'it's'"}, {"s": "it\"s"}, {"s": "'"}]),
]  # fmt: skip


@pytest.mark.parametrize("rid, docs, truth, outputs", SYNTHETIC, ids=[s[0] for s in SYNTHETIC])
def test_synthetic_records_agree(official: Official, rid: str, docs: list, truth: list, outputs: list) -> None:
    question, answer = {"id": rid, "question": [[]], "function": docs}, {"id": rid, "ground_truth": truth}
    category = rid.rsplit("_", 1)[0]
    name = next(iter(truth[0]))
    texts = [_text([(name, args)]) for args in outputs]
    if "parallel" in rid:
        texts += [_text([(name, outputs[0]), (name, outputs[1])]), _text([(name, outputs[1]), (name, outputs[0])])]
    for raw in texts:
        try:
            ok, error_type = official.verdict(question, answer, category, official.stored(raw))
        except Exception as exc:  # noqa: BLE001
            ok, error_type = None, f"raises {type(exc).__name__}"
        reward, reason = check_bfcl(question, answer, raw)
        if ok is None:
            assert reason.startswith("official_checker_raises"), (raw, error_type, reason)
        else:
            assert (reward == 1.0) == ok, (raw, error_type, reason)


# ---------------------------------------------------------------- the type converters themselves
_SCALARS = ["1", "-2", "3.5", "-0.25", "1e3", "2E-2", "1.5f", "3F", "7L", "-8l", "12n", "true", "false", "True", '"s"',
            "'c'", '"a, b"', "x", "a b", "", "null", "\u0663", "1_0", "nan", "0x1F", "'it''s'", '""', "'"]  # fmt: skip
_SEPARATORS = [",", ", ", " , ", ",,", ";", "\n,"]
_MAP_KEYS = ['"k1"', '"k2"', '"k"', "k", "'k'"]


def _elements(rng: random.Random) -> str:
    return rng.choice(_SEPARATORS).join(rng.choice(_SCALARS) for _ in range(rng.randint(0, 4)))


def _structured(rng: random.Random) -> str:
    """A Java or JavaScript value, mostly well-formed."""
    els, key = _elements(rng), rng.choice(['"k"', "'k'", "k", '"a:b"', ""])
    forms = [
        lambda: rng.choice(_SCALARS),
        lambda: f"new {rng.choice(['String', 'int', 'long', 'Object', 'char'])}[]{rng.choice(['', ' '])}{{{els}}}",
        lambda: f"new ArrayList<{rng.choice(['', 'String', 'Long'])}>(Arrays.asList({els}))",
        lambda: f"new ArrayList<>(){rng.choice(['', ' ', chr(10)])}{{{{ "
                + " ".join(f"add({rng.choice(_SCALARS)});" for _ in range(rng.randint(0, 3))) + " }}",
        lambda: f"new HashMap<{rng.choice(['', 'String, Object'])}>() {rng.choice(['{{', '{', '{ {'])} "
                + " ".join(f"put({rng.choice(_MAP_KEYS)}, {rng.choice(_SCALARS)});" for _ in range(rng.randint(0, 3)))
                + f" {rng.choice(['}}', '}', '} }'])}",
        lambda: f"[{els}]",
        lambda: f"new Array({els})",
        lambda: f"[[{els}], [{_elements(rng)}]]",
        lambda: f"[[{els}]",
        lambda: "{" + ", ".join(f"{rng.choice([key, 'a', 'b'])}: {rng.choice([*_SCALARS, f'[{els}]', '{c: 1}'])}"
                                for _ in range(rng.randint(0, 3))) + "}",
    ]  # fmt: skip
    return rng.choice(forms)()


def _source_strings(rng: random.Random, n: int) -> Iterator[str]:
    """Structured values, some damaged: a character dropped or doubled, text around them."""
    for _ in range(n):
        text = _structured(rng)
        roll = rng.random()
        if roll < 0.15 and text:
            i = rng.randrange(len(text))
            text = text[:i] + text[i + 1:]
        elif roll < 0.3 and text:
            i = rng.randrange(len(text))
            text = text[:i] + text[i] + text[i:]
        elif roll < 0.4:
            text = rng.choice(["x = ", " ", "(", "\n"]) + text + rng.choice(["", ";", " ", ")", "\n"])
        yield text


def _outcome(convert, *args) -> str:
    """What a converter returns, typed (`repr` tells 1 from 1.0 and True), or that it raised."""
    try:
        return repr(convert(*args))
    except Exception:  # noqa: BLE001 - both must raise on the same input
        return "raises"


def test_source_conversion_agrees_with_the_official_converters(capsys) -> None:
    """`from_source` against `java_type_converter` / `js_type_converter`, called as ast_checker calls
    them, on every doc type (and two item types) each language knows, over generated source strings."""
    rng = random.Random(1)
    official = {"java": java_type_converter, "javascript": js_type_converter}
    compared, typed, differences = 0, 0, []
    for text in _source_strings(rng, 3000):
        for language, types in SOURCE_TYPES.items():
            for doc_type in sorted(types):
                collection = doc_type in COLLECTION_TYPES
                items = [rng.choice(sorted(types)), rng.choice(["String", "integer", "float"])] if collection else [None]
                for item in items:
                    args = (text, doc_type, item) if item else (text, doc_type)
                    theirs, ours = _outcome(official[language], *args), _outcome(from_source, language, text, doc_type, item)
                    compared += 1
                    typed += theirs not in ("raises", repr(text))
                    if theirs != ours:
                        differences.append(f"{language} {doc_type}[{item}] {text!r}: official {theirs}, ours {ours}")
    with capsys.disabled():
        print(f"\nsource conversion: {compared} conversions compared ({typed} not left as the text), {len(differences)} differences")
    assert compared > 50_000 and typed > 3_000
    assert not differences, differences[:10]
