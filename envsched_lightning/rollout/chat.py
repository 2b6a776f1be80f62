"""Render episodes with the policy's own chat template, in the tool-call format its family speaks.

What a template does with tools decides how an episode is rendered and parsed (`ToolProtocol`):

- the template renders ``tools=`` (Qwen3, Qwen2.5, Llama 3.x, ...): the schemas go through it, tool
  results are ``tool`` messages, and the model's calls are parsed in the format the template itself
  writes an assistant tool call in (detected by rendering one probe call and parsing it back);
- the template ignores ``tools=`` (SmolLM2's ChatML, Gemma 3, ...): the fallback ``prompt`` puts the
  schemas in the system message in the project's format (the same instructions Qwen's template
  writes), results come back as one user message of ``<tool_response>`` blocks (which keeps
  user/assistant alternation for templates that demand it), and calls are parsed as ``hermes``.

``tool_format="auto"`` detects which applies; a format name forces it. The choice is logged once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transformers import PreTrainedTokenizerBase

from envsched_lightning.envs.base import Environment, Task, ToolCall, ToolResult
from envsched_lightning.envs.tool_formats import TOOL_FORMATS, ToolFormat, tool_format
from envsched_lightning.models.chat_template import TOOLS_FOOTER, TOOLS_HEADER
from envsched_lightning.models.special_text import Shield as _Shield

log = logging.getLogger(__name__)

MARKER = "\u2063envsched-marker\u2063"
"""Content of the stand-in assistant turn that continuations are rendered after (never in real text)."""
PROMPT_FALLBACK = "prompt"
"""`tool_format` value: schemas in the system prompt, hermes calls, results as a user turn."""
_PROBE = {"type": "function", "function": {"name": "envsched_probe_tool", "description": "probe",
          "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}}  # fmt: skip
_PROBE_CALL = {"type": "function", "function": {"name": "envsched_probe_tool", "arguments": {"x": 7}}}


@dataclass(frozen=True)
class ToolProtocol:
    """How one tokenizer's template carries tools: natively or through the system prompt, and the call format."""

    format: ToolFormat
    native: bool  # the template renders `tools=` and `tool` messages itself
    how: str  # why this protocol: detected or configured, for the log

    @property
    def name(self) -> str:
        return self.format.name if self.native else PROMPT_FALLBACK


def tool_message(result: ToolResult) -> dict[str, str]:
    """A `tool` chat message; a rejected call shows the model its error so it can recover."""
    content = result.content if result.error is None else (result.content or f"Error: {result.error}")
    return {"role": "tool", "name": result.name, "content": content}


SCHEMA_STYLES = ("json", "compact", "auto")  # auto: compact where the schemas go in the system prompt, else json
COMPACT_HEADER = "You can call these functions:"
COMPACT_FOOTER = ('\nTo call one, write <tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n'
                  "</tool_call> (one block per call), then answer when done.")  # fmt: skip


def tools_system_block(tools: Sequence[Mapping[str, Any]], style: str = "json") -> str:
    """The schemas and the call instructions for the system prompt: ``json`` as Qwen's template writes
    them (whole JSON schemas), ``compact`` as one signature line per function (a third of the tokens)."""
    if style == "compact":
        return COMPACT_HEADER + "".join("\n" + compact_signature(t) for t in tools) + COMPACT_FOOTER
    lines = "".join("\n" + json.dumps(dict(t), ensure_ascii=False) for t in tools)
    return TOOLS_HEADER + lines + TOOLS_FOOTER


def compact_signature(schema: Mapping[str, Any]) -> str:
    """``name(arg: type, opt?: type, unit: "c"|"f"): description``: what a call needs, without the JSON
    schema's nesting (parameter descriptions are left out)."""
    fn = schema.get("function", schema)
    params = fn.get("parameters") or {}
    required = set(params.get("required") or [])
    args = [f"{k}{'' if k in required else '?'}: {_type_text(v)}" for k, v in (params.get("properties") or {}).items()]
    desc = str(fn.get("description") or "").strip()
    return f"{fn.get('name', '?')}({', '.join(args)})" + (f": {desc}" if desc else "")


def _type_text(prop: Any) -> str:
    if not isinstance(prop, Mapping):
        return "any"
    if isinstance(prop.get("enum"), list):
        return "|".join(json.dumps(v, ensure_ascii=False) for v in prop["enum"])
    kind = prop.get("type", "any")
    if kind == "array" and isinstance(prop.get("items"), Mapping):
        return f"list[{_type_text(prop['items'])}]"
    return "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)


class ChatRenderer:
    """Turns messages into token ids with the tokenizer's chat template, tools per `ToolProtocol`."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, chat_template_kwargs: Mapping[str, Any] | None = None,
                 tool_format: str = "auto", tool_schemas: str = "json") -> None:  # fmt: skip
        self.tokenizer = tokenizer
        self.kwargs = dict(chat_template_kwargs or {})
        self.eos_text = self._turn_end()
        self.eos_id = int(tokenizer.convert_tokens_to_ids(self.eos_text))
        self.protocol = self._protocol(tool_format)
        if tool_schemas not in SCHEMA_STYLES:
            raise ValueError(f"tool_schemas must be one of {SCHEMA_STYLES}, got {tool_schemas!r}")
        if tool_schemas == "compact" and self.protocol.native:
            raise ValueError(f"tool_schemas=compact writes the system prompt itself: it needs tool_format="
                             f"{PROMPT_FALLBACK} (this template carries tools natively, as {self.protocol.name})")  # fmt: skip
        # auto: a template that carries tools natively renders them itself; the prompt fallback gets signatures
        self.schema_style = ("json" if self.protocol.native else "compact") if tool_schemas == "auto" else tool_schemas
        # strings the tokenizer would parse as one added token; the call format's own markup (what
        # the model writes in a call) stays special in assistant text
        self._specials = [t for t in tokenizer.get_added_vocab() if t]
        probe = self.protocol.format.render("", [ToolCall("f", {"x": 1})])
        self._call_markup = {t for t in self._specials if t in probe}

    def shield(self) -> _Shield:
        """A fresh `_Shield` for one rendering: content text never encodes as special tokens."""
        return _Shield(self.tokenizer, self._specials, self._call_markup)

    def encode_text(self, text: str, assistant: bool = True) -> list[int]:
        """Token ids of one message's text on its own (a scripted assistant turn): special-token
        strings in it are plain text, except the call format's markup in an assistant turn."""
        shield = self.shield()
        return shield.encode(shield.text(text, assistant))

    @classmethod
    def for_loop(cls, tokenizer: PreTrainedTokenizerBase, loop_kwargs: Mapping[str, Any]) -> ChatRenderer:
        """The renderer the agent loop builds from its keyword arguments (`rollout_episodes`)."""
        return cls(tokenizer, loop_kwargs.get("chat_template_kwargs"), loop_kwargs.get("tool_format", "auto"),
                   loop_kwargs.get("tool_schemas", "json"))  # fmt: skip

    # -------------------------------------------------------------- detection
    def _render_raw(self, messages: list[dict[str, Any]], tools: list[dict] | None, gen_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tools=tools, tokenize=False,
                                                  add_generation_prompt=gen_prompt, **self.kwargs)  # fmt: skip

    def _turn_end(self) -> str:
        """The special token that closes an assistant turn in this template (``<|im_end|>``,
        ``<|eot_id|>``, ``<end_of_turn>``); the tokenizer's EOS when the template shows none."""
        eos = str(self.tokenizer.eos_token)
        try:
            text = self._render_raw([{"role": "user", "content": "x"}, {"role": "assistant", "content": MARKER}],
                                    None, False)  # fmt: skip
        except Exception:  # noqa: BLE001 - a template that cannot render this fails later with a clear error
            return eos
        after = text[text.find(MARKER) + len(MARKER) :].lstrip(" ") if MARKER in text else ""
        specials = sorted(set(self.tokenizer.all_special_tokens) | {eos}, key=len, reverse=True)
        return next((s for s in specials if s and after.startswith(s)), eos)

    def _protocol(self, requested: str) -> ToolProtocol:
        if requested == PROMPT_FALLBACK:
            return ToolProtocol(TOOL_FORMATS["hermes"], False, "configured")
        if requested != "auto":
            return ToolProtocol(tool_format(requested), True, "configured")
        user = [{"role": "user", "content": "x"}]
        try:
            with_tools = self._render_raw(user, [_PROBE], False)
        except Exception:  # noqa: BLE001 - a template that refuses tools has no tool support
            with_tools = ""
        if _PROBE["function"]["name"] not in with_tools:
            return ToolProtocol(TOOL_FORMATS["hermes"], False, "detected: the chat template ignores tools=")
        written = self._probe_call_text()
        for fmt in TOOL_FORMATS.values():
            parsed = fmt.parse(written)
            if [(c.name, dict(c.arguments)) for c in parsed.calls] == [("envsched_probe_tool", {"x": 7})]:
                return ToolProtocol(fmt, True, "detected from how the chat template writes a tool call")
        raise ValueError(
            f"the chat template writes tool calls as {written[:160]!r}, a format this project does not parse "
            f"(known: {', '.join(TOOL_FORMATS)}): set model.tool_format={PROMPT_FALLBACK} to put the schemas "
            f"in the system prompt instead, or name the format"
        )

    def _probe_call_text(self) -> str:
        """The assistant turn the template renders for one probe call, without its header or end token."""
        user = [{"role": "user", "content": "x"}]
        marked = self._render_raw(user + [{"role": "assistant", "content": MARKER}], [_PROBE], False)
        called = self._render_raw(user + [{"role": "assistant", "content": "", "tool_calls": [_PROBE_CALL]}],
                                  [_PROBE], False)  # fmt: skip
        start = marked.find(MARKER)
        start = start if start >= 0 and marked[:start] == called[:start] else _common_prefix(marked, called)
        body = called[start:]
        end = body.rfind(self.eos_text)
        return (body[:end] if end >= 0 else body).strip()

    # -------------------------------------------------------------- rendering
    @property
    def parse(self) -> Any:
        """The policy's call parser for `Episode.turn`; None for the default (``<tool_call>`` blocks)."""
        return None if self.protocol.format.name == "hermes" else self.protocol.format.parse

    def messages_with_tools(self, messages: Sequence[Mapping[str, Any]], tools: list[dict] | None) -> list[dict]:
        """`messages`, with the schemas in the system message when the template cannot carry them."""
        out = [dict(m) for m in messages]
        if not tools or self.protocol.native:
            return out
        block = tools_system_block(tools, self.schema_style)
        if out and out[0].get("role") == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{block}"
        else:
            out.insert(0, {"role": "system", "content": block})
        return out

    def render(self, messages: Sequence[Mapping[str, Any]], tools: list[dict] | None, gen_prompt: bool,
               shield: _Shield | None = None) -> str:  # fmt: skip
        """The template's text for `messages`; with `shield`, content carries sentinels (`_Shield`)."""
        messages = self.messages_with_tools(messages, tools)
        native = tools if self.protocol.native else None
        if shield is not None:
            messages, native = shield.messages(messages), shield.tools(native) if native else native
        return self._render_raw(messages, native or None, gen_prompt)

    def prompt(self, task: Task, env: Environment) -> list[int]:
        shield = self.shield()
        return shield.encode(self.render([dict(m) for m in task.messages], env.tools_for(task), True, shield))

    def tool_messages(self, results: Sequence[ToolResult]) -> list[dict[str, str]]:
        """The messages that carry one turn's tool results: `tool` messages, or one user turn of
        ``<tool_response>`` blocks when the template has no tool role of its own."""
        msgs = [tool_message(r) for r in results]
        if self.protocol.native:
            return msgs
        blocks = "\n".join(f"<tool_response>\n{m['content']}\n</tool_response>" for m in msgs)
        return [{"role": "user", "content": blocks}]

    def continuation(self, messages: list[dict[str, str]], ended_with_eos: bool) -> list[int]:
        """Tokens after a model turn: the turn's closing text, `messages` (tool results), the next prompt.

        Rendered after a marker assistant turn and cut after that turn's end token, so the cut never
        depends on how the template renders the assistant turn itself. A turn that did not end with
        the template's end token (cut by max_new_tokens, or another stop token) gets it appended.
        """
        head = [{"role": "user", "content": "x"}, {"role": "assistant", "content": MARKER}]
        shield = self.shield()
        text = self._render_raw(head + shield.messages(messages), None, True)
        # the stand-in turn precedes every message's content, so its marker and the end token right after
        # it come first: a tool result or user turn that quotes either cannot move the cut
        at = text.find(MARKER)
        end = text.find(self.eos_text, at + len(MARKER)) if at >= 0 else -1
        if end < 0:
            raise ValueError(
                f"chat template does not close an assistant turn with {self.eos_text!r}: cannot append tool turns"
            )
        suffix = text[end + len(self.eos_text) :]  # e.g. "\n<|im_start|>user\n<tool_response>...<|im_start|>assistant\n"
        return shield.encode(("" if ended_with_eos else self.eos_text) + suffix)

    def tool_turn(self, tool_msgs: list[dict[str, str]], ended_with_eos: bool) -> list[int]:
        """Tokens that follow a model turn whose calls returned `tool_msgs` (see `continuation`)."""
        return self.continuation(tool_msgs, ended_with_eos)


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n
