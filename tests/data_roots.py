"""Where the tests find benchmark data: where a user's data is, in the order the user gets it.

A benchmark folder (`bfcl_v3`, `acebench`, ...) is looked for under, in order: `$ENVSCHED_DATA` as it was
when pytest started (tests/conftest.py clears it for the code under test), the folder that
`python -m envsched_lightning.data fetch` fills by default, and `../shared/data` next to the repository.
tau-bench's official task lists also come from the pinned copy in tests/envs/data, unpacked by the fetch
command. A test gets a data root holding just the folders it names (links to where each was found),
so what else lies in the user's folder (BFCL v4 next to v3, say) cannot change which data a test reads.
A test whose folders are not found anywhere is skipped with the command that fetches them.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from envsched_lightning.data import DATA_ENV, SOURCES, cache_data_root, fetch, source_for

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"  # the CI machine's copy, laid out as the fetch command lays it out
PINNED_TAU_TASKS = REPO / "tests" / "envs" / "data" / "tau_bench_tasks_59a200c6.tar.gz"
FOLDERS = tuple(source.folder for source in SOURCES.values())  # every folder the fetch command writes
MISSING_DATA = "benchmark data that is not here"  # in every skip for missing data (the suite's summary counts them)


def _candidate_roots() -> tuple[Path, ...]:
    """The user's data roots, read once at import: before any test's monkeypatch changes the environment."""
    roots = [Path(os.environ[DATA_ENV]).expanduser()] if os.environ.get(DATA_ENV) else []
    roots += [cache_data_root(), SHARED_DATA]
    return tuple(dict.fromkeys(r.resolve() for r in roots))


CANDIDATE_ROOTS = _candidate_roots()


def find(folder: str) -> Path | None:
    """The first `folder` under the candidate roots, if any (tau_bench_tasks: else None; see `root_with`)."""
    return next((root / folder for root in CANDIDATE_ROOTS if (root / folder).is_dir()), None)


def missing(*folders: str) -> list[str]:
    """The folders of `folders` that no candidate root holds (tau_bench_tasks never: its pinned copy is here)."""
    return [f for f in folders if f != "tau_bench_tasks" and find(f) is None]


def missing_reason(*folders: str) -> str:
    """A skip reason naming the folders missing and the one command that fetches them."""
    lost = missing(*folders) or list(folders)
    sources = " ".join(dict.fromkeys(source_for(f) for f in lost))
    return f"needs {MISSING_DATA} ({', '.join(lost)}): run {fetch_command(sources)}"


def fetch_command(sources: str) -> str:
    return f"python -m envsched_lightning.data fetch {sources} (or set {DATA_ENV}=<folder>)"


def needs(*folders: str) -> pytest.MarkDecorator:
    """Skip unless every named benchmark folder is found."""
    return pytest.mark.skipif(bool(missing(*folders)), reason=missing_reason(*folders))


_VIEWS: dict[tuple[str, ...], Path] = {}
_SCRATCH: list[Path] = []


def _scratch() -> Path:
    if not _SCRATCH:
        _SCRATCH.append(Path(tempfile.mkdtemp(prefix="envsched-test-data-")))
        atexit.register(shutil.rmtree, _SCRATCH[0], True)  # removes the links, never what they point at
    return _SCRATCH[0]


def _pinned_tau_tasks() -> Path:
    pinned = _scratch() / "pinned"
    if not (pinned / "tau_bench_tasks").is_dir():
        fetch("tau_bench_tasks", pinned, archive=PINNED_TAU_TASKS, quiet=True)
    return pinned / "tau_bench_tasks"


def root_with(*folders: str) -> Path:
    """A data root holding those of `folders` that are found (linked, not copied), and nothing else.
    Tests whose folders are missing are skipped by `needs` or `data_root`; this one never skips."""
    key = tuple(sorted(set(folders)))
    if key not in _VIEWS:
        view = _scratch() / ("root-" + "-".join(key) if key else "root")
        view.mkdir(exist_ok=True)
        for folder in key:
            found = find(folder) or (_pinned_tau_tasks() if folder == "tau_bench_tasks" else None)
            if found is not None and not (view / folder).exists():
                (view / folder).symlink_to(found, target_is_directory=True)
        _VIEWS[key] = view
    return _VIEWS[key]


def data_root(*folders: str) -> Path:
    """`root_with(*folders)`, or skip the calling test (or fixture) when one of them is not found."""
    if missing(*folders):  # reported at the test's own line, as a skipif mark is
        raise pytest.skip.Exception(missing_reason(*folders), _use_item_location=True)
    return root_with(*folders)


def config_folders(stem: str, node) -> tuple[str, ...]:
    """The benchmark folders the environment config `conf/env/<stem>.yaml` (loaded as `node`) reads."""
    if "data_dir" not in node:
        return ()
    if stem.startswith("bfcl_multi_turn_") and "category" in node:
        return ("bfcl_v4",)  # miss_func, miss_param, long_context: v4 data only
    if stem.startswith("bfcl_"):
        return ("bfcl_v3",)
    if stem.startswith("acebench_"):
        return ("acebench",)
    return ("tau_bench", "tau_bench_tasks") if "tasks" in node else ("tau_bench",)
