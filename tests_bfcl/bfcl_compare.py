"""What the differential tests of tests_bfcl share when they compare our outputs with the official code's."""

from __future__ import annotations

import re
from typing import Any

_SET_DISPLAY = re.compile(r"\{('[^'{}]*'(?:, '[^'{}]*')+)\}")


def canonical(text: Any) -> Any:
    """`text` with every printed set of strings in sorted order (anything else unchanged).

    A set prints in an order that depends on the process's string hashes and on the compiled file its
    constant came from: upstream's `{"economy", "business", "first"}` prints in either order from one
    run to the next, so set displays are compared as sets."""
    if not isinstance(text, str):
        return text
    return _SET_DISPLAY.sub(lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", text)
