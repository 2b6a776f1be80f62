"""A parsed tool call: the one record both the parsers (`parsing`) and the episodes (`base`) speak.

Kept apart so `parsing` needs nothing from `base` and `base` can import the parsers directly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One parsed `<tool_call>` block: a tool name and its JSON arguments."""

    name: str
    arguments: Mapping[str, Any]
