"""A source's files out of a wheel, zip or tar archive, bounded: only what the source expects is written.

Refused, naming the archive and member: a member path that is absolute or holds `..` (git archives and
wheels never do), a link, device or other special member where the source takes a file, a member twice,
a member past its cap (`Source.member_cap`), more than `max_unpacked_bytes` read out of the archive (a tar's
whole decompressed stream counts, so a bomb in a member we skip stops too), more than MAX_MEMBERS members,
and zip compression other than stored or deflated. Each file is hashed as it is written.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO, NamedTuple

from .bounded import CappedReader, FetchError, copy_capped
from .sources import Source

MAX_MEMBERS = 50_000  # the pinned archives hold a few hundred; a header-only flood stops here
_ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}


class Member(NamedTuple):
    name: str  # its path inside the archive
    what: str  # "file", "dir", or what else it is ("a symbolic link", ...): refused where a file is taken
    size: int  # as its header declares it
    open: Callable[[], BinaryIO]


def extract(source: Source, archive: Path, into: Path, label: str) -> dict[str, str]:
    """The source's files from `archive` into the empty folder `into`: {local name: sha256}, hashed as
    written. `label` names the archive in errors ("URL: the acebench archive"). A GitHub source archive's
    top folder (`<repo>-<commit>/`) is dropped."""
    try:
        return _extract(source, archive, into, label)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, gzip.BadGzipFile, lzma.LZMAError) as exc:
        raise FetchError(f"{label} is damaged or cut short ({type(exc).__name__}: {exc}); nothing was written") from None


def _extract(source: Source, archive: Path, into: Path, label: str) -> dict[str, str]:
    digests: dict[str, str] = {}
    unpacked = 0
    root = into.resolve()
    for member in members(archive, source.max_unpacked_bytes, label):
        upstream = member.name.split("/", 1)[1] if source.url and "/" in member.name else member.name
        local = _local_name(source, upstream)
        if member.what == "dir" or not local or local.endswith("/") or (source.files and local not in source.files):
            continue
        where = f"{label}: member {member.name!r}"
        if member.what != "file":
            raise FetchError(f"{where} is {member.what}, where {source.repository} holds a file; nothing was written")
        if local in digests:
            raise FetchError(f"{where} appears twice; nothing was written")
        cap = source.member_cap(local)
        over = f"{where} is over its cap of {cap} bytes (the pinned {local} is {source.sizes.get(local, 'at most that')}"
        if member.size > cap:
            raise FetchError(f"{over}; its header says {member.size}); nothing was written")
        if unpacked + member.size > source.max_unpacked_bytes:
            raise FetchError(f"{label}: its files pass the cap of {source.max_unpacked_bytes} bytes at member "
                             f"{member.name!r}; nothing was written")  # fmt: skip
        target = into / local
        if not target.resolve().is_relative_to(root):
            raise FetchError(f"{where} would be written outside {into}; nothing was written")
        target.parent.mkdir(parents=True, exist_ok=True)
        with member.open() as src, open(target, "xb") as dst:
            stop = f"{over}); stopped at the cap, nothing was written"
            size, digests[local] = copy_capped(src, dst, cap, lambda stop=stop: stop)
        unpacked += size
    return digests


def members(archive: Path, max_unpacked: int, label: str) -> Iterator[Member]:
    """Every member of a wheel / zip or a (gzip, bzip2, xz or plain) tar archive; a path that is absolute or
    holds `..` is refused."""
    listing = _zip_members(archive, label) if zipfile.is_zipfile(archive) else _tar_members(archive, max_unpacked, label)
    for count, member in enumerate(listing, 1):
        if count > MAX_MEMBERS:
            raise FetchError(f"{label} holds more than {MAX_MEMBERS} members; nothing was written")
        path = PurePosixPath(member.name)
        if path.is_absolute() or ".." in path.parts:
            raise FetchError(f"{label}: member {member.name!r} is an absolute path or leaves its folder; nothing was written")
        yield member


def _zip_members(archive: Path, label: str) -> Iterator[Member]:
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            mode = info.external_attr >> 16
            if info.is_dir():
                what = "dir"
            elif stat.S_ISLNK(mode):
                what = "a symbolic link"
            elif stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                what = "a device or other special file"
            elif info.compress_type not in _ZIP_METHODS:
                what = f"compressed with method {info.compress_type} (only stored or deflated are read)"
            else:
                what = "file"
            yield Member(info.filename, what, info.file_size, lambda info=info: z.open(info))


def _tar_members(archive: Path, max_unpacked: int, label: str) -> Iterator[Member]:
    """Read as a stream through a cap on the decompressed bytes (tarfile's own detection would read a first
    long-name header of any size into memory)."""
    with open(archive, "rb") as raw:
        stream = _decompressed(raw)
        capped = CappedReader(stream, max_unpacked, lambda: f"{label} unpacks to more than its cap of "
                              f"{max_unpacked} bytes; stopped there, nothing was written")  # fmt: skip
        try:
            tar = tarfile.open(fileobj=capped, mode="r|")  # type: ignore[call-overload]
        except tarfile.ReadError:
            raise FetchError(f"{label} is neither a zip (wheel) nor a tar archive; nothing was written") from None
        with tar:
            for info in tar:
                yield Member(info.name, _tar_kind(info), info.size, lambda info=info: tar.extractfile(info))


def _decompressed(raw: BinaryIO) -> BinaryIO:
    head = raw.read(6)
    raw.seek(0)
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
    if head.startswith(b"BZh"):
        return bz2.BZ2File(raw)  # type: ignore[return-value]
    if head.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(raw)  # type: ignore[return-value]
    return raw


def _tar_kind(info: tarfile.TarInfo) -> str:
    if info.isfile():
        return "file"
    if info.isdir():
        return "dir"
    if info.issym():
        return "a symbolic link"
    if info.islnk():
        return "a hard link"
    return "a device or other special file"


def _local_name(source: Source, upstream: str) -> str | None:
    if any(upstream.startswith(s) for s in source.skip):
        return None
    for prefix, local in source.members:
        if upstream == prefix or (prefix.endswith("/") and upstream.startswith(prefix)):
            return local + upstream[len(prefix) :]
    return None
