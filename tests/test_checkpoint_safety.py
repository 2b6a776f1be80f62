"""Checkpoints from anywhere: nothing in a checkpoint or its run folder runs code, saves are atomic,
every run has its own folder and ends with a checkpoint at its last step.

Real `train()` runs of the tiny model (Trainer, DataModule, callbacks), real files, real pickles
whose `__reduce__` calls `os.system`: each test checks that the command did not run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from envsched_lightning.checkpoints import (
    UnsafeCheckpoint,
    convert,
    from_safe,
    read_checkpoint,
    read_state,
    write_state,
)
from envsched_lightning.run_dirs import unique_dir

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.run_configs import compose_cfg, tiny_cfg  # noqa: E402
from train import train  # noqa: E402


class RunsCommand:
    """Unpickling this runs a shell command (what a hostile checkpoint carries)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def hostile(path: Path, marker: Path, base: dict | None = None) -> Path:
    """`base` (a real checkpoint's dict, or a minimal one) plus one object that touches `marker` when unpickled."""
    ckpt = dict(base or {"state_dict": {}, "epoch": 0})
    ckpt["extra"] = RunsCommand(f"touch {marker}")
    torch.save(ckpt, path)
    return path


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    return train(tiny_cfg(out, "steps=2", "data.steps_per_epoch=2")), out


def test_a_runs_checkpoint_holds_only_plain_data_and_loads_without_pickle(finished_run):
    run, _ = finished_run
    assert torch.serialization.get_unsafe_globals_in_checkpoint(run["checkpoint"]) == []
    ckpt = torch.load(run["checkpoint"], weights_only=True)  # what any reader can do safely
    assert ckpt["EnvSchedDataModule"]["step"] == 2
    rng = read_checkpoint(run["checkpoint"])["EnvSchedDataModule"]["rng"]["numpy"]  # unpacked back to numpy
    assert rng[0] == "MT19937" and isinstance(rng[1], np.ndarray) and rng[1].dtype == np.uint32


def test_train_refuses_a_checkpoint_that_would_run_code(finished_run, tmp_path):
    run, _ = finished_run
    marker = tmp_path / "ran"
    real = torch.load(run["checkpoint"], weights_only=True)
    path = hostile(tmp_path / "last.ckpt", marker, real)
    with pytest.raises(UnsafeCheckpoint, match=rf"ckpt_path={path}: refused: it holds .*system"):
        train(tiny_cfg(tmp_path / "resume", "steps=3", f"ckpt_path={path}"))
    assert not marker.exists()


def test_evaluate_refuses_a_checkpoint_that_would_run_code(tmp_path):
    from evaluate import load_weights

    marker = tmp_path / "ran"
    path = hostile(tmp_path / "last.ckpt", marker)
    with pytest.raises(UnsafeCheckpoint, match="system"):
        load_weights(torch.nn.Module(), str(path))
    assert not marker.exists()


@pytest.mark.parametrize("what", ["envsched_scheduler.pt", "envsched_sampler.pt"])
def test_adapter_scheduler_files_refuse_code(tmp_path, what):
    """The TRL and verl adapters read their scheduler files through `read_state` (named after the file)."""
    marker = tmp_path / "ran"
    path = tmp_path / what
    torch.save({"scheduler": RunsCommand(f"touch {marker}")}, path)
    with pytest.raises(UnsafeCheckpoint, match=what):
        read_state(path, what)
    assert not marker.exists()
    from envsched_lightning.adapters import trl, verl  # noqa: F401 - both import the safe reader

    assert "weights_only=False" not in (REPO / "envsched_lightning/adapters/trl.py").read_text()
    assert "weights_only=False" not in (REPO / "envsched_lightning/adapters/verl.py").read_text()


def test_an_older_checkpoint_is_converted_only_on_explicit_trust(tmp_path):
    old = tmp_path / "old.ckpt"
    state = {"state_dict": {"w": torch.ones(2)}, "EnvSchedDataModule": {"rng": np.random.get_state(), "x": np.arange(3.0)}}
    torch.save(state, old)  # numpy arrays pickled as numpy: what earlier versions wrote
    with pytest.raises(UnsafeCheckpoint, match="convert"):
        read_checkpoint(str(old))
    with pytest.raises(PermissionError, match="--trust"):
        convert(str(old), str(tmp_path / "new.ckpt"), trust=False)
    cli = subprocess.run([sys.executable, "-m", "envsched_lightning.checkpoints", "convert", str(old),
                          str(tmp_path / "new.ckpt"), "--trust"], capture_output=True, text=True, cwd=REPO)  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    new = read_checkpoint(str(tmp_path / "new.ckpt"))
    assert np.array_equal(new["EnvSchedDataModule"]["x"], np.arange(3.0))
    assert np.array_equal(new["EnvSchedDataModule"]["rng"][1], state["EnvSchedDataModule"]["rng"][1])


def test_shared_references_stay_shared_and_a_tree_bomb_is_refused_naming_the_file(tmp_path):
    shared = [0]
    for _ in range(60):  # 2^60 leaves when walked as a tree; under 2 KB of pickle
        shared = [shared, shared]
    bomb = tmp_path / "bomb.ckpt"
    torch.save({"state_dict": {}, "EnvSchedDataModule": {"x": shared}}, bomb)
    with pytest.raises(ValueError, match=f"{bomb}.*as a tree"):
        read_checkpoint(str(bomb))
    small = [np.arange(3.0)]
    state = from_safe({"a": [small, small], "b": small})
    assert state["a"][0] is state["a"][1] is state["b"]  # converted once, still shared
    deep: list = []
    for _ in range(100_000):  # deeper than Python's recursion limit: walked without recursion
        deep = [deep]
    assert isinstance(from_safe(deep), list)


def test_a_compressed_member_is_refused_before_it_inflates(tmp_path):
    import zipfile

    plain = tmp_path / "plain.ckpt"
    torch.save({"state_dict": {"w": torch.zeros(1000)}}, plain)
    deflated = tmp_path / "deflated.ckpt"
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    with pytest.raises(ValueError, match=f"{deflated}.*compressed"):
        read_checkpoint(str(deflated))


def test_convert_checks_before_it_writes_and_never_replaces_old(tmp_path):
    old = tmp_path / "old.ckpt"
    torch.save({"state_dict": {}, "x": np.arange(3)}, old)
    before = old.read_bytes()
    with pytest.raises(ValueError, match="another path"):
        convert(str(old), str(old), trust=True)
    assert old.read_bytes() == before

    from fractions import Fraction  # not plain data: the safe load refuses it, so no NEW file may be left behind

    torch.save({"state_dict": {}, "x": Fraction(1, 3)}, old)
    with pytest.raises(UnsafeCheckpoint, match="Fraction"):
        convert(str(old), str(tmp_path / "new.ckpt"), trust=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.ckpt"]


def test_evaluate_never_instantiates_targets_from_the_run_folder(tmp_path):
    """A nested `_target_` in the run's config_resolved.yaml (torch.load with pickle, builtins.open) is refused by key."""

    from evaluate import use_run_policy

    cfg = compose_cfg("evaluate", "env=[banking]", f"ckpt_path={tmp_path / 'run/checkpoints/last.ckpt'}")
    run = tmp_path / "run"
    run.mkdir()
    good = {"_target_": "envsched_lightning.models.tiny_qwen3_policy", "vocab_size": 512, "lora": None,
            "envs": [{"_target_": "envsched_lightning.envs.worlds.banking.BankingEnv", "num_tasks": 6}]}  # fmt: skip
    bad = [
        ({"extra": {"_target_": "torch.load", "f": "x.pt", "weights_only": False}}, r"model\.policy\.extra\._target_"),
        ({"lora": {"_target_": "builtins.open", "file": "/etc/passwd"}}, r"model\.policy\.lora\._target_"),
        ({"envs": [{"_target_": "os.system", "command": "true"}]}, r"model\.policy\.envs\[0\]\._target_"),
        ({"envs": [{"_target_": "envsched_lightning.envs.worlds.banking.BankingEnv", "_partial_": True}]},
         r"model\.policy\.envs\[0\]\._partial_"),
        ({"_target_": "torch.load"}, r"model\.policy\._target_='torch\.load' is not a known policy builder"),
        ({"_target_": "${oc.env:HOME}"}, r"model\.policy\._target_=an interpolation is not a known policy builder"),
        ({"vocab_size": "${oc.env:HOME}"}, r"model\.policy\.vocab_size.*interpolations"),
    ]  # fmt: skip
    for change, match in bad:
        (run / "config_resolved.yaml").write_text(OmegaConf.to_yaml({"model": {"policy": good | change}}))
        with pytest.raises(ValueError, match=match):
            use_run_policy(cfg.copy())



def _forged_run(finished_run, tmp_path: Path, edit) -> tuple[Path, Path]:
    """A copy of a real run's folder whose config_resolved.yaml `edit(text)` rewrites; (checkpoint, config file)."""
    import shutil

    _, out = finished_run
    run = tmp_path / "run"
    shutil.copytree(out, run, ignore=shutil.ignore_patterns("*.csv", "*.png", "*.jsonl", "*.json"))
    config = run / "config_resolved.yaml"
    config.write_text(edit(config.read_text()))
    return run / "checkpoints" / "last.ckpt", config


def test_evaluate_builds_the_runs_model_only_when_its_sizes_fit_the_checkpoint(finished_run, tmp_path):
    """Sizes in the file beside a checkpoint are compared with its tensors before a model is built."""
    from evaluate import use_run_policy

    ckpt, config = _forged_run(finished_run, tmp_path, lambda text: text)
    cfg = compose_cfg("evaluate", "env=[banking]", f"ckpt_path={ckpt}")
    assert use_run_policy(cfg.copy()) == str(config)  # the run's own config
    original = OmegaConf.load(config)
    for key, value, match in [("hidden_size", 100_000, "shape"), ("num_hidden_layers", 1_000_000, "holds 2 layers"),
                              ("intermediate_size", 10**9, "shape"), ("head_dim", 4096, "shape")]:  # fmt: skip
        forged = original.copy()
        forged.model.policy[key] = value
        config.write_text(OmegaConf.to_yaml(forged))
        with pytest.raises(ValueError, match=match):
            use_run_policy(cfg.copy())


def test_a_run_config_is_read_as_plain_data_never_resolved_or_expanded(finished_run, tmp_path, monkeypatch):
    from evaluate import run_held_out, use_run_policy

    monkeypatch.setenv("ENVSCHED_TEST_SECRET", "s3cr3t-value")
    made = tmp_path / "made_by_interpolation"
    ckpt, config = _forged_run(finished_run, tmp_path, lambda text: text.replace(
        "eval_per_env: 1\n", f"eval_per_env: ${{unique_dir:{made}}}\n").replace(
        "tiny_qwen3_policy", "tiny_qwen3_policy${oc.env:ENVSCHED_TEST_SECRET}"))  # fmt: skip
    cfg = compose_cfg("evaluate", "env=[banking]", f"ckpt_path={ckpt}", "split=held_out")
    with pytest.raises(ValueError) as refused:
        use_run_policy(cfg.copy())
    assert "s3cr3t" not in str(refused.value) and "not a known policy builder" in str(refused.value)
    with pytest.raises(ValueError, match="eval_per_env"):
        run_held_out(cfg.copy())
    assert not made.exists()  # nothing ran on reading

    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(20))
    config.write_text(bomb)
    with pytest.raises(ValueError, match="anchors and aliases are refused"):
        use_run_policy(cfg.copy())


def test_held_out_tasks_are_read_with_the_datamodules_own_checks(finished_run, tmp_path):
    from evaluate import run_held_out

    ckpt, _ = _forged_run(finished_run, tmp_path, lambda text: text.replace("eval_per_env: 1\n", "eval_per_env: -1\n"))
    cfg = compose_cfg("evaluate", "env=[banking]", f"ckpt_path={ckpt}", "split=held_out")
    with pytest.raises(ValueError, match="data.eval_per_env must be a non-negative int, got -1"):
        run_held_out(cfg)


def test_a_failed_save_leaves_the_previous_checkpoint_and_no_temporary_file(tmp_path):
    path = tmp_path / "last.ckpt"
    write_state({"step": 1}, path)
    with pytest.raises(Exception):
        write_state({"step": 2, "bad": lambda: None}, path)  # torch.save fails mid-write
    assert read_state(path) == {"step": 1} and sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]


def test_a_full_disk_is_reported_with_the_path_and_the_free_space(tmp_path, monkeypatch):
    """The save's temporary file is opened on /dev/full, a device whose writes fail as on a full disk."""
    import builtins

    from envsched_lightning import checkpoints

    path = tmp_path / "last.ckpt"
    write_state({"step": 1}, path)
    monkeypatch.setattr(checkpoints, "open", lambda _p, mode: builtins.open("/dev/full", mode), raising=False)
    with pytest.raises(OSError, match=r"last\.ckpt: the save failed with \d+ MB free on its disk") as err:
        write_state({"step": 2, "w": torch.zeros(1 << 20)}, path)
    assert "previous file at this path, if any, is intact" in str(err.value)
    monkeypatch.undo()
    assert read_state(path) == {"step": 1} and sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]


def test_a_save_killed_midway_leaves_a_file_the_next_save_removes(tmp_path):
    """SIGKILL cannot be cleaned up after; the partial file sits in the target's folder (so the rename is
    atomic) under a hidden name, and the next save into that folder removes it."""
    path = tmp_path / "last.ckpt"
    write_state({"step": 1}, path)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    partial = tmp_path / f".last.ckpt.tmp-{child.pid}"
    partial.write_bytes(b"\0" * 1000)  # what a save killed mid-write leaves
    child.kill()
    child.wait()
    write_state({"step": 2}, path)
    assert read_state(path) == {"step": 2} and not partial.exists()


def test_a_resume_removes_what_a_killed_save_left_beside_its_checkpoint(finished_run, tmp_path):
    """A resumed run saves into its own new folder, so the folder it resumes from is swept when it is read."""
    import shutil

    from train import check_checkpoint

    result, _ = finished_run
    ckpt = tmp_path / "last.ckpt"
    shutil.copy(result["checkpoint"], ckpt)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    partial = tmp_path / f".last.ckpt.tmp-{child.pid}"
    partial.write_bytes(b"\0" * 1000)
    child.kill()
    child.wait()
    step, _ = check_checkpoint(str(ckpt), result["objects"]["datamodule"], without_scheduler=False)
    assert step == 2 and not partial.exists()


def test_two_runs_started_in_the_same_second_get_their_own_folders(tmp_path):
    from envsched_lightning import run_dirs

    base = str(tmp_path / "outputs" / "12-00-00")
    first = unique_dir(base)
    run_dirs._CLAIMED.clear()  # a second process
    second = unique_dir(base)
    assert first == base and second == f"{base}-1" and Path(second).is_dir()
    assert unique_dir(base) == second  # Hydra resolves the key again: the same folder
    for entry in ("train", "evaluate"):  # both entry points name their folders this way
        run_dir = OmegaConf.to_container(OmegaConf.load(REPO / "conf" / f"{entry}.yaml").hydra.run, resolve=False)["dir"]
        assert run_dir.startswith("${unique_dir:outputs/")


def test_every_interval_and_the_runs_end_are_checkpointed_without_updates(tmp_path, monkeypatch):
    """Every step as when all its groups are zero-variance: the module makes no optimiser step (the one
    stand-in: `_any_rank` says no rank has an informative group, whatever the rewards were)."""
    from envsched_lightning.module import GRPOModule

    monkeypatch.setattr(GRPOModule, "_any_rank", lambda self, flag: False)
    run = train(tiny_cfg(tmp_path, "steps=3", "data.steps_per_epoch=2", "callbacks.model_checkpoint.save_top_k=-1"))
    assert run["objects"]["trainer"].global_step == 0  # the premise: no step updated the model
    ckpts = tmp_path / "checkpoints"
    assert read_checkpoint(str(ckpts / "epoch000.ckpt"))["EnvSchedDataModule"]["step"] == 2
    assert read_checkpoint(str(ckpts / "last.ckpt"))["EnvSchedDataModule"]["step"] == 3
    assert run["checkpoint"] == str(ckpts / "last.ckpt")


ARRAYS = st.builds(
    lambda dtype, shape, seed: np.random.default_rng(seed).integers(0, 200, size=shape).astype(dtype),
    st.sampled_from(["float64", "float32", "float16", "int64", "int32", "uint32", "uint8", "bool", "complex64"]),
    st.lists(st.integers(0, 3), max_size=3).map(tuple),
    st.integers(0, 2**16),
)
STATES = st.recursive(
    st.one_of(ARRAYS, st.integers(), st.floats(allow_nan=False), st.text(max_size=5), st.none(), st.booleans()),
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=4), kids, max_size=3),
                           st.lists(kids, max_size=3).map(tuple)),  # fmt: skip
    max_leaves=12,
)


def same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@settings(max_examples=80, deadline=None)
@given(state=STATES)
def test_fuzz_any_state_of_arrays_and_plain_values_round_trips_without_pickle(state, tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "state.pt"
    write_state(state, path)
    assert torch.serialization.get_unsafe_globals_in_checkpoint(path) == []
    assert same(state, read_state(path))
