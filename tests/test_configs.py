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
