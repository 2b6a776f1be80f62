"""Copies and reads that stop at a cap: a hostile download or archive member cannot fill the disk or memory.

Every byte a fetch writes goes through `copy_capped`, which hashes as it writes (one pass, no later
scan) and stops at the cap, so the file it leaves holds at most `cap` bytes.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable
from typing import BinaryIO

CHUNK = 1 << 16


class FetchError(RuntimeError):
    """A download, checksum, archive or destination problem, with what to do about it."""


def copy_capped(src: BinaryIO, dst: BinaryIO, cap: int, over: Callable[[], str],
                progress: Callable[[int], None] | None = None) -> tuple[int, str]:  # fmt: skip
    """`src` into `dst` with at most `cap` bytes written: (bytes, sha256). One byte more than `cap`
    raises FetchError with the message `over()`, with `dst` holding exactly `cap` bytes."""
    digest, done = hashlib.sha256(), 0
    while chunk := src.read(min(CHUNK, cap - done + 1)):
        if done + len(chunk) > cap:
            dst.write(chunk[: cap - done])
            raise FetchError(over())
        dst.write(chunk)
        digest.update(chunk)
        done += len(chunk)
        if progress:
            progress(done)
    return done, digest.hexdigest()


def sha256_capped(path: str | os.PathLike, cap: int, over: Callable[[], str]) -> str:
    """The sha256 of the file at `path`, read once; FetchError `over()` when it holds more than `cap` bytes."""
    with open(path, "rb") as fh:
        return copy_capped(fh, _Discard(), cap, over)[1]


class _Discard(io.RawIOBase):
    """A sink: `copy_capped` used to hash without keeping the bytes."""

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        return len(b)


class CappedReader(io.RawIOBase):
    """A read-only stream that refuses to yield more than `cap` bytes in all: the decompressed stream of a
    tar archive, so a bomb (or a huge long-name header, which tarfile reads into memory) stops at the cap."""

    def __init__(self, raw: BinaryIO, cap: int, over: Callable[[], str]) -> None:
        self.raw, self.cap, self.over, self.done = raw, cap, over, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        room = self.cap - self.done + 1
        data = self.raw.read(room if size is None or size < 0 else min(size, room))
        self.done += len(data)
        if self.done > self.cap:
            raise FetchError(self.over())
        return data

    def readinto(self, buffer) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
