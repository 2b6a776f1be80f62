"""BFCL `MathAPI`, rewritten from `multi_turn_func_doc/math_api.json`: stateless arithmetic.

The unit-conversion tools (`si_unit_conversion`, `imperial_si_conversion`) are offered but answer
with an error: no supported ground-truth call uses them and a partial unit table would be wrong.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from . import Backend


class MathAPI(Backend):
    tool_names = frozenset(
        "absolute_value add divide imperial_si_conversion logarithm max_value mean min_value multiply percentage "
        "power round_number si_unit_conversion square_root standard_deviation subtract sum_values".split()
    )

    def load(self, config: Mapping[str, Any]) -> None:
        """The scenario's MathAPI keys are hints for the prompt, not state; nothing is kept."""

    def absolute_value(self, number: float) -> dict[str, Any]:
        return {"result": abs(number)}

    def add(self, a: float, b: float) -> dict[str, Any]:
        return {"result": a + b}

    def subtract(self, a: float, b: float) -> dict[str, Any]:
        return {"result": a - b}

    def multiply(self, a: float, b: float) -> dict[str, Any]:
        return {"result": a * b}

    def divide(self, a: float, b: float) -> dict[str, Any]:
        return {"result": a / b}

    def power(self, base: float, exponent: float) -> dict[str, Any]:
        if base not in (0, 1, -1) and abs(exponent) * math.log10(abs(base)) > 308:  # beyond any float
            return {"error": "power: result too large"}
        return {"result": base**exponent}

    def percentage(self, part: float, whole: float) -> dict[str, Any]:
        return {"result": part / whole * 100}

    def square_root(self, number: float, precision: int) -> dict[str, Any]:
        return {"result": round(math.sqrt(number), precision)}

    def logarithm(self, value: float, base: float, precision: int) -> dict[str, Any]:
        return {"result": round(math.log(value, base), precision)}

    def round_number(self, number: float, decimal_places: int = 0) -> dict[str, Any]:
        return {"result": round(number, decimal_places)}

    def mean(self, numbers: list[float]) -> dict[str, Any]:
        return {"result": statistics.fmean(numbers)}

    def standard_deviation(self, numbers: list[float]) -> dict[str, Any]:
        return {"result": statistics.pstdev(numbers)}

    def max_value(self, numbers: list[float]) -> dict[str, Any]:
        return {"result": max(numbers)}

    def min_value(self, numbers: list[float]) -> dict[str, Any]:
        return {"result": min(numbers)}

    def sum_values(self, numbers: list[float]) -> dict[str, Any]:
        return {"result": sum(numbers)}

    def si_unit_conversion(self, value: float, unit_in: str, unit_out: str) -> dict[str, Any]:
        return {"error": "si_unit_conversion is not implemented by this backend"}

    def imperial_si_conversion(self, value: float, unit_in: str, unit_out: str) -> dict[str, Any]:
        return {"error": "imperial_si_conversion is not implemented by this backend"}
