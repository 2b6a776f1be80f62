"""Special-token strings in message text stay text: content can never forge a turn, a role or a stop.

Content (tool results, user and system text, task and dataset text, a simulated user's view of the
policy's messages) goes through a chat template as a string, and encoding the rendered string would
turn a ``<|im_end|>`` inside it into the real turn end. Used by the policy's renderer
(`rollout/chat.py`) and by a local model that plays the user (`envs/users.py`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from transformers import PreTrainedTokenizerBase

_SENTINEL = re.compile("\ue000(\\d+)\ue001")  # stands in for a shielded string while the template renders


class Shield:
    """Keeps special-token strings in message text from encoding as special tokens.

    Content (tool results, user and system text, task and dataset text) goes through the chat
    template as a string, and encoding the rendered string would turn a ``<|im_end|>`` quoted in a
    tool result into the real turn end: text could forge turns. Before rendering, every such string
    in content is swapped for a private-use sentinel; encoding the rendered text then encodes each
    original as plain text (`split_special_tokens`). Only the template's own markup stays special.
    An assistant message keeps the markup its tool-call format writes (``<tool_call>``), as the model
    would sample it. A private-use ``\ue000`` in content is shielded too, so content cannot forge a
    sentinel."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, strings: Sequence[str], assistant_keeps: set[str]) -> None:
        self.tokenizer = tokenizer
        self.originals: list[str] = []
        ordered = sorted({*strings, "\ue000"}, key=len, reverse=True)  # longest first: no partial matches
        self._pattern = re.compile("|".join(map(re.escape, ordered)))
        kept = [x for x in ordered if x not in assistant_keeps]
        self._assistant_pattern = re.compile("|".join(map(re.escape, kept)))

    def text(self, value: str, assistant: bool = False) -> str:
        def swap(m: re.Match) -> str:
            self.originals.append(m.group(0))
            return f"\ue000{len(self.originals) - 1}\ue001"

        return (self._assistant_pattern if assistant else self._pattern).sub(swap, value)

    def messages(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for m in messages:
            m = dict(m)
            if isinstance(m.get("content"), str):
                m["content"] = self.text(m["content"], assistant=m.get("role") == "assistant")
            out.append(m)
        return out

    def tools(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self.tools(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.tools(v) for v in value]
        return value

    def encode(self, text: str) -> list[int]:
        """Token ids of rendered text: markup as the tokenizer parses it, each shielded original as plain text."""
        ids: list[int] = []
        at = 0
        for m in _SENTINEL.finditer(text):
            if m.start() > at:
                ids += self.tokenizer.encode(text[at : m.start()], add_special_tokens=False)
            ids += self.tokenizer(self.originals[int(m.group(1))], add_special_tokens=False,
                                  split_special_tokens=True)["input_ids"]  # fmt: skip
            at = m.end()
        if at < len(text):
            ids += self.tokenizer.encode(text[at:], add_special_tokens=False)
        return ids


def special_strings(tokenizer: PreTrainedTokenizerBase) -> list[str]:
    """Every string the tokenizer would parse as one added (special) token."""
    return [t for t in tokenizer.get_added_vocab() if t]


def shielded_chat_ids(tokenizer: PreTrainedTokenizerBase, messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """Token ids of `messages` through the tokenizer's chat template, with a generation prompt; only the
    template's own markup is special (no message, whatever its role, keeps a special token)."""
    shield = Shield(tokenizer, special_strings(tokenizer), set())
    text = tokenizer.apply_chat_template(shield.messages(messages), add_generation_prompt=True, tokenize=False)
    return shield.encode(text)
