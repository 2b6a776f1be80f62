"""Executable backends for benchmarks whose official Python classes were not shipped with the data.

A backend is a plain class whose public methods are the tools (named as in the function docs) and
whose public attributes are the state the checkers compare. Each method returns a JSON-able dict;
failures return ``{"error": ...}`` rather than raising, as the official classes do, so a bad call is
visible to the model and to the response-based check. `execute` is the only dispatcher: it calls
nothing that is not named in the backend's function docs, so model text never reaches `getattr`
unchecked.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, ClassVar


class Backend:
    """Base class: `load` a scenario, `execute` one documented tool, snapshot the public state."""

    tool_names: ClassVar[frozenset[str]] = frozenset()  # methods callable from the model
    defaults: ClassVar[dict[str, Any]] = {}  # state used when the scenario omits a key

    def load(self, config: Mapping[str, Any]) -> None:
        """Set every state attribute from `config`, falling back to a deep copy of `defaults`."""
        for key, value in self.defaults.items():
            setattr(self, key, copy.deepcopy(config.get(key, value)))

    def public_state(self) -> dict[str, Any]:
        """Attributes not starting with `_`, deep-copied: what the state-based check compares."""
        return {k: copy.deepcopy(v) for k, v in vars(self).items() if not k.startswith("_")}

    def execute(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Run a documented tool; unknown tools, bad arguments and tool errors become ``{"error"}``."""
        if name not in self.tool_names:
            return {"error": f"{type(self).__name__} has no tool {name!r}"}
        try:
            return getattr(self, name)(**dict(arguments))
        except TypeError as exc:  # wrong/missing keyword arguments
            return {"error": f"{name}: {exc}"}
        except Exception as exc:  # noqa: BLE001 - whatever a tool raises on model input is the model's error
            return {"error": f"{name}: {type(exc).__name__}: {str(exc)[:200]}"}


def render_result(result: Mapping[str, Any]) -> str:
    """A tool result as the text the model reads and the response check compares."""
    return json.dumps(result, sort_keys=True, default=str)
