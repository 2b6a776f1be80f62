"""`train.py` end to end on the real vLLM engine: the 8B experiment's path on the tiny checkpoint.

What `make rehearsal` runs, at a smaller batch, plus what a user reads: the run exits cleanly,
with no traceback from the engine's shutdown (vLLM ends its own single-process group at exit;
train.py must leave that group alone)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("ENVSCHED_DATA") or REPO.parent / "shared" / "data")
# the experiment evaluates tau-bench's own test lists, which come from GitHub; without them they are left out
NO_TAU_TASKS = [] if (DATA / "tau_bench_tasks").is_dir() else ["~data.eval_envs.tau_retail_test", "~data.eval_envs.tau_airline_test"]


@pytest.mark.parametrize("lora", ["experiment's", "none (full weights)"])
def test_a_vllm_training_run_finishes_without_a_shutdown_traceback_or_adapter_files(checkpoint_dir, tmp_path, lora):
    """Weights reach vLLM in memory: nothing is written to the temporary folder (the adapter folder of
    `rollout.weight_sync=disk` would be `envsched-lora-*` there). Without LoRA, vLLM serves the full weights."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    args = [sys.executable, str(REPO / "train.py"), "experiment=envsched_qwen3_8b", f"model_path={checkpoint_dir}",
            "trainer=cpu", "model.policy.dtype=float32", "steps=1", "data.steps_per_epoch=1", "data.batch_size=4",
            "model.grpo.group_size=2", "data.eval_per_env=1", "env=[banking,calendar]", f"hydra.run.dir={tmp_path}", f"output_dir={tmp_path}",
            "data.eval_env_tasks=1", *NO_TAU_TASKS, "data.eval_envs.acebench_agent_multi_step.max_turns=4",
            "data.eval_envs.acebench_agent_multi_turn.max_turns=4"]  # fmt: skip
    if lora != "experiment's":
        args.append("model.policy.lora=null")
    run = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=900, env={**os.environ, "TMPDIR": str(scratch)})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "step 1/1 | reward " in run.stdout and "done: 1 GRPO steps" in run.stdout
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert not list(scratch.glob("envsched-lora-*"))
    assert ("PeftModel" in run.stdout) == (lora == "experiment's")  # the model summary names what trained
