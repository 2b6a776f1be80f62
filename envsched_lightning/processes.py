"""Whether a process still runs: what a save or a fetch asks before it removes another process's leftovers."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """True while `pid` exists (also when it is another user's, which signal 0 may not reach)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
