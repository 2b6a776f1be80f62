"""What a fetch may do in the data root: one fetch per destination at a time, the staging folders of a
killed fetch removed by the next one, and a destination replaced only where fetch wrote it.

- Lock: `.fetch-<folder>.lock` in the data root, held with flock while a fetch stages and renames; a
  second fetch of the same folder waits for it (up to LOCK_WAIT_S, saying so once), then sees its result.
- Staging: `.fetch-<folder>-<pid>-<random>/`; one whose process is gone is removed (under the lock).
- Replacing: fetch's own earlier copy (every file listed in its SOURCE.md and unchanged) is replaced;
  anything else at the destination is moved aside to `<folder>.user-<time>`, never deleted. A destination
  that is a symbolic link is never written through (the caller refuses it).
"""

from __future__ import annotations

import fcntl
import glob
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from envsched_lightning.processes import process_alive

from .bounded import FetchError

LOCK_WAIT_S = 15 * 60.0  # how long a fetch waits for another fetch of the same folder before refusing
_POLL_S = 0.2
_STAGING = re.compile(r"^\.fetch-(?P<folder>.+)-(?P<pid>\d+)-[a-z0-9_]+$")


@contextmanager
def destination_lock(root: Path, folder: str) -> Iterator[Path]:
    """Hold the lock of `root/folder` (its lock file is removed on release, so a clean root stays clean)."""
    lock = root / f".fetch-{folder}.lock"
    deadline, told = time.monotonic() + LOCK_WAIT_S, False
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise FetchError(f"cannot open the lock file {lock} ({err.strerror}): the data root must be writable "
                             "and that path a plain file (or absent); nothing was written") from None  # fmt: skip
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = _holder(lock)
            if time.monotonic() >= deadline:
                raise FetchError(f"another fetch (pid {holder}) is writing {root / folder} and holds {lock}; nothing "
                                 "was written: run this again when it has finished") from None  # fmt: skip
            if not told:
                print(f"waiting for another fetch (pid {holder}) of {root / folder} to finish ({lock})", file=sys.stderr, flush=True)
                told = True
            time.sleep(_POLL_S)
            continue
        if _same_file(fd, lock):
            break
        os.close(fd)  # its holder removed that lock file as it released it: lock the current one
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield lock
    finally:
        lock.unlink(missing_ok=True)  # while still held: a waiter that locked the old file sees it gone and retries
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _holder(lock: Path) -> str:
    try:
        with open(lock, "rb") as fh:
            return fh.read(32).decode(errors="replace").strip() or "?"
    except OSError:
        return "?"


# ---------------------------------------------------------------------------------------- staging
def staging_folder(root: Path, folder: str) -> Path:
    """A fresh hidden folder in `root` (same filesystem: the final rename is atomic), named for this process."""
    return Path(tempfile.mkdtemp(prefix=f".fetch-{folder}-{os.getpid()}-", dir=root))


def remove_stale_staging(root: Path, folder: str) -> list[Path]:
    """Staging folders of `folder` left by a fetch whose process is gone (killed mid-fetch): removed, and returned."""
    removed = []
    for path in root.glob(f".fetch-{glob.escape(folder)}-*"):
        m = _STAGING.match(path.name)
        if not m or m["folder"] != folder or path.is_symlink() or not path.is_dir():
            continue
        pid = int(m["pid"])
        if pid != os.getpid() and not process_alive(pid):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


# -------------------------------------------------------------------------------------- replacing
def foreign_content(dest: Path, owned: Callable[[str, Path], bool], limit: int = 3) -> list[str]:
    """Up to `limit` entries at `dest` that fetch did not write (`owned(relative name, path)` says which
    files it did): symbolic links, special files, files it does not list or that changed. Empty: none."""
    if not os.path.lexists(dest):
        return []
    if dest.is_symlink() or not dest.is_dir():
        return [dest.name]
    found: list[str] = []
    for top, dirs, files in os.walk(dest):
        for name in [*dirs, *files]:
            path = Path(top) / name
            rel = path.relative_to(dest).as_posix()
            if path.is_symlink() or (name in files and not owned(rel, path)):
                found.append(rel)
        if len(found) >= limit:
            break
    return found[:limit]


def put_in_place(staged: Path, dest: Path, foreign: list[str]) -> str | None:
    """Rename `staged` to `dest`. What was at `dest` is removed when fetch wrote all of it (`foreign` empty),
    else moved aside whole; returns the message saying where, or None."""
    message = None
    if os.path.lexists(dest):
        if foreign:
            aside = _aside_name(dest)
            os.rename(dest, aside)
            shown = ", ".join(foreign)
            message = (f"{dest} held content fetch did not write ({shown}); moved it to {aside} "
                       "(nothing was deleted: keep what you need from there and remove the rest)")  # fmt: skip
        else:
            shutil.rmtree(dest)
    try:
        staged.rename(dest)
    except OSError as err:
        raise FetchError(f"cannot put the fetched copy at {dest} ({err.strerror}){'; ' + message if message else ''}") from None
    return message


def _aside_name(dest: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside, n = dest.with_name(f"{dest.name}.user-{stamp}"), 1
    while os.path.lexists(aside):
        n += 1
        aside = dest.with_name(f"{dest.name}.user-{stamp}-{n}")
    return aside
