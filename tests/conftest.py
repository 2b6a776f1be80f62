import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

# PyG writes generated propagate code into the temp dir; keep it inside the repo's scratch folder.
os.environ.setdefault("TMPDIR", str(REPO / ".tmp"))
Path(os.environ["TMPDIR"]).mkdir(parents=True, exist_ok=True)
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"benchmark data not found at {SHARED_DATA}")
    return SHARED_DATA
