"""Config contracts: every experiment composes, every scheduler yaml builds, the CLI dry run works.

They loop over the files, so a new experiment or scheduler is covered by adding its yaml.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from envsched_lightning.scheduling import Scheduler, TaskSpec

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
SCHEDULERS = sorted(p.stem for p in (CONF / "scheduler").glob("*.yaml"))


def compose_with(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("train", overrides=["output_dir=/nonexistent", *overrides])


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_composes(name):
    cfg = compose_with(f"experiment={name}")
    if cfg.get("evaluate_only"):  # an evaluation (experiment=paper_eval): evaluate.py composes it, train.py refuses it
        assert cfg.env and cfg.paper.suites
        return
    if "sim" in cfg:
        assert cfg.sim.steps > 0
        return
    for group in ("data", "model", "trainer", "scheduler", "env"):
        assert cfg.get(group), f"experiment {name} leaves `{group}` empty"
    assert cfg.data.batch_size >= 1 and cfg.model._target_ and cfg.trainer._target_


def test_tiny_cpu_is_the_default():
    cfg = compose_with()
    assert cfg.trainer.accelerator == "cpu" and "csv" in cfg.logger
    assert cfg.model.policy._target_.endswith("tiny_qwen3_policy")


@pytest.mark.parametrize("name", SCHEDULERS)
def test_every_scheduler_yaml_builds_a_working_scheduler(name):
    cfg = compose_with(f"scheduler={name}")
    specs = [TaskSpec(env, f"t{i}", tools=(f"tool{i % 3}",)) for env in ("a", "b") for i in range(6)]
    sched = instantiate(cfg.scheduler)(specs=specs, seed=0)
    assert isinstance(sched, Scheduler) and sched.name == cfg.scheduler.name
    assert len(set(sched.select(4))) == 4


def test_cfg_job_prints_the_real_experiment():
    out = subprocess.run([sys.executable, "train.py", "experiment=envsched_qwen3_8b", "--cfg", "job", "--resolve"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    for needle in ("load_pretrained_qwen3", "VLLMEngine", "group_size: 8", "WandbLogger", "steps_per_epoch: 10", "steps: 120", "total_steps: 120"):
        assert needle in out.stdout


def test_a_world_takes_a_task_file_without_a_plus(tmp_path):
    """`env.<name>.tasks_path=...` is a key of every built-in world: no `+` needed, and num_tasks caps the file."""
    from envsched_lightning.envs import make_env, save_tasks_jsonl

    path = tmp_path / "bank.jsonl"
    save_tasks_jsonl(path, make_env("banking", num_tasks=9).tasks())
    cfg = compose_with("env=[banking]", f"env.banking.tasks_path={path}", "env.banking.num_tasks=null")
    assert len(instantiate(cfg.env.banking).tasks()) == 9
    cfg = compose_with("env=[banking]", f"env.banking.tasks_path={path}", "env.banking.num_tasks=4")
    assert len(instantiate(cfg.env.banking).tasks()) == 4


def compose_eval(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("evaluate", overrides=["output_dir=/nonexistent", *overrides])


# conf/model/pretrained.yaml as it was before the CPU sizes: what trainer=gpu must still resolve to
GPU_SIZES = {"policy.dtype": "bfloat16", "policy.gradient_checkpointing": True, "policy.attn_implementation": None,
             "policy.lora.top_layers": None, "sampling.max_new_tokens": 1024, "grpo.max_seq_len": 8192,
             "grpo.micro_batch_size": 4, "grpo.num_mini_batches": 4, "tool_schemas": None}  # fmt: skip


def sizes_of(model) -> dict:
    return {key: OmegaConf.select(model, key, default=None) for key in GPU_SIZES}


@pytest.mark.parametrize("experiment", ["tiny_cpu", "smollm2_cpu", "envsched_qwen3_8b"])
def test_model_path_is_taken_without_a_plus(experiment):
    cfg = compose_with(f"experiment={experiment}", "model=pretrained", "model_path=/weights/m")
    assert cfg.model_path == cfg.model.policy.path == "/weights/m"
    assert compose_with().model_path is None  # the tiny default needs none
    cfg = compose_eval("model=pretrained", "model_path=/weights/m")
    assert cfg.model.policy.path == "/weights/m"


def test_the_8b_experiment_keeps_its_weights_default(monkeypatch):
    monkeypatch.setenv("QWEN3_8B_PATH", "/data/Qwen3-8B")
    cfg = compose_with("experiment=envsched_qwen3_8b")
    assert cfg.model.policy.path == cfg.rollout.model_path == "/data/Qwen3-8B"


def test_pretrained_on_cpu_takes_the_cpu_sizes():
    cfg = compose_with("model=pretrained", "model_path=/weights/m")
    assert cfg.trainer.accelerator == "cpu"
    sizes = sizes_of(cfg.model)
    assert sizes["policy.dtype"] == "float32" and sizes["policy.gradient_checkpointing"] is False
    assert sizes["policy.lora.top_layers"] == 8 and sizes["policy.attn_implementation"] == "sdpa_gqa"
    assert sizes["grpo.max_seq_len"] == 1024 and sizes["tool_schemas"] == "auto"
    assert cfg.model.sampling.max_new_tokens == 32  # the experiment (tiny_cpu) still has the last word
    assert compose_with("model=pretrained", "model_path=/m", "experiment=smollm2_cpu").model.sampling.max_new_tokens == 64
    assert compose_with("model=pretrained", "model.policy.dtype=bfloat16").model.policy.dtype == "bfloat16"


@pytest.mark.parametrize("overrides", [("experiment=envsched_qwen3_8b", "model=pretrained"), ("experiment=envsched_qwen3_8b",
                                       "model=pretrained", "trainer=gpu"), ("model=pretrained", "trainer=gpu",
                                       "experiment=paper_eval")])  # fmt: skip
def test_pretrained_on_gpu_keeps_the_gpu_sizes(overrides):
    cfg = compose_with(*overrides)
    assert sizes_of(cfg.model) == GPU_SIZES
    assert sizes_of(compose_eval("model=pretrained").model) == GPU_SIZES  # no trainer group: as on GPU


def test_every_trainer_has_pretrained_sizes():
    trainers = {p.stem for p in (CONF / "trainer").glob("*.yaml")}
    assert trainers <= {p.stem for p in (CONF / "model" / "pretrained_on").glob("*.yaml")}


def test_the_cpu_sizes_are_said_in_one_line():
    from envsched_lightning.models.sizes import sizes_line

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=["model=pretrained", "model.policy.dtype=bfloat16"], return_hydra_config=True)
        gpu = compose("train", overrides=["model=pretrained", "trainer=gpu"], return_hydra_config=True)
    line = sizes_line(cfg, cfg.hydra.runtime.choices)
    assert line.startswith("model=pretrained on trainer=cpu (conf/model/pretrained_on/cpu.yaml): ") and "\n" not in line
    assert "model.policy.lora.top_layers=8" in line and "model.policy.gradient_checkpointing=false" in line
    assert "model.policy.dtype=bfloat16 (overridden; cpu size float32)" in line
    assert sizes_line(gpu, gpu.hydra.runtime.choices) is None
    assert sizes_line(compose_with(), {"model": "tiny_qwen3"}) is None


def test_the_quick_real_model_check_is_smollm2_cpu_cut_short():
    full, quick = compose_with("experiment=smollm2_cpu"), compose_with("experiment=smollm2_quick")
    assert quick.steps <= 5 and quick.model.warm_start.steps < full.model.warm_start.steps and quick.data.eval_per_env <= 2
    assert quick.data.steps_per_epoch == quick.steps  # one evaluation, after the last step
    assert quick.model.policy == full.model.policy and quick.model.grpo == full.model.grpo
    assert quick.env == full.env and quick.model_path == full.model_path
