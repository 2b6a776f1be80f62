"""How a model family writes tool calls: one parser and one renderer per format, behind one protocol.

A policy's chat template decides the syntax its model was trained to emit. Two are supported:

- ``hermes``: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`` blocks, several per
  turn for parallel calls, prose allowed around them (Qwen2.5, Qwen3, Hermes and many others). It is
  also the project's own format, the one task scripts are written in, and the one the system-prompt
  fallback teaches a model whose template has no tool support.
- ``llama3_json``: the whole assistant message is ``{"name": ..., "parameters": {...}}`` (Llama 3.1 /
  3.2 / 3.3 templates), optionally after ``<|python_tag|>``; several calls are separated by ``;``
  (vLLM's parser reads the same). A message that does not start with ``{`` is prose: an answer.

Every parser is total (malformed calls become error strings, never exceptions) and decodes with
`json` only: nothing a model writes is evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .base import ToolCall
from .parsing import MAX_BLOCKS, ParsedTurn, _call_from_json, _snippet, parse_tool_calls, render_assistant_turn

_DECODER = json.JSONDecoder()
PYTHON_TAG = "<|python_tag|>"


@runtime_checkable
class ToolFormat(Protocol):
    """Parse one assistant message into prose and calls; render calls the way the model should write them."""

    name: str

    def parse(self, text: str) -> ParsedTurn: ...

    def render(self, content: str, calls: Sequence[ToolCall]) -> str: ...


class HermesFormat:
    """``<tool_call>`` JSON blocks (`parse_tool_calls` / `render_assistant_turn`)."""

    name = "hermes"

    def parse(self, text: str) -> ParsedTurn:
        return parse_tool_calls(text)

    def render(self, content: str, calls: Sequence[ToolCall]) -> str:
        return render_assistant_turn(content, calls)


class Llama3JsonFormat:
    """A message that is one or more ``{"name", "parameters"}`` JSON objects, ``;``-separated."""

    name = "llama3_json"

    def parse(self, text: str) -> ParsedTurn:
        if not isinstance(text, str):
            return ParsedTurn("", [], [f"expected text, got {type(text).__name__}"])
        body = text.strip()
        if body.startswith(PYTHON_TAG):
            body = body[len(PYTHON_TAG) :].lstrip()
        elif not body.startswith(("{", "[")):
            return ParsedTurn(body, [], [])  # prose: the model answered
        calls: list[ToolCall] = []
        errors: list[str] = []
        pos = 0
        while pos < len(body):
            if len(calls) + len(errors) >= MAX_BLOCKS:
                errors.append(f"more than {MAX_BLOCKS} tool calls in one turn: the rest is ignored")
                break
            try:
                obj, end = _DECODER.raw_decode(body, pos)
            except (ValueError, RecursionError) as e:
                errors.append(f"tool call is not valid JSON ({type(e).__name__}: {str(e)[:60]}): {_snippet(body[pos:])}")
                break
            for item in obj if isinstance(obj, list) else [obj]:
                made = _call_from_json(_with_arguments(item))
                (calls if isinstance(made, ToolCall) else errors).append(made)
            pos = _skip_separators(body, end)
        return ParsedTurn("", calls, errors)

    def render(self, content: str, calls: Sequence[ToolCall]) -> str:
        """The calls as the Llama 3 templates write them; prose is dropped when there are calls (the
        format has no place for it), and kept alone when there are none."""
        if not calls:
            return content
        return "; ".join(json.dumps({"name": c.name, "parameters": dict(c.arguments)}, ensure_ascii=False)
                         for c in calls)  # fmt: skip


def _with_arguments(obj: object) -> object:
    """Llama 3 names the arguments ``parameters``; the shared call builder reads ``arguments``."""
    if isinstance(obj, dict) and "arguments" not in obj and "parameters" in obj:
        return {**obj, "arguments": obj["parameters"]}
    return obj


def _skip_separators(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n;":
        i += 1
    return i


TOOL_FORMATS: dict[str, ToolFormat] = {f.name: f for f in (HermesFormat(), Llama3JsonFormat())}
"""Every supported format by name (`model.tool_format` picks one, or ``auto`` detects it)."""


def tool_format(name: str) -> ToolFormat:
    """The format called `name`; an unknown name is an error listing the known ones."""
    try:
        return TOOL_FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown tool-call format {name!r}; known: {', '.join(TOOL_FORMATS)}") from None


def translate(text: str, fmt: ToolFormat) -> str:
    """A turn written in the project's (hermes) format, rewritten in `fmt`: scripted turns for SFT.

    Text whose blocks do not parse is returned unchanged, so a script's deliberate mistakes stay."""
    if fmt.name == "hermes":
        return text
    parsed = parse_tool_calls(text)
    return text if parsed.errors else fmt.render(parsed.content, parsed.calls)
