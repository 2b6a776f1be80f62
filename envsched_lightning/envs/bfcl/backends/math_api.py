"""BFCL `MathAPI`, behaving as the official class (bfcl-eval 2026.3.23) does: stateless arithmetic.

Results keep upstream's types, so the model reads the same text: `logarithm` answers an mpmath
`mpf` and `square_root` a `Decimal`, which `json.dumps` refuses, so both are rendered with `str()`
(``{'result': mpf('1.556')}``). Quirks kept: `logarithm` takes `precision` as mpmath's digit count
and accepts numbers given as strings (``value='36.0'``); `add("a", "b")` concatenates; errors are
returned as ``{"error": ...}`` only for the exceptions upstream catches, the rest propagate.

Upstream sets mpmath's and decimal's process-wide precision; we use a private mpmath context and
a local decimal context with the same precision, which gives the same digits without touching
the rest of the process. Three resource guards replace computations upstream would run for hours
(huge integer powers, precisions above `MAX_PRECISION`); see `power`, `round_number`, `_guard`.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping
from typing import Any

import mpmath

from . import Backend

MAX_PRECISION = 50_000  # digits; above this upstream's mpmath/decimal runs take minutes to hours
INT_STR_LIMIT = ("Exceeds the limit (4300 digits) for integer string conversion; "
                 "use sys.set_int_max_str_digits() to increase the limit")  # fmt: skip
TO_METERS = {"km": 1000, "m": 1, "cm": 0.01, "mm": 0.001, "um": 1e-6, "nm": 1e-9}
IMPERIAL = {
    "cm_to_in": 0.393701, "in_to_cm": 2.54, "m_to_ft": 3.28084, "ft_to_m": 0.3048, "m_to_yd": 1.09361,
    "yd_to_m": 0.9144, "km_to_miles": 0.621371, "miles_to_km": 1.60934, "kg_to_lb": 2.20462, "lb_to_kg": 0.453592,
    "celsius_to_fahrenheit": 1.8, "fahrenheit_to_celsius": 5 / 9,
}  # fmt: skip


def _guard(precision: int) -> dict[str, str] | None:
    return {"error": f"precision {precision} is above this backend's limit of {MAX_PRECISION} digits"} \
        if precision > MAX_PRECISION else None  # fmt: skip


class MathAPI(Backend):
    tool_names = frozenset(
        "absolute_value add divide imperial_si_conversion logarithm max_value mean min_value multiply percentage "
        "power round_number si_unit_conversion square_root standard_deviation subtract sum_values".split()
    )

    def load(self, config: Mapping[str, Any], long_context: bool = False) -> None:
        """Stateless upstream (`STATELESS_CLASSES`): the scenario (and long-context mode) is ignored, no
        attribute is compared."""

    def logarithm(self, value: float, base: float, precision: int) -> dict[str, Any]:
        try:
            ctx = mpmath.MPContext()
            ctx.dps = precision  # the same conversions and errors as upstream's `mpmath.mp.dps = precision`
            if guard := _guard(ctx.dps):
                return guard
            return {"result": ctx.log(value) / ctx.log(base)}
        except Exception as exc:  # noqa: BLE001 - upstream catches everything here
            return {"error": str(exc)}

    def mean(self, numbers: list[float]) -> dict[str, Any]:
        if not numbers:
            return {"error": "Cannot calculate mean of an empty list"}
        try:
            return {"result": sum(numbers) / len(numbers)}
        except TypeError:
            return {"error": "All elements in the list must be numbers"}

    def standard_deviation(self, numbers: list[float]) -> dict[str, Any]:
        if not numbers:
            return {"error": "Cannot calculate standard deviation of an empty list"}
        try:
            centre = sum(numbers) / len(numbers)
            return {"result": math.sqrt(sum((x - centre) ** 2 for x in numbers) / len(numbers))}
        except TypeError:
            return {"error": "All elements in the list must be numbers"}

    def si_unit_conversion(self, value: float, unit_in: str, unit_out: str) -> dict[str, Any]:
        if not isinstance(value, (int, float)):
            return {"error": "Value must be a number"}
        if unit_in not in TO_METERS or unit_out not in TO_METERS:
            return {"error": f"Conversion from '{unit_in}' to '{unit_out}' is not supported"}
        try:
            return {"result": value * TO_METERS[unit_in] * (1 / TO_METERS[unit_out])}
        except OverflowError:
            return {"error": "Conversion resulted in a value too large to represent"}

    def imperial_si_conversion(self, value: float, unit_in: str, unit_out: str) -> dict[str, Any]:
        if not isinstance(value, (int, float)):
            return {"error": "Value must be a number"}
        if unit_in == unit_out:
            return {"result": value}
        key = f"{unit_in}_to_{unit_out}"
        if key not in IMPERIAL:
            return {"error": f"Conversion from '{unit_in}' to '{unit_out}' is not supported"}
        try:
            if (unit_in, unit_out) == ("celsius", "fahrenheit"):
                return {"result": value * IMPERIAL[key] + 32}
            if (unit_in, unit_out) == ("fahrenheit", "celsius"):
                return {"result": (value - 32) * IMPERIAL[key]}
            return {"result": value * IMPERIAL[key]}
        except OverflowError:
            return {"error": "Conversion resulted in a value too large to represent"}

    def add(self, a: float, b: float) -> dict[str, Any]:
        try:
            return {"result": a + b}
        except TypeError:
            return {"error": "Both inputs must be numbers"}

    def subtract(self, a: float, b: float) -> dict[str, Any]:
        try:
            return {"result": a - b}
        except TypeError:
            return {"error": "Both inputs must be numbers"}

    def multiply(self, a: float, b: float) -> dict[str, Any]:
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return {"error": "Both inputs must be numbers"}
        return {"result": a * b}

    def divide(self, a: float, b: float) -> dict[str, Any]:
        try:
            if b == 0:
                return {"error": "Cannot divide by zero"}
            return {"result": a / b}
        except TypeError:
            return {"error": "Both inputs must be numbers"}

    def power(self, base: float, exponent: float) -> dict[str, Any]:
        # Guard: an integer power with more than ~5,000 digits cannot be rendered anyway (Python's
        # int-to-str limit, the error upstream ends with), so it is not computed.
        if type(base) in (int, bool) and type(exponent) is int and exponent > 0 and abs(base) > 1 \
                and exponent * math.log10(abs(base)) > 5_000:  # fmt: skip
            raise ValueError(INT_STR_LIMIT)
        try:
            return {"result": base**exponent}
        except TypeError:
            return {"error": "Both inputs must be numbers"}

    def square_root(self, number: float, precision: int) -> dict[str, Any]:
        try:
            if number < 0:
                return {"error": "Cannot calculate square root of a negative number"}
            with decimal.localcontext() as ctx:
                ctx.prec = precision  # ValueError/OverflowError propagate, as upstream's global setting
                exact = decimal.Decimal(number)
                if guard := _guard(ctx.prec):
                    return guard
                return {"result": exact.sqrt()}
        except (TypeError, decimal.InvalidOperation):
            return {"error": "Input must be a number or computation resulted in an invalid operation"}

    def absolute_value(self, number: float) -> dict[str, Any]:
        try:
            return {"result": abs(number)}
        except TypeError:
            return {"error": "Input must be a number"}

    def round_number(self, number: float, decimal_places: int = 0) -> dict[str, Any]:
        # Guard: rounding a modest integer to -4400 or fewer places is 0; Python would first build 10**4400+.
        if type(number) in (int, bool) and type(decimal_places) is int and decimal_places < -4400 \
                and abs(number).bit_length() < 14_000:  # fmt: skip
            return {"result": 0}
        try:
            return {"result": round(number, decimal_places)}
        except TypeError:
            return {"error": "First input must be a number, second input must be an integer"}

    def percentage(self, part: float, whole: float) -> dict[str, Any]:
        try:
            if whole == 0:
                return {"error": "Whole value cannot be zero"}
            return {"result": (part / whole) * 100}
        except TypeError:
            return {"error": "Both inputs must be numbers"}

    def min_value(self, numbers: list[float]) -> dict[str, Any]:
        if not numbers:
            return {"error": "Cannot find minimum of an empty list"}
        try:
            return {"result": min(numbers)}
        except TypeError:
            return {"error": "All elements in the list must be numbers"}

    def max_value(self, numbers: list[float]) -> dict[str, Any]:
        if not numbers:
            return {"error": "Cannot find maximum of an empty list"}
        try:
            return {"result": max(numbers)}
        except TypeError:
            return {"error": "All elements in the list must be numbers"}

    def sum_values(self, numbers: list[float]) -> dict[str, Any]:
        if not numbers:
            return {"error": "Cannot calculate sum of an empty list"}
        try:
            return {"result": sum(numbers)}
        except TypeError:
            return {"error": "All elements in the list must be numbers"}
