"""`python -m envsched_lightning.data fetch`: pinned sources, checksums, all or nothing, and loaders that find the data.

BFCL is fetched for real (the pinned `bfcl-eval` wheel through pip's configured index). The upstream
hosts of the ACEBench and tau-bench archives are not reachable here: those archives are built from the
`acebench` and `tau_bench` folders tests/data_roots.py finds (the pinned commits' files, as fetched, or
`../shared/data`'s verbatim copies) in the upstream layout and served over HTTP on 127.0.0.1, so the
download, progress, extraction and checksum path is the real one.
"""

from __future__ import annotations

import functools
import http.server
import io
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from envsched_lightning.data import SOURCES, FetchError, default_data_root, fetch
from envsched_lightning.envs.registry import make_env
from tests.data_roots import SHARED_DATA, data_root, needs, root_with

REPO = Path(__file__).resolve().parents[1]
FILES = root_with("acebench", "tau_bench")  # what the served archives are built from
needs_files = needs("acebench", "tau_bench")


def upstream_archive(name: str, path: Path, change: str | None = None) -> Path:
    """A GitHub-style source archive (`<repo>-<commit>/...`) of the source's files, built from FILES."""
    source = SOURCES[name]
    top = f"{source.repository.rsplit('/', 1)[-1]}-{source.commit}"
    with tarfile.open(path, "w:gz") as tar:
        for local in source.files:
            upstream = next(prefix + local[len(loc) :] for prefix, loc in source.members
                            if local == loc or (loc.endswith("/") and local.startswith(loc)))  # fmt: skip
            data = (FILES / name / local).read_bytes()
            if local == change:
                data += b"\n"
            info = tarfile.TarInfo(f"{top}/{upstream}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        extra = b"not data"
        info = tarfile.TarInfo(f"{top}/README.md")  # upstream files we do not take
        info.size = len(extra)
        tar.addfile(info, io.BytesIO(extra))
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A local HTTP server over a folder of archives: (folder, base URL)."""
    folder = tmp_path_factory.mktemp("served")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield folder, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@needs_files
@pytest.mark.parametrize("name", ["acebench", "tau_bench"])
def test_an_archive_is_fetched_verified_and_found_by_the_loaders(name, server, tmp_path, capfd):
    folder, base = server
    upstream_archive(name, folder / f"{name}.tar.gz")
    dest, what = fetch(name, tmp_path, url=f"{base}/{name}.tar.gz")
    assert what == "fetched" and dest == tmp_path / SOURCES[name].folder
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == sorted([*SOURCES[name].files, "SOURCE.md"])
    source_md = (dest / "SOURCE.md").read_text()
    assert SOURCES[name].commit in source_md and "License: MIT" in source_md
    assert "100%" in capfd.readouterr().err  # the progress bar reached the end
    assert fetch(name, tmp_path, url=f"{base}/{name}.tar.gz") == (dest, "already there")  # safe to re-run
    assert not list(tmp_path.glob(".fetch-*"))
    env = make_env("acebench_normal_similar_api" if name == "acebench" else "tau_retail", data_dir=str(tmp_path))
    assert len(env.tasks()) > 0


@needs_files
def test_a_changed_file_is_refused_and_nothing_is_written(server, tmp_path):
    folder, base = server
    changed = "data_en/data_normal_similar_api.json"
    upstream_archive("acebench", folder / "bad.tar.gz", change=changed)
    with pytest.raises(FetchError, match=rf"{changed}: sha256 .* expected .*nothing was written"):
        fetch("acebench", tmp_path, url=f"{base}/bad.tar.gz", quiet=True)
    assert list(tmp_path.iterdir()) == []  # no destination, no temporary folder


def test_offline_is_a_clear_error_and_writes_nothing(tmp_path, free_port):
    with pytest.raises(FetchError, match=r"cannot download http://127\.0\.0\.1.*Offline.*--archive FILE"):
        fetch("tau_bench", tmp_path, url=f"http://127.0.0.1:{free_port}/tau.tar.gz", quiet=True)
    assert list(tmp_path.iterdir()) == []


@needs_files
def test_the_default_root_is_found_without_any_path_and_ENVSCHED_DATA_wins(server, tmp_path, monkeypatch):
    folder, base = server
    upstream_archive("tau_bench", folder / "tau.tar.gz")
    monkeypatch.setenv("ENVSCHED_DATA_CACHE", str(tmp_path / "cache"))  # what a user's ~/.cache would be
    with pytest.raises(ValueError, match="python -m envsched_lightning.data fetch tau_bench"):
        make_env("tau_retail")
    fetch("tau_bench", url=f"{base}/tau.tar.gz", quiet=True)
    assert default_data_root() == tmp_path / "cache" and len(make_env("tau_retail").tasks()) > 0
    monkeypatch.setenv("ENVSCHED_DATA", str(tmp_path / "elsewhere"))
    assert default_data_root() == tmp_path / "elsewhere"


def fetched(source: str, root: Path) -> Path:
    """`root` after `python -m envsched_lightning.data fetch SOURCE --to root`, for real (the command a user runs)."""
    run = subprocess.run([sys.executable, "-m", "envsched_lightning.data", "fetch", source, "--to", str(root)],
                         capture_output=True, text=True, cwd=REPO)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert f"{source}: fetched: {root / SOURCES[source].folder}" in run.stdout
    return root


@pytest.fixture(scope="module")
def bfcl_v4(tmp_path_factory) -> Path:
    """BFCL v4 data, fetched for real from the pinned wheel."""
    return fetched("bfcl", tmp_path_factory.mktemp("data"))


def test_bfcl_v4_comes_from_the_pinned_wheel_and_every_category_loads(bfcl_v4):
    from envsched_lightning.envs.bfcl.single_turn import CATEGORIES, NO_ANSWER_CATEGORIES, check_bfcl, ground_truth_calls
    from envsched_lightning.envs.parsing import render_tool_call

    assert "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a" in (bfcl_v4 / "bfcl_v4" / "SOURCE.md").read_text()
    assert not (bfcl_v4 / "bfcl_v4" / "unused_datasets").exists()
    counts, failed = {}, []
    for category in CATEGORIES:
        env = make_env(f"bfcl_{category}", data_dir=str(bfcl_v4))
        assert env.version == "v4" and env.name == f"bfcl_{category}"
        counts[category] = len(env.tasks())
        if category in NO_ANSWER_CATEGORIES:
            continue
        for question, answer in env.records:
            text = "\n".join(render_tool_call(c) for c in ground_truth_calls(question, answer))
            if check_bfcl(question, answer, text)[0] != 1.0:
                failed.append(question["id"])
    assert counts["simple"] == 400 and counts["multiple"] == 200 and counts["live_multiple"] == 1053
    assert counts["java"] == 100 and counts["javascript"] == 50
    # upstream answers no call can satisfy: v3's 5 Python ones, and 2 Java ones (tests/envs/test_bfcl.py)
    assert len(failed) <= 7 and {"simple_java_36", "simple_java_65"} <= set(failed), failed
    print(f"BFCL v4 tasks per category: {counts}; ground truth failing the official checker: {failed}")
    multi = make_env("bfcl_multi_turn_base", data_dir=str(bfcl_v4))
    assert multi.version == "v4" and len(multi.tasks()) > 0


def test_the_fetch_command_refuses_unknown_sources_and_mixed_options(tmp_path):
    run = subprocess.run([sys.executable, "-m", "envsched_lightning.data", "fetch", "all", "--url", "http://x", "--to",
                          str(tmp_path)], capture_output=True, text=True, cwd=REPO)  # fmt: skip
    assert run.returncode == 2 and "one archive" in run.stderr
    with pytest.raises(FetchError, match="unknown data source 'nope'"):
        fetch("nope", tmp_path)


def test_the_official_tau_task_lists_come_from_the_same_archive(tmp_path):
    """One downloaded archive serves both tau sources; a file the pinned commit does not hold is refused."""
    archive = tmp_path / "tau.tar.gz"
    top = f"tau-bench-{SOURCES['tau_bench_tasks'].commit}"
    with tarfile.open(archive, "w:gz") as tar:
        for local in SOURCES["tau_bench_tasks"].files:
            data = b"TASKS = []\n" if local.endswith(".py") else b"license"
            upstream = "LICENSE" if local == "LICENSE" else f"tau_bench/envs/{local}"
            info = tarfile.TarInfo(f"{top}/{upstream}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    run = subprocess.run([sys.executable, "-m", "envsched_lightning.data", "fetch", "tau_bench_tasks", "--archive",
                          str(archive), "--to", str(tmp_path / "root"), "--quiet"], capture_output=True, text=True, cwd=REPO)  # fmt: skip
    assert run.returncode == 1 and "does not hold https://github.com/sierra-research/tau-bench" in run.stderr
    assert not (tmp_path / "root" / "tau_bench_tasks").exists()


@pytest.fixture(scope="module")
def bfcl_v3(tmp_path_factory) -> Path:
    """BFCL v3 (the paper's), fetched for real from the last wheel that shipped it."""
    return fetched("bfcl_v3", tmp_path_factory.mktemp("data_v3"))


def test_bfcl_v3_comes_from_its_last_wheel_and_equals_upstreams_last_v3_commit(bfcl_v3):
    folder = bfcl_v3 / "bfcl_v3"
    assert "fdb996ac963ed1c6fce1eb4884053aae4a6de282fb931665a46dbeed204a228d" in (folder / "SOURCE.md").read_text()
    names = {p.relative_to(folder).as_posix() for p in folder.rglob("*.json")}
    assert {"BFCL_v3_simple.json", "BFCL_v3_multi_turn_base.json", "possible_answer/BFCL_v3_simple.json",
            "multi_turn_func_doc/vehicle_control.json"} <= names  # fmt: skip
    if (SHARED_DATA / "bfcl_v3").is_dir():  # the kept copy of gorilla at cd9429c: every file it holds, byte for byte
        kept = [p for p in (SHARED_DATA / "bfcl_v3").rglob("*.json")]
        assert kept and all((folder / p.relative_to(SHARED_DATA / "bfcl_v3")).read_bytes() == p.read_bytes() for p in kept)


def test_paper_eval_finds_every_suite_in_what_the_data_command_wrote(bfcl_v3, tmp_path, monkeypatch):
    """`experiment=paper_eval` with nothing but the data root the fetch command writes (ACEBench and tau-bench
    as their fetches lay them out, found by tests/data_roots.py; the task lists from the pinned archive)."""
    from hydra.utils import instantiate

    from tests.run_configs import compose_cfg

    found = data_root("acebench", "tau_bench")
    root = tmp_path / "data"
    root.mkdir()
    (root / "bfcl_v3").symlink_to(bfcl_v3 / "bfcl_v3")
    for folder in ("acebench", "tau_bench"):
        (root / folder).symlink_to(found / folder)
    fetch("tau_bench_tasks", root, archive=REPO / "tests" / "envs" / "data" / "tau_bench_tasks_59a200c6.tar.gz", quiet=True)
    monkeypatch.setenv("ENVSCHED_DATA", str(root))
    cfg = compose_cfg("evaluate", "experiment=paper_eval")
    envs = {name: instantiate(node) for name, node in cfg.env.items()}
    assert len(envs) == 18 and all(len(env.tasks()) > 0 for env in envs.values())
    assert {getattr(env, "version", None) for name, env in envs.items() if name.startswith("bfcl_")} == {"v3"}


def test_a_missing_bfcl_v3_folder_names_the_command_that_fetches_it(bfcl_v4, monkeypatch):
    monkeypatch.setenv("ENVSCHED_DATA", str(bfcl_v4))  # v4 only, as `fetch bfcl` leaves it
    with pytest.raises(ValueError, match=r"fetch bfcl_v3"):
        make_env("bfcl_simple", version="v3")
    with pytest.raises(FileNotFoundError, match=r"no BFCL_v3_\*\.json files .*fetch bfcl_v3"):
        make_env("bfcl_simple", version="v3", data_dir=str(bfcl_v4))  # a root without bfcl_v3/: no raw file error
