"""Keep freed memory in the process while a large graph is built, then hand it back.

Building the task graph of a large pool allocates and frees arrays of hundreds of MB, band after
band. glibc returns each freed block to the kernel, and the next allocation touches fresh pages
again. On a machine whose memory is backed lazily (a VM that reclaims what its guest frees, as the
2-core machines the benchmarks run on do), a first touch is expensive: measured at about 7 s per
GB, which made the 1M-task build 60 s instead of 25. `retained_heap()` asks glibc, where it is the
allocator, to keep freed memory for reuse inside the block and releases what is free at its end
(`malloc_trim`). Elsewhere (another libc, another OS) it does nothing: the results never depend
on it, only the time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_DEFAULT_THRESHOLD = 128 * 1024  # glibc's initial value of both
_KEEP = 2**31 - 1
_depth = 0


def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


LARGE = 200_000  # tasks from which a graph build is worth it (below, blocks are small and trimming costs)


@contextmanager
def retained_heap(size: int = LARGE) -> Iterator[None]:
    """Inside: freed memory stays in the process (no first-touch cost on reuse). After: the free
    part goes back to the kernel. Nested blocks act as one; below `LARGE` tasks (`size`) it does nothing."""
    global _depth
    libc = _glibc() if _depth == 0 and size >= LARGE else None
    _depth += 1
    try:
        if libc is not None:
            libc.mallopt(_M_MMAP_THRESHOLD, _KEEP)
            libc.mallopt(_M_TRIM_THRESHOLD, _KEEP)
        yield
    finally:
        _depth -= 1
        if libc is not None:
            libc.mallopt(_M_MMAP_THRESHOLD, _DEFAULT_THRESHOLD)
            libc.mallopt(_M_TRIM_THRESHOLD, _DEFAULT_THRESHOLD)
            libc.malloc_trim(0)
