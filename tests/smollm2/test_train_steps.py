"""Two GRPO steps of the real model through `train.py experiment=smollm2_cpu`, on each engine.

`make test-smollm2` runs the transformers engine in .venv; `make test-smollm2-vllm` runs the same
test file in .venv-vllm, where the vLLM case runs (each case is skipped where its engine is absent).
The SmolLM2 folder is a Llama model: it trains through the same loader as a Qwen3 folder, and the
Qwen3-only loader refuses it by name.
"""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from envsched_lightning.models import CheckpointMismatch, load_pretrained_qwen3

REPO = Path(__file__).resolve().parents[2]
SHORT = ["steps=2", "data.steps_per_epoch=2", "data.eval_per_env=2", "model.warm_start.steps=2",
         "trainer.num_sanity_val_steps=0"]  # fmt: skip
ENGINES = {
    "hf": [],
    "vllm": ["rollout=vllm", "model.grpo.reuse_sampling_logprobs=false", "rollout.max_model_len=1024",
             "+rollout.enforce_eager=true"],
    "vllm, merged adapter": ["rollout=vllm", "rollout.merge_lora=true", "model.grpo.reuse_sampling_logprobs=false",
                             "rollout.max_model_len=1024", "+rollout.enforce_eager=true"],
}  # fmt: skip


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_two_grpo_steps_of_the_real_model(engine, smollm2_dir, tmp_path):
    if engine.startswith("vllm") and importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed here: make test-smollm2-vllm runs this case in .venv-vllm")
    if engine == "hf" and importlib.util.find_spec("vllm") is not None:
        pytest.skip("the transformers case runs in .venv (make test-smollm2)")
    args = [sys.executable, str(REPO / "train.py"), "experiment=smollm2_cpu", f"model_path={smollm2_dir}", *SHORT,
            *ENGINES[engine], f"hydra.run.dir={tmp_path}", f"output_dir={tmp_path}"]  # fmt: skip
    env = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CPU_KVCACHE_SPACE": "2"}
    import os

    run = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=1500, env={**os.environ, **env})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "tool calls: prompt (detected: the chat template ignores tools=)" in run.stdout
    assert "step 2/2 | reward " in run.stdout and "done: 2 GRPO steps" in run.stdout, run.stdout[-2000:]
    rows = list(csv.DictReader(next(tmp_path.glob("csv/version_*/metrics.csv")).open()))
    rollouts = [float(r["rollout/num_rollouts"]) for r in rows if r.get("rollout/num_rollouts")]
    assert rollouts == [32.0, 32.0]  # 8 tasks x G = 4, each step
    parse_rates = [float(r["rollout/parse_error_rate"]) for r in rows if r.get("rollout/parse_error_rate")]
    assert len(parse_rates) == 2 and all(0.0 <= p <= 1.0 for p in parse_rates)
    assert (tmp_path / "checkpoints" / "last.ckpt").is_file()
    if engine.startswith("vllm"):  # vLLM sampled the policy being trained, at step 2 too (after a sync)
        diffs = [float(r["rollout/logprob_diff_mean"]) for r in rows if r.get("rollout/logprob_diff_mean")]
        assert len(diffs) == 2 and max(diffs) < 1e-3, diffs


def test_the_qwen3_loader_refuses_a_llama_folder(smollm2_dir):
    with pytest.raises(CheckpointMismatch, match="'llama' model, not 'qwen3'"):
        load_pretrained_qwen3(str(smollm2_dir), dtype="float32")
