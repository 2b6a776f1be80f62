"""Java and JavaScript argument values as the official BFCL checker reads them, and the docs the model sees.

In BFCL's `simple_java` and `simple_javascript` categories (v3: `java`, `javascript`) every argument
is a string of source code (`"new ArrayList<>(Arrays.asList(1L, 2L))"`, `"{a: 1}"`), which
bfcl-eval 2026.3.23's checker turns into a Python value with regular expressions
(`ast_eval/type_convertor/`) before its usual type and value rules. A reward must read the string
the same way, so `from_source` does, every quirk included (each marked QUIRK): a string that does
not fit the pattern of its type stays a string, and that string then fails the type check or is
compared as a "variable". The patterns below are upstream's, because they define the verdict;
`tests/bfcl/test_single_turn_agreement.py` compares the conversion with upstream's on generated strings.

`to_source` writes an expected value as a string that reads back as it (for ground-truth answers),
and `hinted_docs` rewrites the function docs as upstream's inference shows them to the model.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

LANGUAGES = ("python", "java", "javascript")

# Doc type -> the Python type of the converted value (upstream's JAVA_/JS_TYPE_CONVERSION).
SOURCE_TYPES: dict[str, dict[str, type]] = {
    "java": {
        "byte": int, "short": int, "integer": int, "float": float, "double": float, "long": int,
        "boolean": bool, "char": str, "Array": list, "ArrayList": list, "Set": set, "HashMap": dict,
        "Hashtable": dict, "Queue": list, "Stack": list, "String": str, "any": str,
    },
    "javascript": {
        "String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool,
        "dict": dict, "array": list, "any": str,
    },
}  # fmt: skip
# Doc types whose `items` type is looked up and used to convert the elements.
COLLECTION_TYPES = frozenset({"Array", "ArrayList", "array"})
# The official error type for an argument that is not a string.
TYPE_ERROR = {"java": "type_error:java", "javascript": "type_error:js"}


class UnsupportedType(Exception):
    """A doc type upstream's converter raises on (Set, Hashtable, Queue, Stack, or unknown)."""


def language_of(name: str) -> str:
    """The language of a category name or record id, read as upstream reads it (`is_js` before `is_java`)."""
    return "javascript" if "javascript" in name else "java" if "java" in name else "python"


def from_source(language: str, text: str, doc_type: str, item_type: str | None = None) -> Any:
    """The Python value upstream's converter makes of `text` for a parameter of `doc_type`."""
    if language == "java":
        return _java(text, doc_type, item_type)
    if language == "javascript":
        return _js(text, doc_type, item_type)
    raise ValueError(f"no source conversion for language {language!r}")


# ---------------------------------------------------------------- Java
_DIGITS = r"^-?\d+$"
_JAVA_FLOAT = r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$"
_JAVA_DOUBLE = r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$"
_JAVA_LONG = r"^-?\d+[lL]$"


def _java(text: str, doc_type: str, item_type: str | None = None) -> Any:
    """QUIRK: `float` needs the `f` suffix and `long` the `L`; `String` keeps its quotes; the `char`
    pattern can never match, so a char is the text as written."""
    if doc_type not in SOURCE_TYPES["java"] or doc_type in ("Set", "Hashtable", "Queue", "Stack"):
        raise UnsupportedType(f"upstream cannot convert Java type {doc_type!r}")
    if doc_type in ("byte", "short", "integer"):
        return int(text) if re.match(_DIGITS, text) else text
    if doc_type == "float":
        return float(re.sub(r"[fF]$", "", text)) if re.match(_JAVA_FLOAT, text) else text
    if doc_type == "double":
        return float(text) if re.match(_JAVA_DOUBLE, text) else text
    if doc_type == "long":
        return int(re.sub(r"[lL]$", "", text)) if re.match(_JAVA_LONG, text) else text
    if doc_type == "boolean":
        return text == "true" if text in ("true", "false") else text
    if doc_type == "Array":
        return _java_array(text, item_type)
    if doc_type == "ArrayList":
        return _java_array_list(text, item_type)
    if doc_type == "HashMap":
        return _java_hash_map(text)
    return text  # String, any, char


def _java_array(text: str, item_type: str | None) -> Any:
    """`new T[]{a, b}` anywhere in the text. QUIRK: elements go through the item type's converter,
    so `new String[]{"a"}` holds `"a"` with its quotes; empty elements are skipped."""
    match = re.search(r"new\s+\w+\[\]\s*\{(.*?)\}", text)
    if not match:
        return text
    parts = [p.strip() for p in match.group(1).split(",") if p.strip()]
    return [_java(p, item_type) if item_type else _java_literal(p) for p in parts]


def _java_array_list(text: str, item_type: str | None) -> Any:
    """`new ArrayList<T>(Arrays.asList(a, b))`, `new ArrayList<T>() {{ add(a); }}` or an empty one.
    QUIRK: here String and char elements lose their first and last character (the quotes)."""
    if match := re.search(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)", text):
        parts = match.group(1).split(",")
    elif match := re.search(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", text, re.DOTALL):
        parts = re.findall(r"add\((.+?)\)", match.group(1))
    else:
        return [] if re.search(r"new\s+ArrayList<\w*>\(\)", text) else text
    out = []
    for part in (p.strip() for p in parts):
        if item_type in ("char", "String"):
            out.append(part[1:-1])
        else:
            out.append(_java(part, item_type) if item_type else _java_literal(part))
    return out


def _java_hash_map(text: str) -> Any:
    """`new HashMap<..>() {{ put("k", v); }}`: keys must be double-quoted, values are read untyped."""
    match = re.search(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", text, re.DOTALL)
    if match:
        return {k: _java_literal(v.strip()) for k, v in re.findall(r"put\(\"(.*?)\",\s*(.*?)\)", match.group(1))}
    return {} if re.search(r"new\s+HashMap<.*?>\s*\(\)", text) else text


def _java_literal(text: str) -> Any:
    """A collection element of no declared type: boolean, "string", long, float, int, double, else text."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if re.match(_JAVA_LONG, text):
        return int(text[:-1])
    if re.match(_JAVA_FLOAT, text):
        return float(re.sub(r"[fF]$", "", text))
    return _number_or_text(text)


def _number_or_text(text: str) -> Any:
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


# ---------------------------------------------------------------- JavaScript
_JS_2D = r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)"
_JS_1D = r"\[(.*?)\]|\bnew\s+Array\((.*?)\)"


def _quoted(text: str) -> bool:
    return (text.startswith('"') and text.endswith('"')) or (text.startswith("'") and text.endswith("'"))


def _js(text: str, doc_type: str, item_type: str | None = None) -> Any:
    """QUIRK: `String` loses one pair of matching quotes; `float` takes no exponent; `Bigint` needs `n`."""
    if doc_type not in SOURCE_TYPES["javascript"]:
        raise UnsupportedType(f"upstream cannot convert JavaScript type {doc_type!r}")
    if doc_type == "String":
        return text[1:-1] if _quoted(text) else text
    if doc_type == "integer":
        return int(text) if re.match(_DIGITS, text) else text
    if doc_type == "float":
        return float(text) if re.match(r"^-?\d+(\.\d+)?$", text) else text
    if doc_type == "Bigint":
        return int(text[:-1]) if re.match(r"^-?\d+n$", text) else text
    if doc_type == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if doc_type == "dict":
        return _js_object(text.strip())
    if doc_type == "array":
        return _js_array(text.strip(), item_type)
    return text  # any


def _js_array(code: str, item_type: str | None) -> Any:
    """`[a, b]` or `new Array(a, b)` at the start; any error inside leaves the text as it is.

    QUIRK: a 2-D literal (`[[1, 2], [3]]`) gives lists of untyped elements whatever the item type;
    elements are split at every comma, nested brackets or not."""
    try:
        if match := re.match(_JS_2D, code):
            rows = []
            for i, row in enumerate(re.findall(r"\[(.*?)\]", match.group(0))):
                row = row.strip()
                if i == 0 and row.startswith("["):
                    row = row[1:]
                rows.append([_js_literal(e.strip()) for e in row.split(",")])
            return rows
        match = re.match(_JS_1D, code)
        if not match:
            return code
        body = next((g for g in match.groups() if g is not None), "").strip()
        parts = [p.strip() for p in body.split(",")] if body else []
        if not item_type:
            return [_js_literal(p) for p in parts]
        return [_js(p, item_type, "String") if p.startswith(("'", '"')) else _js(p, item_type) for p in parts]
    except Exception:  # noqa: BLE001 - upstream returns the text on any error here
        return code


def _js_object(code: str) -> Any:
    """`{k: v, ...}` up to the first `}`. QUIRK: a value loses its surrounding quotes before it is
    read, so `"5"` is the number 5; a nested object is cut at its first `}`."""
    if code == "{}":
        return {}
    match = re.match(r"\{(.*?)\}", code)
    if not match:
        return code
    try:
        out: dict[str, Any] = {}
        for key, raw in re.findall(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", match.group(1)):
            key, raw = key.strip().strip("'\""), raw.strip()
            if raw.startswith("[") and raw.endswith("]"):
                out[key] = _js_array(raw, None)
            elif raw.startswith("{") and raw.endswith("}"):
                out[key] = _js_object(raw)
            else:
                out[key] = _js_literal(raw.strip("'\""))
        return out
    except Exception:  # noqa: BLE001 - upstream returns the text on any error here
        return code


def _js_literal(text: str) -> Any:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if _quoted(text):
        return text[1:-1]
    return _number_or_text(text)


# ---------------------------------------------------------------- expected values as source
_JAVA_ARRAY_OF = {"integer": "int", "long": "long", "char": "char", "boolean": "boolean", "double": "double",
                  "float": "float", "byte": "byte", "short": "short", "String": "String"}  # fmt: skip


def to_source(language: str, schema: Mapping[str, Any], value: Any) -> str:
    """`value` (an expected answer) as the source string the checker reads back as it.

    A value that no string can give (a number allowed for an `any` parameter) is written anyway
    and fails, as it would upstream."""
    write = _java_source if language == "java" else _js_source
    return write(value, schema.get("type"), (schema.get("items") or {}).get("type"))


def _java_source(value: Any, doc_type: str | None, item_type: str | None = None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}L" if doc_type == "long" else str(value)
    if isinstance(value, float):
        return f"{value!r}f" if doc_type == "float" else repr(value)
    if isinstance(value, list) and doc_type == "ArrayList":
        if not value:
            return "new ArrayList<>()"
        quote = item_type in ("char", "String")
        items = ", ".join(f'"{v}"' if quote else _java_source(v, item_type) for v in value)
        return f"new ArrayList<>(Arrays.asList({items}))"
    if isinstance(value, list):
        items = ", ".join(_java_source(v, item_type) for v in value)
        return f"new {_JAVA_ARRAY_OF.get(item_type or '', 'Object')}[]{{{items}}}"
    if isinstance(value, dict):
        puts = " ".join(f'put("{k}", {_java_literal_source(v)});' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}" if value else "new HashMap<>()"
    return str(value)


def _java_literal_source(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else _java_source(value, None)


def _js_source(value: Any, doc_type: str | None, item_type: str | None = None, nested: bool = False) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}n" if doc_type == "Bigint" else str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return f'"{value}"' if nested or doc_type == "String" else value
    if isinstance(value, list):
        return "[" + ", ".join(_js_source(v, item_type, nested=True) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_source(v, None, nested=True)}" for k, v in value.items()) + "}"
    return str(value)


# ---------------------------------------------------------------- what the model is shown
def hinted_docs(docs: Sequence[Mapping[str, Any]], language: str) -> list[dict[str, Any]]:
    """The docs as upstream's inference shows them for Java/JavaScript (`load_dataset_entry` with its
    language hint): a note on each description, each parameter described as a `string` holding a
    value of its type, element types and object schemas moved into the text. The checker keeps
    using the original docs, as upstream's evaluation does. Python docs are returned unchanged."""
    docs = [copy.deepcopy(dict(d)) for d in docs]
    if language == "python":
        return docs
    lang = "Java" if language == "java" else "JavaScript"
    note = " Note that the provided function is in Java 8 SDK syntax." if language == "java" else \
        " Note that the provided function is in JavaScript syntax."  # fmt: skip
    lists = ("ArrayList", "Array") if language == "java" else ("array",)
    for doc in docs:
        doc["description"] = doc.get("description", "") + note
        for prop in doc.get("parameters", {}).get("properties", {}).values():
            kind = prop.get("type")
            prop["description"] = prop.get("description", "") + (
                f" This parameter can be of any type of {lang} object in string representation." if kind == "any"
                else f" This is {lang} {kind} type parameter in string representation.")  # fmt: skip
            if kind in lists:
                item = (prop.pop("items", None) or {}).get("type")
                prop["description"] += f" The list elements are of type {item}; they are not in string representation."
            if language == "javascript" and kind == "dict" and "properties" in prop:
                prop["description"] += (" The dictionary entries have the following schema; they are not in string "
                                        f"representation. {json.dumps(prop['properties'])}")  # fmt: skip
                del prop["properties"]
            prop["type"] = "string"
    return docs
