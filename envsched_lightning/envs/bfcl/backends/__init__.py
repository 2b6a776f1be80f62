"""Executable backends for the BFCL multi-turn classes, written to behave like the official ones.

A backend is a plain class whose public methods are the tools, with the official methods' names,
parameters and defaults (so Python's own `TypeError` for a bad keyword reads the same), and whose
public attributes are the state the checker compares. A tool returns what the official method
returns (a dict, a list, None, an object whose `repr` the model then reads) and raises where it
raises: turning both into text is the harness's job (`render_result` and
`bfcl.multi_turn.World`), as it is upstream (`multi_turn_utils.execute_multi_turn_func_call`).
`call` is the only dispatcher and reaches nothing outside `tool_names`.

`rules` is "official" (reproduce the benchmark, quirks included; what scores are reported with)
or "training" (the few places where the official behaviour would teach the wrong thing differ;
each backend says where).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, ClassVar

RULES = ("official", "training")


def check_rules(rules: str) -> str:
    """`rules` itself, or a ValueError naming the option and its valid values."""
    if rules not in RULES:
        raise ValueError(f"rules must be one of {', '.join(repr(r) for r in RULES)}; got {rules!r}")
    return rules


class Backend:
    """Base class: `load` a scenario, `call` one tool, compare or snapshot the public state.

    `shared` is state that upstream keeps per Python process rather than per instance (mutable
    default arguments); the checker hands the model's and the ground truth's instances one dict.
    """

    tool_names: ClassVar[frozenset[str]] = frozenset()  # methods callable from the model
    defaults: ClassVar[dict[str, Any]] = {}  # state used when the scenario omits a key

    def __init__(self, rules: str = "official", shared: dict[str, Any] | None = None) -> None:
        self._rules = check_rules(rules)
        self._shared: dict[str, Any] = {} if shared is None else shared

    def load(self, config: Mapping[str, Any], long_context: bool = False) -> None:
        """Set every state attribute from `config`, falling back to a deep copy of `defaults`.

        `long_context` is upstream's ``_load_scenario(config, long_context=True)`` (the
        multi_turn_long_context category): the backends whose official class pads its state or
        answers with filler (`long_context_data`) override this; the others ignore it, as upstream's do."""
        for key, value in self.defaults.items():
            setattr(self, key, copy.deepcopy(config.get(key, value)))

    def public_state(self) -> dict[str, Any]:
        """Attributes not starting with `_`, deep-copied (for logs and tests)."""
        return {k: copy.deepcopy(v) for k, v in vars(self).items() if not k.startswith("_")}

    def differences(self, model: Backend) -> list[str]:
        """Public attributes of `self` (the ground truth) that `model` does not equal, compared live
        with `!=` as upstream's `state_checker` does (so objects with their own `__eq__` decide)."""
        return [k for k, v in vars(self).items() if not k.startswith("_") and getattr(model, k, None) != v]

    def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Run tool `name` with keyword `arguments`: its result, or whatever it raises."""
        if name not in self.tool_names:
            raise NameError(f"name {name!r} is not defined")
        return getattr(self, name)(**dict(arguments))


def render_result(result: Any) -> str:
    """A tool result as upstream renders it for the model and the response check: a string as is,
    a dict as `json.dumps` (or `str()` when it does not serialise, e.g. `Decimal`), anything else
    as `str()` (so None is "None" and a list is its Python repr)."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:  # noqa: BLE001 - upstream falls back on str() for any failure
            return str(result)
    return str(result)
