"""Built-in worlds, built once per session from their `conf/env/*.yaml` (so a new world is covered
by adding its file and yaml, with no test edits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envsched_lightning.envs import Environment
from tests.envs.helpers import build, builtin_yamls, package_yamls

@pytest.fixture(params=builtin_yamls(), ids=lambda p: p.stem)
def world(request: pytest.FixtureRequest) -> Environment:
    return build(request.param)


@pytest.fixture(scope="session")
def builtin_yaml_paths() -> list[Path]:
    return builtin_yamls()


@pytest.fixture(scope="session")
def package_yaml_paths() -> list[Path]:
    return package_yamls()


@pytest.fixture(params=package_yamls(), ids=lambda p: p.stem)
def package_world(request: pytest.FixtureRequest) -> Environment:
    """Every world in the worlds package, shipped or added by a user."""
    return build(request.param)


@pytest.fixture(scope="session")
def all_worlds() -> list[Environment]:
    return [build(p) for p in builtin_yamls()]
