import os
import re
import socket
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"

# Suites that need a stack of their own (a virtual environment, a wheel, upstream code), each run by
# the target named here. The default suite (`make test`, `pytest`) leaves them out; naming one
# (`pytest tests/vllm`) collects it.
STACK_SUITES = {
    "bfcl": "make test-bfcl",  # our BFCL checkers against the official bfcl-eval code, in .venv-bfcl
    "vllm": "make test-vllm",  # real vLLM (its CPU build) against the training model, in .venv-vllm
    "verl": "make test-verl",  # the verl adapter in verl's own trainer loop, in .venv-verl
    "smollm2": "make test-smollm2",  # SmolLM2-135M-Instruct from its PyPI wheel
    "official": "python tests/official/<check>.py SNAPSHOT",  # differential scripts over an upstream checkout
}

# PyG writes generated propagate code into the temp dir; keep it inside the repo's scratch folder.
os.environ.setdefault("TMPDIR", str(REPO / ".tmp"))
Path(os.environ["TMPDIR"]).mkdir(parents=True, exist_ok=True)
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

from envsched_lightning.data import SOURCES  # noqa: E402
from tests.data_roots import MISSING_DATA, fetch_command  # noqa: E402  (reads $ENVSCHED_DATA before any test runs)


def _stack_suite(path: Path) -> str | None:
    """The stack suite `path` lies in (a folder of STACK_SUITES directly under tests/), if any."""
    path = path.resolve()
    parts = path.relative_to(TESTS).parts if path.is_relative_to(TESTS) else ()
    return parts[0] if parts and parts[0] in STACK_SUITES else None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave a stack suite out unless a command-line argument names it or a path inside it."""
    suite = _stack_suite(collection_path)
    if suite is None:
        return None
    named = (config.invocation_params.dir / arg.split("::")[0] for arg in config.args)
    return not any(_stack_suite(path) == suite for path in named)


@pytest.fixture(autouse=True)
def no_default_benchmark_data(request, monkeypatch, tmp_path_factory) -> None:
    """Benchmark environments without `data_dir` read the default data root (`$ENVSCHED_DATA`, else the
    user cache folder that `python -m envsched_lightning.data fetch` fills): every test of the default
    suite starts with an empty one, so what the code under test sees never depends on what this machine
    fetched before. Tests that need benchmark data name it (tests/data_roots.py, which read the user's
    data roots when pytest started) and pass it on. The stack suites read the data root their target
    gives them."""
    if _stack_suite(request.path) is not None:
        return
    monkeypatch.delenv("ENVSCHED_DATA", raising=False)
    monkeypatch.setenv("ENVSCHED_DATA_CACHE", str(tmp_path_factory.mktemp("no_default_data")))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """How many tests were skipped for benchmark data that is not here, and the one command that gets it."""
    reasons = [report.longrepr[2] for report in terminalreporter.stats.get("skipped", [])
               if isinstance(report.longrepr, (tuple, list)) and MISSING_DATA in report.longrepr[2]]  # fmt: skip (a list from xdist)
    if not reasons:
        return
    named = {s for reason in reasons if (m := re.search(r"data fetch (.+?) \(or set", reason)) for s in m.group(1).split()}
    sources = " ".join(s for s in SOURCES if s in named)
    terminalreporter.write_sep("=", "benchmark data", yellow=True)
    tests = "1 test needs" if len(reasons) == 1 else f"{len(reasons)} tests need"
    terminalreporter.write_line(f"{tests} {MISSING_DATA}: run {fetch_command(sources)}")


@pytest.fixture
def repo_env() -> dict[str, str]:
    """This process's environment with the repository importable: what a probe script started as
    a subprocess needs to import `envsched_lightning`."""
    return os.environ | {"PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


@pytest.fixture
def free_port() -> int:
    """A TCP port free on 127.0.0.1 now: the rendezvous of a multi-process test's process group."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def run_together() -> Callable[..., list[tuple[int, str]]]:
    """Run commands as concurrent processes from the repository root and return each one's
    (return code, stdout and stderr merged) once all have ended; any still running after
    `timeout` seconds is killed and the test fails with `subprocess.TimeoutExpired`."""

    def run(cmds: Sequence[Sequence[str]], env: Mapping[str, str], timeout: float) -> list[tuple[int, str]]:
        procs = [subprocess.Popen(list(cmd), cwd=REPO, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True) for cmd in cmds]  # fmt: skip
        try:
            outputs = [p.communicate(timeout=timeout)[0] for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        return [(p.returncode, out) for p, out in zip(procs, outputs)]

    return run
