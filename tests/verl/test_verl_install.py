"""The install path keeps verl's pins: every requirement verl declares still holds in this environment.

scripts/verl_check.sh installs verl and this project as docs/adapters.md tells users to
(``-c scripts/verl_constraints.txt``, the project itself with ``--no-deps``), so a pin broken by
that recipe shows up here.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distribution, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

CONSTRAINTS = Path(__file__).resolve().parents[2] / "scripts" / "verl_constraints.txt"


def _installed(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _requirements(lines) -> list[Requirement]:
    reqs = [Requirement(line.split("#")[0]) for line in lines if line.split("#")[0].strip()]
    return [r for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]  # no extras


def test_verl_requirements_hold():
    reqs = _requirements(distribution("verl").requires or [])
    assert any(r.name == "transformers" for r in reqs)
    have = {r.name: _installed(r.name) for r in reqs}
    broken = [f"{r} (have {have[r.name]})" for r in reqs
              if have[r.name] is None or not r.specifier.contains(have[r.name], prereleases=True)]  # fmt: skip
    assert broken == []


@pytest.mark.parametrize("req", _requirements(CONSTRAINTS.read_text().splitlines()), ids=str)
def test_constraints_hold(req):
    have = _installed(req.name)
    assert have is not None and req.specifier.contains(have, prereleases=True), f"{req.name} {have}"


def test_constraints_cover_verls_version_bounds():
    """The file states every version bound verl declares, so pip cannot move any of them."""
    constrained = {r.name: r.specifier for r in _requirements(CONSTRAINTS.read_text().splitlines())}
    for r in _requirements(distribution("verl").requires or []):
        if str(r.specifier):
            assert constrained.get(r.name) == r.specifier, r.name
