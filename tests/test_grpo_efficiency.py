"""The GRPO benchmark's pool with benchmark environments (`--data`): the real warm start and a real
2-step run on a tiny pool (one built-in world plus a BFCL subset), read back from what `run_one` returns."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hydra.utils import instantiate

from benchmarks import grpo_efficiency as ge
from envsched_lightning.envs import run_scripted
from envsched_lightning.module import _has_oracle
from tests.data_roots import data_root

BENCH = ("bfcl_simple", "acebench_normal_similar_api", "tau_retail")


def tiny_setup(data, benchmark_envs=("bfcl_simple",)) -> ge.Setup:
    return ge.Setup(envs=("banking",), benchmark_envs=benchmark_envs, data=str(data), tasks_per_env=12,
                    eval_per_env=3, batch_size=2, group_size=2, steps=2, eval_every=2, warm_steps=2, max_new_tokens=16,
                    max_seq_len=2048)  # fmt: skip


@pytest.fixture
def one_thread():
    """`run_one` and `warm_start` set one torch thread for their worker process; give the test process its own back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_benchmark_envs_are_cut_to_a_fixed_subset_whose_oracle_solves_every_task():
    root = data_root("bfcl_v3", "acebench", "tau_bench")
    cfg = ge._compose(tiny_setup(root, BENCH), "random", 0, root / "unused")
    for name in BENCH:
        env = instantiate(cfg.env[name])
        tasks = env.tasks()
        assert isinstance(env, ge.TaskSubset) and env.name == name and len(tasks) == 12
        assert [t.spec.key for t in tasks] == [t.spec.key for t in instantiate(cfg.env[name]).tasks()]  # same in every run
        assert not _has_oracle(tasks[0], env.env)  # the data ships no script: without the subset the warm start skips them
        for task in tasks:  # the benchmark's own script scores 1 under the official rules
            assert _has_oracle(task, env)
            assert run_scripted(env, task, env.oracle_turns(task))[0].reward == 1.0


def test_a_pool_with_a_benchmark_env_trains_and_scores_it_held_out(tmp_path, one_thread):
    setup = tiny_setup(data_root("bfcl_v3"))
    assert setup.trained_envs == ("banking", "bfcl_simple")
    warm = ge.warm_start(setup, tmp_path)
    assert set(warm["scores"]) == {"banking", "bfcl_simple"} and warm["loss"][1] < warm["loss"][0]
    run = ge.run_one(setup, "random", 0, warm["path"], tmp_path)
    assert len(run["reward"]) == 2 and len(run["group_rewards"]) == 2  # two GRPO steps, a reward per group
    assert all(len(envs) == len(rewards) == 2 for envs, rewards in zip(run["envs"], run["group_rewards"]))
    assert {e for step in run["envs"] for e in step} <= {"banking", "bfcl_simple"}
    (last,) = run["evals"]  # one evaluation, after step 2: a held-out score per trained environment
    assert last["step"] == 2 and set(last["scores"]) == {"banking", "bfcl_simple"}
    assert all(0.0 <= s <= 1.0 for s in last["scores"].values())
    results = {"random": [run]}
    steps, scores = ge.curves(results["random"], warm, setup)  # the table's mean is over both environments
    assert list(steps) == [0, 2]
    np.testing.assert_allclose(scores[0, -1], np.mean([last["scores"]["banking"], last["scores"]["bfcl_simple"]]))
    row = ge.summarize(results, warm, setup)[0]
    assert "bfcl_simple@2" in row and "banking@2" in row


def test_warm_steps_zero_means_no_warm_start_and_a_run_prints_no_lightning_noise(tmp_path, one_thread):
    """`--warm-steps 0` is a run from the bare model, not the default warm start (an explicit 0 is a
    value); a worker's run warns about nothing train.py would not (its trainer's epochs come from
    `steps`, and the known Lightning notices are silenced the same way)."""
    assert ge._given(0, 60) == 0 and ge._given(None, 60) == 60
    setup = ge.Setup(envs=("banking",), tasks_per_env=6, eval_per_env=2, batch_size=2, group_size=2, steps=2,
                     eval_every=2, warm_steps=0, max_new_tokens=8)  # fmt: skip
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warm = ge.warm_start(setup, tmp_path)
        run = ge.run_one(setup, "random", 0, warm["path"], tmp_path)
    _, _, bare = ge._build(setup, "random", 0, tmp_path / "bare")  # the same seeded initial weights
    saved = torch.load(warm["path"], weights_only=True)["model"]
    assert warm["loss"] == []
    assert all(torch.equal(saved[k], v) for k, v in bare.model.state_dict().items())
    assert len(run["zero_var"]) == 2  # both GRPO steps ran
    lightning = [str(w.message) for w in seen if "lightning" in w.filename]
    assert not lightning, lightning


def test_pool_pass_rates_and_a_resumed_comparison(tmp_path, one_thread):
    """`--pool-samples`: a pass rate per training task after the warm start, in the histogram's bins;
    a run's saved result is reused by a rerun of the same setup and ignored by another setup."""
    setup = ge.Setup(envs=("banking",), tasks_per_env=6, eval_per_env=2, batch_size=2, group_size=2, steps=2,
                     eval_every=2, warm_steps=2, max_new_tokens=8, pool_samples=2)  # fmt: skip
    warm = ge.warm_start(setup, tmp_path)
    rates = warm["pool_pass_rates"]
    assert len(rates) == 4 and all(r in (0.0, 0.5, 1.0) for r in rates)  # 4 training tasks, 2 rollouts each
    line = ge.pool_histogram([0.0, 0.0, 0.5, 1.0, 0.2, 0.9])
    assert line.endswith("never 2, (0, 0.25] 1, (0.25, 0.5] 1, (0.5, 0.75] 0, (0.75, 1) 1, always 1")
    key = ge.dataclasses.asdict(setup)
    ge._save(tmp_path / "runs" / "random_s0.json", key, {"seed": 0})
    assert ge._saved(tmp_path / "runs" / "random_s0.json", key) == {"seed": 0}
    assert ge._saved(tmp_path / "runs" / "random_s0.json", key | {"steps": 4}) is None
    assert ge._saved(tmp_path / "runs" / "missing.json", key) is None
