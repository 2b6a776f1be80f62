"""A resume takes its run's scheduler, seed, logger and env from the run's config_resolved.yaml, read as data only."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from envsched_lightning.console import RunConfigError

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # train.py is a script at the repository root
from train import command_line  # noqa: E402

from tests.run_configs import compose_cfg  # noqa: E402

ENVS = "env=[banking,calendar,messaging]"


def run_folder(tmp_path: Path, *overrides: str, edit=None) -> str:
    """A run folder as train.py leaves it (its resolved config beside checkpoints/); the checkpoint's path."""
    cfg = compose_cfg("train", f"output_dir={tmp_path / 'run'}", *overrides)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    if edit is not None:
        edit(resolved)
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    OmegaConf.save(resolved, tmp_path / "run" / "config_resolved.yaml")
    return str(tmp_path / "run" / "checkpoints" / "last.ckpt")


def test_a_resume_takes_the_runs_scheduler_seed_logger_and_envs(tmp_path, capsys):
    ckpt = run_folder(tmp_path, "scheduler=random", "seed=3", "logger=none")
    argv = command_line(["train.py", "--cfg", "job", f"ckpt_path={ckpt}", "steps=4"])
    carried = ["scheduler=random", "seed=3", "logger=none", ENVS]
    assert argv == ["train.py", "--cfg", "job", *carried, f"ckpt_path={ckpt}", "steps=4"]
    source = tmp_path / "run" / "config_resolved.yaml"
    assert capsys.readouterr().out == f"resuming with the run's {' '.join(carried)} (from {source})\n"


def test_what_the_command_line_sets_is_kept(tmp_path):
    ckpt = run_folder(tmp_path, "scheduler=random", "seed=3")
    argv = command_line(["train.py", f"ckpt_path={ckpt}", "seed=5", "logger=none", "scheduler=random", "env=[banking]"])
    assert argv == ["train.py", f"ckpt_path={ckpt}", "seed=5", "logger=none", "scheduler=random", "env=[banking]"]


def test_another_scheduler_is_refused_with_the_override_that_resumes(tmp_path):
    ckpt = run_folder(tmp_path, "scheduler=random")
    with pytest.raises(RunConfigError, match=r"^scheduler=envsched: ckpt_path=.* holds the state of the run's scheduler "
                                             r".*config_resolved.yaml\); resume it with scheduler=random"):  # fmt: skip
        command_line(["train.py", f"ckpt_path={ckpt}", "scheduler=envsched"])
    argv = command_line(["train.py", f"ckpt_path={ckpt}", "scheduler=envsched", "resume_without_scheduler=true"])
    assert "scheduler=random" not in argv  # a fresh scheduler, asked for


def test_no_run_config_carries_nothing(tmp_path):
    argv = ["train.py", f"ckpt_path={tmp_path}/elsewhere/checkpoints/last.ckpt"]
    assert command_line(argv) == argv


def forge(key: str, value):
    def edit(resolved: dict) -> None:
        node = resolved
        *path, last = key.split(".")
        for part in path:
            node = node[part]
        node[last] = value

    return edit


@pytest.mark.parametrize(
    ("key", "value", "refusal"),
    [
        ("scheduler.name", "${oc.env:HOME}", r"scheduler.name='\$\{oc.env:HOME\}' is none of conf/scheduler/"),
        ("scheduler.name", "builtins.exec", "scheduler.name='builtins.exec' is none of conf/scheduler/"),
        ("seed", "${oc.env:HOME}", r"seed='\$\{oc.env:HOME\}' is not an int"),
        ("logger", {"csv": {}, "spy": {"_target_": "builtins.exec"}}, r"logger with \['csv', 'spy'\] matches none"),
        ("env.banking._target_", "builtins.exec", r"env.banking \(_target_='builtins.exec'\) is no conf/env/ environment"),
        ("env", {"evil": {"_target_": "os.system"}}, "env.evil .* is no conf/env/ environment"),
    ],
)
def test_a_forged_run_config_is_refused_by_key_and_never_instantiated(tmp_path, key, value, refusal):
    """The file lies beside a checkpoint that may come from anywhere: only checked names and numbers leave it."""
    ckpt = run_folder(tmp_path, edit=forge(key, value))
    with pytest.raises(RunConfigError, match=rf"config_resolved.yaml: {refusal}.*refused"):
        command_line(["train.py", f"ckpt_path={ckpt}"])


def test_a_logger_is_carried_by_name_never_by_its_values(tmp_path):
    ckpt = run_folder(tmp_path, "logger=csv", edit=forge("logger.csv._target_", "builtins.exec"))
    argv = command_line(["train.py", f"ckpt_path={ckpt}"])
    assert "logger=csv" in argv  # conf/logger/csv.yaml builds it: the file's _target_ is not read
