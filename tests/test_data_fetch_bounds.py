"""`python -m envsched_lightning.data fetch` against a hostile archive, URL or destination: it stops at its
caps, refuses members the source does not expect, cleans up after a killed fetch, lets one fetch at a time
write a destination, and never deletes what it did not write.

Archives are built from the pinned tau-bench task lists kept in tests/envs/data (a real, verifying
source) plus the hostile part; caps are the source's own, or shrunk with `dataclasses.replace` where the
real cap would need megabytes.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tarfile
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from envsched_lightning.data import SOURCES, FetchError, fetch

REPO = Path(__file__).resolve().parents[1]
TASKS = "tau_bench_tasks"
PINNED = REPO / "tests" / "envs" / "data" / "tau_bench_tasks_59a200c6.tar.gz"
TOP = f"tau-bench-{SOURCES[TASKS].commit}"


def pinned_members() -> dict[str, bytes]:
    """{path inside the archive: bytes} of the pinned task-list archive's files."""
    with tarfile.open(PINNED) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def tar_gz(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    """A tar.gz at `path` of `members` (a header and its data)."""
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def tasks_archive(path: Path, extra: list[tuple[tarfile.TarInfo, bytes | None]], replace_license: bool = False) -> Path:
    """The pinned task lists as a tar.gz at `path` (without their LICENSE if `replace_license`), plus `extra`."""
    pinned = [member(name, data) for name, data in pinned_members().items()
              if not (replace_license and name == f"{TOP}/LICENSE")]  # fmt: skip
    return tar_gz(path, pinned + extra)


def member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, link: str = "") -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data if kind == tarfile.REGTYPE else None


def only_written(root: Path) -> list[str]:
    """What is left in the data root (no staging folder, no lock file after a fetch ends)."""
    return sorted(os.listdir(root)) if root.exists() else []


# -------------------------------------------------------------------------------------------- caps
def test_a_bomb_member_is_refused_at_its_cap_naming_source_member_and_cap(tmp_path):
    """2 MB of zeros where the pinned LICENSE (1063 bytes) lies: a few KB of archive, refused before writing."""
    bomb = tar_gz(tmp_path / "bomb.tar.gz", [member(f"{TOP}/LICENSE", bytes(2 << 20))])
    assert bomb.stat().st_size < 4_000
    cap = 2 * 1063 + (64 << 10)  # a member's cap: twice its pinned size plus 64 KiB
    with pytest.raises(FetchError, match=rf"the {TASKS} archive: member '{TOP}/LICENSE' is over its cap of {cap} bytes"):
        fetch(TASKS, tmp_path / "root", archive=bomb, quiet=True)
    assert only_written(tmp_path / "root") == []


def test_a_bomb_in_a_member_fetch_skips_stops_at_the_unpacked_cap(tmp_path, monkeypatch):
    """Upstream files the source does not take are read past, not written; their bytes still count."""
    monkeypatch.setitem(SOURCES, TASKS, replace(SOURCES[TASKS], max_unpacked_bytes=1 << 20))
    bomb = tasks_archive(tmp_path / "bomb.tar.gz", [member(f"{TOP}/README.md", bytes(4 << 20))])
    with pytest.raises(FetchError, match=rf"the {TASKS} archive unpacks to more than its cap of {1 << 20} bytes"):
        fetch(TASKS, tmp_path / "root", archive=bomb, quiet=True)
    assert only_written(tmp_path / "root") == []


@pytest.fixture
def endless_server():
    """An HTTP server whose answers have no Content-Length and go on for 4 MB: (base URL, bytes it sent)."""
    sent: list[int] = []

    class Endless(BaseHTTPRequestHandler):
        def do_GET(self):  # http.server's name
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(64):
                    self.wfile.write(bytes(1 << 16))
                    sent.append(1 << 16)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args):
            pass

    Endless.protocol_version = "HTTP/1.0"  # the body ends when the connection closes
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", sent
    httpd.shutdown()


def test_a_download_stops_at_its_cap_and_names_the_source(tmp_path, monkeypatch, endless_server):
    from envsched_lightning.data.fetch import download

    base, _ = endless_server
    cap = 100_000
    to = tmp_path / "download"
    with pytest.raises(FetchError, match=rf"the tau download passed its cap of {cap} bytes; stopped at the cap"):
        download(f"{base}/a.tar.gz", to, cap, what="the tau download")
    assert to.stat().st_size == cap  # written up to the cap, not a byte more

    monkeypatch.setitem(SOURCES, TASKS, replace(SOURCES[TASKS], max_download_bytes=cap))
    with pytest.raises(FetchError, match=rf"the {TASKS} download passed its cap of {cap} bytes"):
        fetch(TASKS, tmp_path / "root", url=f"{base}/a.tar.gz", quiet=True)
    assert only_written(tmp_path / "root") == []


def test_a_file_url_or_archive_past_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    big = tmp_path / "big.tar.gz"
    with open(big, "wb") as fh:
        fh.truncate(8 << 20)  # sparse: nothing is written to disk
    monkeypatch.setitem(SOURCES, TASKS, replace(SOURCES[TASKS], max_download_bytes=1 << 20))
    with pytest.raises(FetchError, match=rf"over the {TASKS} archive's cap of {1 << 20} bytes"):
        fetch(TASKS, tmp_path / "root", archive=big, quiet=True)
    with pytest.raises(FetchError, match=rf"the {TASKS} download is {8 << 20} bytes, over its cap of {1 << 20} bytes"):
        fetch(TASKS, tmp_path / "root", url=big.as_uri(), quiet=True)
    assert only_written(tmp_path / "root") == []


def test_a_file_of_the_wrong_size_is_not_read_to_verify_it(tmp_path):
    """A destination whose LICENSE is 256 MB (sparse here) is reported by its size, without hashing it."""
    dest, _ = fetch(TASKS, tmp_path, archive=PINNED, quiet=True)
    with open(dest / "LICENSE", "r+b") as fh:
        fh.truncate(256 << 20)
    from envsched_lightning.data.fetch import recorded_checksums, verify

    assert verify(SOURCES[TASKS], dest, recorded_checksums(dest)) == [f"LICENSE: {256 << 20} bytes, expected 1063"]


# ---------------------------------------------------------------------------------------- members
@pytest.mark.parametrize(
    ("extra", "refusal"),
    [
        (member(f"{TOP}/LICENSE", kind=tarfile.SYMTYPE, link="/etc/passwd"), "is a symbolic link"),
        (member(f"{TOP}/LICENSE", kind=tarfile.LNKTYPE, link=f"{TOP}/tau_bench/envs/retail/tasks_dev.py"), "is a hard link"),
        (member(f"{TOP}/LICENSE", kind=tarfile.CHRTYPE), "is a device or other special file"),
        (member("/tmp/planted", b"x"), "is an absolute path or leaves its folder"),
        (member(f"{TOP}/../../planted", b"x"), "is an absolute path or leaves its folder"),
    ],
    ids=["symlink", "hardlink", "device", "absolute", "dotdot"],
)
def test_members_the_source_does_not_expect_are_refused(tmp_path, extra, refusal):
    taken = extra[0].name.endswith("/LICENSE")  # a link or device where the source takes a file
    archive = tasks_archive(tmp_path / "bad.tar.gz", [extra], replace_license=taken)
    with pytest.raises(FetchError, match=rf"member '{extra[0].name}' {refusal}.*nothing was written"):
        fetch(TASKS, tmp_path / "root", archive=archive, quiet=True)
    assert only_written(tmp_path / "root") == [] and not (tmp_path / "planted").exists()


def test_a_member_given_twice_is_refused(tmp_path):
    archive = tasks_archive(tmp_path / "twice.tar.gz", [member(f"{TOP}/LICENSE", b"other")])
    with pytest.raises(FetchError, match=rf"member '{TOP}/LICENSE' appears twice"):
        fetch(TASKS, tmp_path / "root", archive=archive, quiet=True)


# ------------------------------------------------------------------------------ killed, concurrent
KILLED_MID_FETCH = """
import importlib, os, signal, sys
fetch_module = importlib.import_module("envsched_lightning.data.fetch")
def extract_then_die(source, archive, into, *rest):
    (into / "partial.json").write_bytes(b"x" * 1000)
    os.kill(os.getpid(), signal.SIGKILL)
fetch_module.extract = extract_then_die
fetch_module.fetch("tau_bench_tasks", sys.argv[1], archive=sys.argv[2], quiet=True)
"""


def test_a_killed_fetch_leaves_a_staging_folder_the_next_fetch_removes(tmp_path):
    root = tmp_path / "root"
    run = subprocess.run([sys.executable, "-c", KILLED_MID_FETCH, str(root), str(PINNED)], cwd=REPO)
    assert run.returncode == -signal.SIGKILL
    stale = list(root.glob(f".fetch-{TASKS}-*"))
    assert stale and list(stale[0].rglob("partial.json"))
    live = root / f".fetch-{TASKS}-{os.getpid()}-kept"  # a staging folder of a process still running
    live.mkdir()
    assert fetch(TASKS, root, archive=PINNED, quiet=True) == (root / TASKS, "fetched")
    assert only_written(root) == sorted([TASKS, live.name])


def test_a_second_fetch_of_the_same_folder_waits_for_the_first(tmp_path):
    from envsched_lightning.data.destination import destination_lock

    root = tmp_path / "root"
    root.mkdir()
    cmd = [sys.executable, "-m", "envsched_lightning.data", "fetch", TASKS, "--archive", str(PINNED), "--to", str(root)]
    with destination_lock(root, TASKS):  # a first fetch, mid-way
        second = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert "waiting for another fetch" in second.stderr.readline()
        assert not (root / TASKS).exists()
    out, _ = second.communicate()
    assert second.returncode == 0 and f"{TASKS}: fetched" in out
    assert only_written(root) == [TASKS]


def test_a_fetch_that_cannot_wait_refuses_with_a_message(tmp_path, monkeypatch):
    from envsched_lightning.data import destination

    monkeypatch.setattr(destination, "LOCK_WAIT_S", 0.0)
    root = tmp_path / "root"
    root.mkdir()
    with destination.destination_lock(root, TASKS):
        with pytest.raises(FetchError, match=rf"another fetch \(pid {os.getpid()}\) is writing {root / TASKS}.*run this again"):
            fetch(TASKS, root, archive=PINNED, quiet=True)
    assert not (root / TASKS).exists()


# --------------------------------------------------------------------------------- the destination
def test_content_fetch_did_not_write_is_moved_aside_never_deleted(tmp_path, capfd):
    root = tmp_path / "root"
    dest, _ = fetch(TASKS, root, archive=PINNED, quiet=True)
    (dest / "notes.txt").write_text("my notes")  # the user's
    (dest / "retail" / "tasks_dev.py").write_text("TASKS = []  # edited\n")  # fetch's, changed: no longer its own
    assert fetch(TASKS, root, archive=PINNED, quiet=True) == (dest, "fetched")
    aside = [p for p in root.iterdir() if p.name.startswith(f"{TASKS}.user-")]
    assert len(aside) == 1 and (aside[0] / "notes.txt").read_text() == "my notes"
    assert (aside[0] / "retail" / "tasks_dev.py").read_text() == "TASKS = []  # edited\n"
    err = capfd.readouterr().err
    assert f"moved it to {aside[0]}" in err and "notes.txt" in err and "nothing was deleted" in err
    assert not (dest / "notes.txt").exists() and (dest / "SOURCE.md").is_file()


def test_a_folder_fetch_did_not_write_is_moved_aside(tmp_path):
    root = tmp_path / "root"
    (root / TASKS).mkdir(parents=True)
    (root / TASKS / "mine.json").write_text("{}")  # no SOURCE.md: not fetch's
    fetch(TASKS, root, archive=PINNED, quiet=True)
    (aside,) = root.glob(f"{TASKS}.user-*")
    assert (aside / "mine.json").read_text() == "{}"


def test_fetchs_own_incomplete_copy_is_replaced_without_a_copy_aside(tmp_path):
    root = tmp_path / "root"
    dest, _ = fetch(TASKS, root, archive=PINNED, quiet=True)
    (dest / "LICENSE").unlink()
    assert fetch(TASKS, root, archive=PINNED, quiet=True) == (dest, "fetched")
    assert only_written(root) == [TASKS] and (dest / "LICENSE").is_file()


def test_a_symlinked_destination_is_used_when_it_verifies_and_never_written_through(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    fetched, _ = fetch(TASKS, elsewhere, archive=PINNED, quiet=True)
    root = tmp_path / "root"
    root.mkdir()
    (root / TASKS).symlink_to(fetched)
    assert fetch(TASKS, root, archive=PINNED, quiet=True) == (root / TASKS, "already there")

    empty = tmp_path / "empty"
    empty.mkdir()
    (root / TASKS).unlink()
    (root / TASKS).symlink_to(empty)
    with pytest.raises(FetchError, match=rf"{root / TASKS} is a symbolic link \(to {empty}\).*never writes through a link"):
        fetch(TASKS, root, archive=PINNED, quiet=True)
    assert (root / TASKS).is_symlink() and list(empty.iterdir()) == []


def test_a_symlinked_file_in_the_destination_is_moved_aside_with_its_folder(tmp_path):
    root = tmp_path / "root"
    dest, _ = fetch(TASKS, root, archive=PINNED, quiet=True)
    target = tmp_path / "users_license"
    target.write_text("keep me")
    (dest / "LICENSE").unlink()
    (dest / "LICENSE").symlink_to(target)
    assert fetch(TASKS, root, archive=PINNED, quiet=True) == (dest, "fetched")
    (aside,) = root.glob(f"{TASKS}.user-*")
    assert (aside / "LICENSE").is_symlink() and target.read_text() == "keep me"
    assert not (dest / "LICENSE").is_symlink()
