"""A mistyped config option or key on the command line: one line naming what exists, nearest first (real Hydra, conf/)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envsched_lightning.config_errors import check_command_line, command_line_overrides
from envsched_lightning.console import RunConfigError

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.mark.parametrize(
    ("override", "group", "meant"),
    [
        ("env=[bankin]", "env", "banking"),
        ("env=[banking,calender]", "env", "calendar"),
        ("model=tiny_qwen", "model", "tiny_qwen3"),
        ("rollout=hff", "rollout", "hf"),
        ("logger=cvs", "logger", "csv"),
        ("trainer=cpuu", "trainer", "cpu"),
        ("scheduler=rando", "scheduler", "random"),
        ("experiment=tiny_cp", "experiment", "tiny_cpu"),
        ("callbacks=[defalt]", "callbacks", "default"),
    ],
)
def test_an_unknown_option_of_a_group_lists_the_groups_options(override, group, meant):
    with pytest.raises(RunConfigError) as err:
        check_command_line(CONF, "train", [override])
    message = str(err.value)
    wrong = override.split("=")[1].strip("[]").split(",")[-1]
    assert message.startswith(f"{override}: conf/{group}/ has no {wrong}.yaml; did you mean {meant}? ")
    assert message.endswith(f"the options of {group}: {', '.join(options(group))}")


@pytest.mark.parametrize(
    ("override", "meant", "where"),
    [
        ("data.batchsize=4", "data.batch_size", "data"),
        ("scheduler.k_intr=3", "scheduler.k_intra", "scheduler"),
        ("model.grpo.grop_size=2", "model.grpo.group_size", "model.grpo"),
        ("model.sampling.max_new_token=8", "model.sampling.max_new_tokens", "model.sampling"),
        ("stpes=3", "steps", "the top level"),
        ("schedulr.k_intra=3", "scheduler", "the top level"),
    ],
)
def test_an_unknown_key_names_the_nearest_keys_instead_of_a_plus(override, meant, where):
    """Hydra's own hint (`+data.batchsize=4`) adds a key nothing reads; the keys listed are the composed config's."""
    with pytest.raises(RunConfigError, match=rf"did you mean {meant}[ ?]") as err:
        check_command_line(CONF, "train", ["data.steps_per_epoch=2", override])
    assert str(err.value).startswith(f"{override}: {where} has no key ")
    assert f"the keys of {where}: " in str(err.value) and "+" not in str(err.value)


def test_the_keys_offered_are_read_from_the_config_itself(tmp_path):
    """A key added to conf/train.yaml is offered with no change to the code."""
    conf = shutil.copytree(CONF, tmp_path / "conf")
    (conf / "train.yaml").write_text((conf / "train.yaml").read_text() + "notify_email: null\n")
    with pytest.raises(RunConfigError, match=r"^notify_emial=a@b: the top level has no key 'notify_emial'; did you mean notify_email"):
        check_command_line(conf, "train", ["notify_emial=a@b"])
    with pytest.raises(RunConfigError, match=r"^model_pth=/m: the top level has no key 'model_pth'; did you mean model_path"):
        check_command_line(CONF, "train", ["model_pth=/m"])  # conf/train.yaml's own model_path


def test_a_value_given_keys_and_a_second_typo_are_named_too():
    with pytest.raises(RunConfigError, match=r"^data.batch_size.x=3: data.batch_size is a single value \(6\)"):
        check_command_line(CONF, "train", ["data.batch_size.x=3"])
    with pytest.raises(RunConfigError, match=r"^data.batchsize=4: .*did you mean data.batch_size"):  # the other typo left out
        check_command_line(CONF, "train", ["data.batchsize=4", "stpes=2"])


def test_a_valid_line_composes_and_other_lines_are_left_to_hydra():
    cfg = check_command_line(CONF, "train", ["scheduler=random", "seed=3", "hydra.run.dir=/tmp/x"])
    assert cfg.scheduler.name == "random" and cfg.seed == 3
    assert command_line_overrides(["--cfg", "job", "seed=1"]) == ["seed=1"]
    assert command_line_overrides(["-m", "scheduler=random,plr"]) is None  # a sweep: Hydra composes each job
    assert command_line_overrides(["--help"]) is None


@pytest.mark.parametrize(
    ("script", "override", "message"),
    [
        ("train.py", "env=[bankin]", "error: env=[bankin]: conf/env/ has no bankin.yaml; did you mean banking?"),
        ("evaluate.py", "env=[bankin]", "error: env=[bankin]: conf/env/ has no bankin.yaml; did you mean banking?"),
        ("train.py", "data.batchsize=4", "error: data.batchsize=4: data has no key 'batchsize'; did you mean data.batch_size"),
        ("evaluate.py", "limt=2", "error: limt=2: the top level has no key 'limt'; did you mean limit"),
    ],
)
def test_the_entry_points_print_the_message_alone_with_status_2(tmp_path, script, override, message):
    proc = subprocess.run([sys.executable, script, override, f"hydra.run.dir={tmp_path}/run"], capture_output=True,
                          text=True, timeout=300, cwd=REPO)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr + proc.stdout and not (tmp_path / "run").exists()
