"""Shared by the agreement tests: the BFCL data of each version they compare on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(os.environ.get("ENVSCHED_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")


@pytest.fixture(scope="session")
def bfcl_v4_root(tmp_path_factory) -> Path:
    """A data root holding bfcl_v4/: the data folder's, else fetched once as `python -m envsched_lightning.data
    fetch bfcl` fetches it (the pinned bfcl-eval wheel, through pip)."""
    if (DATA / "bfcl_v4").is_dir():
        return DATA
    from envsched_lightning.data import fetch

    root = tmp_path_factory.mktemp("data")
    fetch("bfcl", root, quiet=True)
    return root


@pytest.fixture(scope="module", params=["v3", "v4"])
def data_root(request, bfcl_v4_root) -> tuple[Path, str]:
    """(data root, version): v3 from the data folder, v4 from `bfcl_v4_root`."""
    if request.param == "v3":
        if not (DATA / "bfcl_v3").is_dir():
            pytest.skip(f"benchmark data not found at {DATA}")
        return DATA, "v3"
    return bfcl_v4_root, "v4"
