"""Every benchmark `conf/env/*.yaml` (BFCL, ACEBench, tau) instantiates, and a missing data path fails clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from envsched_lightning.envs import env_names
from tests.data_roots import FOLDERS, config_folders, missing, missing_reason, root_with

ROOT = Path(__file__).resolve().parents[2]
DATA = root_with(*FOLDERS)  # every benchmark folder found
CONFIGS = sorted(p for pat in ("bfcl*.yaml", "acebench*.yaml", "tau_*.yaml") for p in (ROOT / "conf" / "env").glob(pat))


V4_ONLY = {f"bfcl_multi_turn_{c}" for c in ("miss_func", "miss_param", "long_context")}


def test_every_config_is_a_registered_environment() -> None:
    assert {p.stem for p in CONFIGS} == {n for n in env_names() if n.startswith(("bfcl_", "acebench_", "tau_"))}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_missing_data_path_names_the_key(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENVSCHED_DATA", raising=False)
    with pytest.raises(Exception, match="data_dir"):
        instantiate(OmegaConf.load(path))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_config_builds_with_data(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folders = config_folders(path.stem, OmegaConf.load(path))
    refused = path.stem in V4_ONLY and missing("bfcl_v4") and not missing("bfcl_v3")  # v3 data only: refused, saying why
    if missing(*folders) and not refused:
        pytest.skip(missing_reason(*folders))
    monkeypatch.setenv("ENVSCHED_DATA", str(DATA))
    if refused:  # built on v4 data in test_multiturn_categories.py
        with pytest.raises(Exception, match="v4 data only"):  # hydra wraps the ValueError
            instantiate(OmegaConf.load(path))
        return
    env = instantiate(OmegaConf.load(path))  # task lists (tau_*_test, ...): tests/envs/test_tau_official.py
    assert env.name == path.stem
