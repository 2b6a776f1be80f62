"""`train(cfg)` end to end: real Trainer, tiny Qwen3, the DataModule and every scheduling callback."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # train.py is a script at the repository root, not a package module
from train import train  # noqa: E402

from tests.run_configs import CONF, TINY, tiny_cfg  # noqa: E402

def decisions(run_dir: Path) -> dict[int, list[dict]]:
    lines = (Path(run_dir) / "sched_decisions.jsonl").read_text().splitlines()
    return {rec["step"]: rec["rows"] for rec in map(json.loads, lines)}


def test_tiny_run_holds_quotas_and_updates_once_per_step(tmp_path):
    out = train(tiny_cfg(tmp_path, "model.grpo.ppo_epochs=2", "model.grpo.num_mini_batches=2"))
    dm, trainer = out["objects"]["datamodule"], out["objects"]["trainer"]
    steps = decisions(out["log_dir"])
    assert sorted(steps) == [1, 2, 3]  # GRPO steps as metrics.csv and the console count them
    for rows in steps.values():  # max_share 0.34 of 3 tasks: one task per environment
        assert sorted(r["env"] for r in rows) == ["banking", "calendar", "messaging"]
    quota = next(cb for cb in trainer.callbacks if type(cb).__name__ == "EnvQuotaCallback")
    assert quota.checked == 3 and dm.scheduler.quota is quota.constraint
    # one scheduler update per training step, although each step made up to 4 optimiser steps
    assert dm.step == dm.scheduler.history.step == 3
    assert trainer.global_step >= 3 or out["metrics"]["train/skipped"] == 1.0
    assert Path(out["heatmap"]).is_file() and Path(out["checkpoint"]).is_file()
    assert {"sched/env_count/banking", "rollout/reward_mean", "eval/score"} <= set(out["metrics"])
    # envsched's environment x environment effect estimate, drawn beside the heatmap with its numbers
    effects = json.loads((Path(out["log_dir"]) / "sched_env_effects.json").read_text())
    assert effects["step"] == 3 and effects["env_names"] == ["banking", "calendar", "messaging"]
    assert len(effects["effect"]) == 3 and effects["env_factor"] == [1.0, 1.0, 1.0]  # 3 steps: nothing known
    assert (Path(out["log_dir"]) / "sched_env_effects.png").is_file()


def test_dynamic_sampling_refills_from_the_scheduler_and_counts_every_rollout(tmp_path):
    """DAPO dynamic sampling with the app's scheduler: a nearly untrained model gives mostly
    zero-variance groups, so steps refill; every round is a select + update, every rollout counted."""
    out = train(tiny_cfg(tmp_path, "model.grpo.dynamic_sampling=2"))
    dm, metrics = out["objects"]["datamodule"], out["metrics"]
    steps = decisions(out["log_dir"])
    assert sorted(steps) == [1, 2, 3] and dm.step == 3  # GRPO steps, not rounds
    rounds = [1 + max(r.get("round", 0) for r in rows) for rows in steps.values()]
    assert max(rounds) > 1 and dm.scheduler.history.step == sum(rounds)  # the scheduler heard every round
    last = steps[3]
    assert len(last) == len(dm.last_groups) and metrics["rollout/dynamic_rounds"] == rounds[-1] - 1
    assert metrics["rollout/num_rollouts"] == 2 * len(dm.last_groups)  # the refills' rollouts are counted
    informative = sum(g.informative for g in dm.last_groups)
    assert metrics["train/groups"] == min(informative, 3)  # a batch of at most B informative groups
    assert rounds[-1] == 3 or informative >= 3  # refilling stops only when full or out of rounds


def test_wandb_offline_run_holds_decisions_table_heatmap_and_config(tmp_path, monkeypatch):
    """Also the `scheduler=random` path: the callbacks install their constraints on any scheduler."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    import wandb

    out = train(tiny_cfg(tmp_path, "logger=wandb", "scheduler=random", "~callbacks.model_checkpoint"))
    experiment = out["objects"]["trainer"].logger.experiment
    assert (experiment.group, experiment.job_type) == ("random", "train")  # the workspace groups seeds by scheduler
    run_config = experiment.config
    assert run_config["data"]["batch_size"] == 3 and run_config["data"]["envs"]["banking"]["num_tasks"] == 6
    wandb.finish()  # what the interpreter's exit does after `python train.py`: flush config and files
    (run,) = (tmp_path / "wandb").glob("offline-run-*")
    media = run / "files" / "media"
    assert list((media / "table" / "sched").glob("decisions_*.table.json"))
    assert list((media / "images" / "sched").glob("heatmap_*.png"))
    assert Path(out["heatmap"]).is_file()  # the PNG also lies in the run directory
    from envsched_lightning.compare import read_run

    assert read_run(tmp_path).scheduler == "random"  # the CSV log is kept beside W&B's, for `compare`
    readable = (run / "files" / "config_resolved.yaml").read_text()  # a file in the run, synced with it
    assert "envsched_datamodule.EnvSchedDataModule" in readable and "batch_size: 3" in readable
    (log,) = run.glob("run-*.wandb")  # an offline run keeps its config in the run log until `wandb sync`
    # the W&B service process may still be writing the log when `finish` returns on a loaded machine
    deadline = time.monotonic() + 60
    while b"envsched_datamodule.EnvSchedDataModule" not in log.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert b"envsched_datamodule.EnvSchedDataModule" in log.read_bytes()


def test_resumed_run_selects_what_the_uninterrupted_run_selected(tmp_path):
    common = ("data.steps_per_epoch=2", "model.warm_start.steps=20")  # warm enough for non-zero rewards
    full = train(tiny_cfg(tmp_path / "full", *common, "steps=4"))
    first = train(tiny_cfg(tmp_path / "part", *common, "steps=2"))
    resumed = train(tiny_cfg(tmp_path / "resumed", *common, "steps=4", f"ckpt_path={first['checkpoint']}"))
    want, got = decisions(full["log_dir"]), decisions(resumed["log_dir"])
    assert sorted(got) == [3, 4]  # the resumed run goes on counting
    for step in (3, 4):
        assert [(r["env"], r["task_id"]) for r in got[step]] == [(r["env"], r["task_id"]) for r in want[step]]
        assert [r["priority"] for r in got[step]] == [r["priority"] for r in want[step]]  # scheduler state, bit for bit
        # the same rewards too: model, optimiser and RNG states came back with the scheduler
        assert [r["reward_mean"] for r in got[step]] == [r["reward_mean"] for r in want[step]]


@pytest.mark.parametrize(
    ("override", "match"),
    [
        ("scheduler.name=nope", "scheduler: unknown scheduler 'nope'"),
        ("callbacks.env_quota.min_share=0.5", "callbacks.env_quota: quota min_share values sum to 1.500 > 1"),
        ("data.batch_size=99", "data.batch_size=99 exceeds the training task pool"),
        ("model.sampling.temperature=-1", "model.sampling: temperature must be a finite number >= 0"),
        ("model.sampling.max_new_tokens=-5", "model.sampling: max_new_tokens must be an int >= 1"),
        ("model.grpo.max_seq_len=8", r"model.grpo.max_seq_len \(8\) must exceed model.sampling.max_new_tokens"),
        ("model.grpo.max_grad_norm=-1", "model.grpo: max_grad_norm must be > 0"),
        ("scheduler.k_intra=-3", "scheduler: k_intra must be an integer >= 0"),
        ("scheduler.penalty=-1", "scheduler: penalty must be a number >= 0"),
        ("scheduler.coverage=abc", "scheduler: coverage must be a number"),
        ("scheduler=greso,scheduler.p_init=-1", "scheduler: p_init must be a number >= 0.0 and <= 1.0"),
    ],
)
def test_bad_config_fails_before_the_model_is_built(tmp_path, override, match):
    # a model that cannot be built: reaching it would raise a different error
    with pytest.raises(Exception, match=match):
        train(tiny_cfg(tmp_path, *override.split(","), "model._target_=no.such.Module"))
    assert not (tmp_path / "checkpoints").exists()


def test_missing_benchmark_data_path_names_the_key(tmp_path):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=["env=[bfcl_simple]", "env.bfcl_simple.data_dir=null", f"output_dir={tmp_path}",
                                          "model._target_=no.such.Module"])  # fmt: skip
    with pytest.raises(Exception, match="data_dir") as err:
        train(cfg)
    assert "bfcl_simple" in str(err.value)


@pytest.mark.parametrize("content", [b"", b"not a checkpoint", None])
def test_unreadable_or_missing_checkpoints_name_their_path(tmp_path, content):
    ckpt = tmp_path / "bad.ckpt"
    if content is not None:
        ckpt.write_bytes(content)
    with pytest.raises((ValueError, FileNotFoundError), match=f"ckpt_path={ckpt}"):
        train(tiny_cfg(tmp_path / "run", f"ckpt_path={ckpt}", "model._target_=no.such.Module"))


def test_a_checkpoint_without_the_scheduler_state_is_refused_unless_asked(tmp_path):
    import torch

    ckpt = tmp_path / "model_only.ckpt"
    torch.save({"state_dict": {}, "epoch": 0}, ckpt)
    with pytest.raises(ValueError, match="has no EnvSchedDataModule state"):
        train(tiny_cfg(tmp_path / "run", f"ckpt_path={ckpt}", "model._target_=no.such.Module"))
    with pytest.raises(Exception, match="no.such.Module|no_such"):  # accepted: reaches the model
        train(tiny_cfg(tmp_path / "run2", f"ckpt_path={ckpt}", "resume_without_scheduler=true",
                       "model._target_=no.such.Module"))  # fmt: skip


def test_an_env_list_leaving_out_worlds_the_experiment_configures_trains(tmp_path):
    """tiny_cpu (and TINY here) set options for calendar and messaging; env=[banking,airline] drops them."""
    out = train(tiny_cfg(tmp_path, "env=[banking,airline]", "env.airline.num_tasks=6", "steps=1"))
    assert set(out["objects"]["datamodule"].envs) == {"banking", "airline"}
    assert out["checkpoint"]


def test_ddp_with_the_apps_callbacks_and_logger_finishes(tmp_path):
    """Two gloo processes through train.py: every rank joins trainer.log_dir's broadcast, the held-out
    score covers every rank's shard (3 tasks, one per batch: 2 batches on rank 0, 1 on rank 1), and the
    process group is destroyed before exit (else gloo's threads can abort the finished process)."""
    import csv

    args = [sys.executable, str(REPO / "train.py"), "trainer.strategy=ddp", "trainer.devices=2", *TINY,
            "data.val_batch_size=1", f"hydra.run.dir={tmp_path}", f"output_dir={tmp_path}"]  # fmt: skip
    run = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "heatmap: " in run.stdout and (tmp_path / "checkpoints" / "last.ckpt").exists()
    assert "sync_dist" not in run.stderr and "terminate called" not in run.stderr
    rows = list(csv.DictReader(next(tmp_path.glob("csv/version_*/metrics.csv")).open()))
    evals = [r for r in rows if r.get("eval/score")]
    assert [r["step"] for r in evals] == ["0", "3"]  # before training (tiny_cpu's whole sanity check), then every 3
    assert all(r[f"eval/score/{env}"] for r in evals for env in ("banking", "calendar", "messaging"))


def test_a_run_prints_its_progress_and_a_summary(tmp_path, capsys):
    train(tiny_cfg(tmp_path, "steps=2"))
    out = capsys.readouterr().out
    assert "warm start: 2 supervised steps" in out and "warm start done: SFT loss " in out
    assert "training: 2 GRPO steps, evaluating every 3" in out
    assert "step 1/2 | reward " in out and "step 2/2 | reward " in out and "zero-variance groups" in out
    assert "eval after step 2: held-out score" in out  # the run stops mid-epoch and still evaluates
    summary = out.split("\ndone: ")[1]
    assert summary.startswith("2 GRPO steps in ") and "held-out score" in summary
    for env in ("banking", "calendar", "messaging"):  # one summary line per environment
        assert f"\n  {env} " in summary
    assert (tmp_path / "config_resolved.yaml").read_text().startswith("scheduler:")


def test_a_whole_sanity_check_is_the_score_before_training(tmp_path, capsys):
    """num_sanity_val_steps=-1 scores every held-out task after the warm start: the summary's "before"."""
    run = train(tiny_cfg(tmp_path, "steps=2", "trainer.num_sanity_val_steps=-1"))
    out = capsys.readouterr().out
    before = out.index("eval before training: held-out score ")
    assert before < out.index("step 1/2 | reward ")
    first = float(out[before:].split("held-out score ")[1].split()[0])
    summary = out.split("\ndone: ")[1]
    assert f"held-out score {first:.3f} -> " in summary
    # the change, paired by task, with its two-standard-error band over every held-out task
    last = float(summary.split(f"held-out score {first:.3f} -> ")[1].split()[0])
    tasks = len(run["objects"]["datamodule"].pool.held_out)
    change = summary.split("(change ")[1]
    assert float(change.split()[0]) == pytest.approx(last - first, abs=2e-3)
    assert f"(2 s.e. over {tasks} tasks: " in change and ("within noise" in change or "beyond noise" in change)
    train(tiny_cfg(tmp_path / "more", "steps=3", "trainer.num_sanity_val_steps=-1", f"ckpt_path={run['checkpoint']}"))
    assert "eval on resuming at step 2: held-out score " in capsys.readouterr().out  # not "before training"
    import csv  # the resumed run's logs go on counting GRPO steps: its first evaluation at 2, its step at 3

    rows = list(csv.DictReader(next((tmp_path / "more").glob("csv/version_*/metrics.csv")).open()))
    assert [r["step"] for r in rows if r.get("eval/score")] == ["2", "3"]
    assert [r["step"] for r in rows if r.get("rollout/reward_mean")] == ["3"]


def test_a_paired_change_says_whether_it_is_beyond_two_standard_errors():
    from envsched_lightning.evaluation import paired_change

    before = {f"t{i}": 0.0 for i in range(10)}
    moved = paired_change(before, {f"t{i}": 1.0 if i < 8 else 0.0 for i in range(10)})
    assert moved.tasks == 10 and moved.mean == pytest.approx(0.8) and not moved.within_noise
    assert moved.stderr == pytest.approx((0.8 * 0.2 * 10 / 9 / 10) ** 0.5)
    one_task = paired_change(before, {"t0": 1.0, "t1": 0.0, "t2": 0.0, "t3": 0.0})  # 4 shared tasks, one moved
    assert one_task.tasks == 4 and one_task.within_noise and "within noise" in one_task.describe()
    assert paired_change(before, {"other": 1.0}) is None  # nothing scored both times


@pytest.mark.parametrize("steps", [1, 4, 5])
def test_steps_sets_the_number_of_grpo_steps(tmp_path, steps):
    """`steps=N` runs N GRPO steps whatever the evaluation interval (3) and optimiser steps per GRPO step."""
    out = train(tiny_cfg(tmp_path, f"steps={steps}", "model.grpo.ppo_epochs=2", "model.warm_start.steps=0",
                         "~callbacks.scheduling_logger", "~callbacks.model_checkpoint"))  # fmt: skip
    assert out["objects"]["datamodule"].step == steps
    assert "eval/score" in out["metrics"]  # the last, partial epoch is evaluated too


@pytest.mark.parametrize(("override", "match"), [
    ("trainer.max_steps=5", "trainer.max_steps=5 counts optimiser steps .* steps=N"),
    ("trainer.max_epochs=2", "trainer.max_epochs=2: the run's length is steps=N"),
    ("steps=0", "steps must be a positive int"),
])  # fmt: skip
def test_lightning_step_counters_are_refused_with_the_right_key(tmp_path, override, match):
    with pytest.raises(ValueError, match=match):
        train(tiny_cfg(tmp_path, override, "model._target_=no.such.Module"))


def test_a_refused_setting_prints_its_message_without_a_traceback(tmp_path):
    """From the command line a setting error is one line naming the key, and the exit status is 2."""
    proc = subprocess.run([sys.executable, "train.py", "trainer.max_steps=5", f"hydra.run.dir={tmp_path}/run"],
                          capture_output=True, text=True, timeout=300, cwd=REPO)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "error: trainer.max_steps=5 counts optimiser steps" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_an_env_yaml_without_its_package_line_is_named(tmp_path):
    """Without `# @package env.<name>` an env file's keys land directly under env: say so, not a TypeError."""
    folder = tmp_path / "conf" / "env"
    folder.mkdir(parents=True)
    lines = (CONF / "env" / "banking.yaml").read_text().splitlines()
    (folder / "mybank.yaml").write_text("\n".join(lines[1:]) + "\n")  # the package line dropped
    proc = subprocess.run([sys.executable, "train.py", "env=mybank", f"hydra.searchpath=[file://{tmp_path}/conf]",
                           f"hydra.run.dir={tmp_path}/run"], capture_output=True, text=True, timeout=300, cwd=REPO)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "error: env._target_=" in proc.stderr and "# @package env.<name>" in proc.stderr


@pytest.mark.parametrize(("per_epoch", "first", "then"), [(10, 3, 5), (3, 3, 5), (2, 3, 6)])
def test_a_resumed_run_goes_on_to_steps_across_epoch_boundaries(tmp_path, per_epoch, first, then):
    """`ckpt_path=... steps=N` runs the steps after the checkpoint's up to N, whether the earlier run ended
    mid-epoch (3 of 10), on a boundary (3 of 3) or the extension crosses several (3 -> 6 by 2s); every
    path it prints is the new run's; N at or below the checkpoint's step is refused."""
    common = (f"data.steps_per_epoch={per_epoch}", "model.warm_start.steps=0", "~callbacks.scheduling_logger")
    earlier = train(tiny_cfg(tmp_path / "a", *common, f"steps={first}"))
    assert earlier["objects"]["datamodule"].step == first
    ckpt = earlier["checkpoint"]
    more = train(tiny_cfg(tmp_path / "b", *common, f"steps={then}", f"ckpt_path={ckpt}"))
    assert more["objects"]["datamodule"].step == then
    assert more["checkpoint"] != ckpt and Path(more["checkpoint"]).is_relative_to(tmp_path / "b")
    assert "eval/score" in more["metrics"]
    with pytest.raises(ValueError, match=rf"steps={first}: ckpt_path=.* is at GRPO step {first} already"):
        train(tiny_cfg(tmp_path / "c", *common, f"steps={first}", f"ckpt_path={ckpt}", "model._target_=no.such.Module"))


def test_a_resume_continues_the_runs_scheduler_seed_and_logger_from_the_command_line(tmp_path):
    """`train.py ckpt_path=...` alone resumes a `scheduler=random seed=3` run as that run; asking for another
    scheduler is refused naming the one that resumes, also where no run config says it (train(cfg))."""
    common = [*TINY, "data.steps_per_epoch=1", "model.warm_start.steps=0", "~callbacks.scheduling_logger"]
    first = train(tiny_cfg(tmp_path / "a", *common[len(TINY):], "scheduler=random", "seed=3", "steps=1"))
    ckpt = first["checkpoint"]
    with pytest.raises(ValueError, match=r"^scheduler=envsched: ckpt_path=.* holds the state of scheduler 'random'; "
                                         "resume it with scheduler=random"):  # fmt: skip
        train(tiny_cfg(tmp_path / "b", *common[len(TINY):], "steps=2", f"ckpt_path={ckpt}", "model._target_=no.such.Module"))
    proc = subprocess.run([sys.executable, "train.py", *common, "steps=2", f"ckpt_path={ckpt}", f"output_dir={tmp_path}/c",
                           f"hydra.run.dir={tmp_path}/c"], capture_output=True, text=True, timeout=600, cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    source = Path(ckpt).parent.parent / "config_resolved.yaml"
    assert (f"resuming with the run's scheduler=random seed=3 logger=csv env=[banking,calendar,messaging] "
            f"(from {source})") in proc.stdout  # fmt: skip
    resumed = (tmp_path / "c" / "config_resolved.yaml").read_text()
    assert "name: random" in resumed and "seed: 3" in resumed and "CSVLogger" in resumed
    refused = subprocess.run([sys.executable, "train.py", *common, "steps=2", f"ckpt_path={ckpt}", "scheduler=envsched",
                              f"hydra.run.dir={tmp_path}/d"], capture_output=True, text=True, timeout=300, cwd=REPO)  # fmt: skip
    assert refused.returncode == 2 and "resume it with scheduler=random" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "d").exists()
