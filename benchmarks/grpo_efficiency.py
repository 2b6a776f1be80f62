"""Rollout efficiency on real GRPO training: every scheduler, several seeds, one warm start.

    python -m benchmarks.grpo_efficiency [--seeds 3] [--steps 120] [--bfcl ../shared/data] [--out DIR]
    python -m benchmarks.grpo_efficiency --data ../shared/data [--benchmark-envs bfcl_simple ...]   # with benchmark tasks
    python -m benchmarks.grpo_efficiency --replot DIR/grpo_efficiency.json --out docs/   # redraw only
    python -m benchmarks.grpo_efficiency --experiment smollm2_cpu --workers 1 --threads 2 ...   # the real model

Each run is the application's own path (Hydra `experiment=tiny_cpu`, or `--experiment`, composed with
`scheduler=<name> seed=<s>`, the real `EnvSchedDataModule` and `GRPOModule` under a Lightning
`Trainer`), differing from `python train.py` in three ways, all so that runs compare fairly:
- one supervised warm start is done once and every run starts from its weights;
- `callbacks=none`: each scheduler runs as its own config defines it (envsched brings its own
  quota and penalty; random stays uniform), no callback adds constraints to the baselines;
- held-out tasks (never scheduled) are scored greedily every `--eval-every` steps; with `--bfcl`
  a BFCL-v3 `simple` subset is scored as well, as an environment never trained on.
With `--data`, benchmark environments (conf/env names, `--benchmark-envs`) join the built-in worlds
as training environments: the same `TaskSubset` of each in every run (up to `--tasks-per-env`
tasks, `--eval-per-env` of them held out, as for a world), and `benchmark_oracle` scripts their
training tasks' ground truth for the warm start, which the benchmark data does not ship.
Every run spends the same rollouts (steps x batch x group). Prints a Markdown table (held-out score
at equal steps, per environment at the end, steps and rollouts to reach random's final score, the
ratio, zero-variance share, wall time) and writes JSON and a PNG under `--out`: held-out score vs
GRPO steps, one line per scheduler (seed mean, band: 95% bootstrap interval over seeds), the target line that
`steps_to_target` is measured against, and rollouts on the top axis. `--replot` redraws the PNG
from a saved JSON without training anything.

After the warm start, every training task is sampled G times (`--pool-samples`, the training
temperature): the histogram of those pass rates says whether the pool has headroom (tasks between
always and never solved). Each run's result is saved under `--out`/runs/ as it finishes, and the
warm start under `--out`; a rerun with the same setup reuses them, so a long comparison resumes
where it stopped.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.stats import bootstrap, mean_curve_band, paired_difference, verdict
from envsched_lightning.envs.base import Environment, Episode, Task, ToolCall

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"
SCHEDULERS = ("random", "plr", "mopps", "greso", "sec", "envsched")
# one environment of each benchmark whose prompts fit the tiny model's 2,048 positions and whose solving
# turns mostly fit 64 new tokens (ACEBench's single_turn_single_function calls take about 90)
BENCHMARK_ENVS = ("bfcl_simple", "acebench_normal_similar_api", "tau_retail")


# ------------------------------------------------------------------------------------ benchmark pool
def benchmark_oracle(task: Task, env: Environment) -> list[str]:
    """The assistant turns that solve a BFCL / ACEBench / tau-bench task, scripted from its ground truth.

    The benchmark data ships no scripted episodes, and without them the warm start would teach the
    tiny model only the built-in worlds. tau-bench: the task's write actions in one turn (its
    instruction holds every id they need, and the reward reads only the final database and the
    answer), then an answer holding the required outputs. Raises ValueError where there is no script."""
    from envsched_lightning.envs.acebench.normal import AceBenchEnvironment, ground_truth_answer
    from envsched_lightning.envs.bfcl.single_turn import BfclEnvironment, ground_truth_calls
    from envsched_lightning.envs.parsing import render_assistant_turn
    from envsched_lightning.envs.tau.environment import READ_ONLY, TauEnvironment

    truth = task.ground_truth
    if isinstance(env, BfclEnvironment) and task.max_turns == 1 and truth.get("possible_answer"):
        return [render_assistant_turn("", ground_truth_calls(truth["question"], truth["possible_answer"]))]
    if isinstance(env, AceBenchEnvironment) and not env.category.startswith("normal_multi_turn"):
        calls, text = ground_truth_answer(env.category, truth["record"], truth["truth"])
        return [render_assistant_turn("", calls) if calls else text]
    if isinstance(env, TauEnvironment):
        writes = [ToolCall(a["name"], a["kwargs"]) for a in truth["actions"] if a["name"] not in READ_ONLY]
        answer = " ".join(["Done.", *truth.get("outputs", [])])
        return ([render_assistant_turn("", writes)] if writes else []) + [answer]
    raise ValueError(f"task {task.spec.key} has no scripted ground truth in this benchmark")


class TaskSubset(Environment):
    """A fixed subset of a benchmark environment, the same in every run: the tasks are sized like a world's.

    Up to `num_tasks` tasks with the smallest key hash; the held-out split hashes the same keys, so
    a larger subset keeps the same held-out tasks. Scores, names and verdicts are the wrapped
    environment's; only the task list is cut, and the warm start gets `benchmark_oracle`'s scripts."""

    def __init__(self, env: Environment, num_tasks: int) -> None:
        self.env, self.name, self.num_tasks = env, env.name, num_tasks
        self._tasks: list[Task] | None = None

    def tasks(self) -> list[Task]:
        if self._tasks is None:
            from datamodules.task_pool import split_held_out

            self._tasks = split_held_out(list(self.env.tasks()), self.num_tasks)[1]  # smallest hashes, in order
        return list(self._tasks)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.env.tool_schemas()

    def tools_for(self, task: Task) -> list[dict[str, Any]]:
        return self.env.tools_for(task)

    def reset(self, task: Task) -> Episode:
        return self.env.reset(task)

    def oracle_turns(self, task: Task) -> list[str]:
        """What the warm start trains on (see `default_oracle`); ValueError: none for this task."""
        return benchmark_oracle(task, self.env)


@dataclasses.dataclass(frozen=True)
class Setup:
    """Everything every run shares; the defaults (18 runs) are sized for under an hour on 2 CPU cores."""

    envs: tuple[str, ...] = ("banking", "calendar", "messaging")
    tasks_per_env: int = 96
    eval_per_env: int = 24
    batch_size: int = 8
    group_size: int = 4
    steps: int = 120
    eval_every: int = 10
    max_new_tokens: int = 32
    warm_steps: int = 60
    bfcl: str | None = None  # data folder holding bfcl_v3/; None: no BFCL evaluation
    bfcl_tasks: int = 24
    data: str | None = None  # data folder of the benchmark environments; None: built-in worlds only
    benchmark_envs: tuple[str, ...] = ()  # conf/env names trained on as well (needs `data`)
    max_seq_len: int = 512  # tokens per episode; benchmark prompts need up to the model's 2,048 positions
    experiment: str = "tiny_cpu"  # the model and its settings (conf/experiment/); e.g. smollm2_cpu
    threads: int = 1  # torch threads per run
    pool_samples: int = 0  # rollouts per training task for the pool's pass-rate histogram (0: none)

    @property
    def trained_envs(self) -> tuple[str, ...]:
        """Every environment trained on and scored: the built-in worlds, then the benchmark ones."""
        return self.envs + self.benchmark_envs

    def overrides(self, scheduler: str, seed: int, out: Path) -> list[str]:
        ov = [
            f"experiment={self.experiment}", f"scheduler={scheduler}", f"seed={seed}", "callbacks=none", "logger=none",
            "trainer.num_sanity_val_steps=0",
            f"env=[{','.join(self.trained_envs)}]", f"output_dir={out}",
            f"data.batch_size={self.batch_size}", f"data.steps_per_epoch={self.eval_every}",
            f"data.eval_per_env={self.eval_per_env}", f"data.val_batch_size={self.eval_per_env * len(self.trained_envs)}",
            f"steps={self.steps}", "++trainer.enable_checkpointing=false",
            f"model.grpo.group_size={self.group_size}", f"model.sampling.max_new_tokens={self.max_new_tokens}",
            f"model.warm_start.steps={self.warm_steps}", f"model.grpo.max_seq_len={self.max_seq_len}",
        ]  # fmt: skip
        ov += [f"++env.{e}.num_tasks={self.tasks_per_env}" for e in self.envs]
        if self.benchmark_envs:
            ov += [f"++env.{e}.data_dir={Path(self.data).resolve()}" for e in self.benchmark_envs]
        if self.bfcl:
            ov += ["+data.eval_envs.bfcl_simple._target_=envsched_lightning.envs.bfcl.single_turn.BfclEnvironment",
                   f"+data.eval_envs.bfcl_simple.data_dir={Path(self.bfcl).resolve()}",
                   f"data.eval_env_tasks={self.bfcl_tasks}"]  # fmt: skip
        return ov


def _compose(setup: Setup, scheduler: str, seed: int, out: Path):
    from hydra import compose, initialize_config_dir

    from train import set_run_length

    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose("train", overrides=setup.overrides(scheduler, seed, out))
    set_run_length(cfg)  # the trainer's epochs from `steps`, as train.py derives them
    return pool_envs(cfg, setup)


def pool_envs(cfg: Any, setup: Setup) -> Any:
    """Only the trained environments, each benchmark one wrapped in a `TaskSubset` of `tasks_per_env` tasks.

    `experiment=tiny_cpu` sizes its three worlds under `env`, which leaves a stub without `_target_`
    for any of them that `env=[...]` did not select."""
    from omegaconf import open_dict

    with open_dict(cfg):
        for name in [n for n in cfg.env if n not in setup.trained_envs]:
            del cfg.env[name]
        for name in setup.benchmark_envs:
            cfg.env[name] = {"_target_": "benchmarks.grpo_efficiency.TaskSubset", "env": cfg.env[name],
                             "num_tasks": setup.tasks_per_env}  # fmt: skip
    return cfg


def _build(setup: Setup, scheduler: str, seed: int, out: Path) -> tuple[Any, Any, Any]:
    import lightning as L
    from hydra.utils import instantiate

    cfg = _compose(setup, scheduler, seed, out)
    L.seed_everything(seed, workers=True)
    return cfg, instantiate(cfg.data), instantiate(cfg.model)


def _vocab_hash(tokenizer: Any) -> str:
    return hashlib.sha1(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()


def _trainer(cfg: Any, callbacks: list, **kw: Any):
    from hydra.utils import instantiate

    return instantiate(cfg.trainer, callbacks=callbacks, logger=False, enable_model_summary=False, **kw)


def _scores(metrics: dict[str, Any]) -> dict[str, float]:
    prefix = "eval/score/"
    return {k[len(prefix):]: float(v) for k, v in metrics.items() if k.startswith(prefix)}


def warm_start(setup: Setup, out: Path) -> dict[str, Any]:
    """The shared starting point: SFT on the training tasks' oracle episodes, its held-out scores, and
    (with `pool_samples`) each training task's pass rate over that many rollouts."""
    _worker_setup(setup.threads)
    cfg, dm, model = _build(setup, "random", 0, out / "warm")
    t0 = time.perf_counter()
    losses = model.warm_start(dm.warm_start_items()) if setup.warm_steps > 0 else []  # 0: start from the bare model
    trainer = _trainer(cfg, [])
    metrics = trainer.validate(model, datamodule=dm, verbose=False)[0]
    path = out / "warm_start.pt"
    import torch

    torch.save({"model": model.model.state_dict(), "vocab": _vocab_hash(model.tokenizer)}, path)
    rates = pool_pass_rates(model, dm, setup.pool_samples) if setup.pool_samples else []
    return {"path": str(path), "scores": _scores(metrics), "loss": [losses[0], losses[-1]] if losses else [],
            "seconds": time.perf_counter() - t0, "pool_pass_rates": rates}  # fmt: skip


def pool_pass_rates(model: Any, dm: Any, samples: int) -> list[float]:
    """Mean reward of `samples` rollouts (training sampling settings) of every schedulable task."""
    import torch

    from envsched_lightning.module import TaskBatch

    items = dm.warm_start_items()  # every schedulable task, held-out ones excluded
    torch.manual_seed(0)
    rates = []
    for start in range(0, len(items), 16):
        chunk = items[start : start + 16]
        batch = TaskBatch(list(range(len(chunk))), [t for t, _ in chunk], [e for _, e in chunk])
        rewards = model._rollouts(batch, samples, model.sampling).rewards()  # [B, G]
        rates += rewards.mean(1).tolist()
    return rates


POOL_BINS = ((0.0, 0.0, "never"), (0.0, 0.25, "(0, 0.25]"), (0.25, 0.5, "(0.25, 0.5]"), (0.5, 0.75, "(0.5, 0.75]"),
             (0.75, 1.0, "(0.75, 1)"), (1.0, 1.0, "always"))  # fmt: skip


def pool_histogram(rates: list[float]) -> str:
    """Counts of training tasks by pass rate after the warm start: the tasks in between carry gradient."""
    counts = []
    for lo, hi, label in POOL_BINS:
        if lo == hi:
            n = sum(abs(r - lo) < 1e-9 for r in rates)
        else:
            n = sum(lo + 1e-9 < r <= hi and not (hi == 1.0 and abs(r - 1.0) < 1e-9) for r in rates)
        counts.append(f"{label} {n}")
    return f"pool pass rates after the warm start ({len(rates)} tasks): " + ", ".join(counts)


def run_one(setup: Setup, scheduler: str, seed: int, warm_path: str, out: Path) -> dict[str, Any]:
    """One GRPO run from the shared warm start; per-step scheduling stats and per-eval scores."""
    _worker_setup(setup.threads)
    import torch
    from lightning.pytorch import Callback

    from envsched_lightning.scheduling import ZERO_STD_EPS

    cfg, dm, model = _build(setup, scheduler, seed, out / f"{scheduler}_s{seed}")
    warm = torch.load(warm_path, weights_only=True)
    if warm["vocab"] != _vocab_hash(model.tokenizer):
        raise RuntimeError("the warm start was made with another tokenizer; delete it and rerun")
    model.model.load_state_dict(warm["model"])
    model.warm_started = True
    record: dict[str, list] = {"zero_var": [], "reward": [], "envs": [], "group_rewards": [], "evals": []}

    class Recorder(Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            groups = pl_module.last_groups
            record["zero_var"].append(float(np.mean([np.std(g.rewards) < ZERO_STD_EPS for g in groups])))
            record["reward"].append(float(np.mean([np.mean(g.rewards) for g in groups])))
            record["envs"].append([dm.specs[g.index].env for g in groups])
            record["group_rewards"].append([float(np.mean(g.rewards)) for g in groups])  # per-env training reward

        def on_validation_end(self, trainer, pl_module) -> None:
            record["evals"].append({"step": dm.step, "scores": _scores(trainer.callback_metrics)})

    t0 = time.perf_counter()
    _trainer(cfg, [Recorder()]).fit(model, datamodule=dm)
    return {"scheduler": scheduler, "seed": seed, "seconds": time.perf_counter() - t0, **record}


def _worker_setup(threads: int = 1) -> None:
    import torch

    from envsched_lightning.console import quiet_known_noise

    torch.set_num_threads(threads)  # runs go in parallel, one core each by default
    quiet_known_noise()  # the same console as train.py's


# ---------------------------------------------------------------------------------------------- report
def _mean_score(scores: dict[str, float], envs: tuple[str, ...]) -> float:
    return float(np.mean([scores[e] for e in envs]))


def curves(runs: list[dict], warm: dict, setup: Setup) -> tuple[np.ndarray, np.ndarray]:
    """(steps [E+1], scores [seeds, E+1]): mean held-out score over the trained environments."""
    steps = np.array([0] + [e["step"] for e in runs[0]["evals"]])
    start = _mean_score(warm["scores"], setup.trained_envs)
    scores = np.array([[start] + [_mean_score(e["scores"], setup.trained_envs) for e in r["evals"]] for r in runs])
    return steps, scores


def first_reach(steps: np.ndarray, curve: np.ndarray, target: float) -> float:
    """First step at which `curve` reaches `target`, linearly interpolated between evaluations."""
    for i in range(len(curve)):
        if curve[i] >= target - 1e-9:
            if i == 0:
                return 0.0
            lo, hi = curve[i - 1], curve[i]
            return float(steps[i - 1] + (steps[i] - steps[i - 1]) * (target - lo) / max(hi - lo, 1e-12))
    return float("inf")


def _ratio(steps: np.ndarray, sched: np.ndarray, base: np.ndarray) -> float:
    """Horizon / steps for the seed-mean curve of `sched` [seeds, E+1] to reach `base`'s final seed mean."""
    reach = first_reach(steps, sched.mean(0), float(base[:, -1].mean()))
    return float(steps[-1] / reach) if reach > 0 else float("inf")


def display(row: dict[str, Any]) -> dict[str, Any]:
    """A table row with each interval folded into its estimate's cell: `0.313 [0.270, 0.351]`."""
    out = {}
    for key, value in row.items():
        if key.endswith("_ci"):
            continue
        ci = row.get(f"{key}_ci")
        out[key] = f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci and value is not None and np.isfinite(ci[0]) else value
    return out


def verdicts(results: dict[str, list[dict]], warm: dict, setup: Setup, rows: list[dict]) -> list[str]:
    """envsched against random and against the best other baseline (by final score), paired by seed."""
    if "envsched" not in results:
        return []
    finals = {n: curves(runs, warm, setup)[1][:, -1] for n, runs in results.items()}
    others = [r["scheduler"] for r in rows if r["scheduler"] not in ("envsched", "random")]
    best = max(others, key=lambda n: finals[n].mean()) if others else None
    out = [verdict(paired_difference(finals["envsched"], finals[o]), "envsched", o) for o in ("random", best) if o]
    return out


def summarize(results: dict[str, list[dict]], warm: dict, setup: Setup) -> list[dict]:
    steps, base = curves(results["random"], warm, setup)
    target = float(base[:, -1].mean())
    per_seed_target = {r["seed"]: s for r, s in zip(results["random"], base[:, -1])}
    checkpoints = [c for c in (10, 20, 40) if c in steps and c != steps[-1]] + [int(steps[-1])]
    rows = []
    for name, runs in results.items():
        _, sc = curves(runs, warm, setup)
        mean = sc.mean(0)
        reach = first_reach(steps, mean, target)
        wins = sum(first_reach(steps, s, per_seed_target[r["seed"]]) < steps[-1] for r, s in zip(runs, sc))
        row: dict[str, Any] = {"scheduler": name}
        row |= {f"score@{c}": float(mean[list(steps).index(c)]) for c in checkpoints}
        row[f"std@{checkpoints[-1]}"] = float(sc[:, -1].std())
        row |= {f"{e}@{checkpoints[-1]}": float(np.mean([r["evals"][-1]["scores"][e] for r in runs]))
                for e in runs[0]["evals"][-1]["scores"]}  # fmt: skip
        final = bootstrap(lambda idx: float(sc[idx, -1].mean()), len(sc))
        ratio = bootstrap(lambda idx: _ratio(steps, sc[idx], base[idx]), len(sc))
        diff = paired_difference(sc[:, -1], base[:, -1]) if len(sc) == len(base) else None
        row |= {
            "final": final.estimate, "final_ci": [final.low, final.high],
            "diff_vs_random": None if diff is None else diff.estimate,
            "diff_vs_random_ci": None if diff is None else [diff.low, diff.high],
            "steps_to_target": reach,
            "ratio": ratio.estimate,  # `_ratio` on every seed: horizon / steps_to_target
            "ratio_ci": [ratio.low, ratio.high],
            "seed_wins": f"{wins}/{len(runs)}",
            "rollouts_to_target": reach * setup.batch_size * setup.group_size,
            "rollouts": float(steps[-1] * setup.batch_size * setup.group_size),
            "zero_var_frac": float(np.mean([np.mean(r["zero_var"]) for r in runs])),
            "minutes_per_run": float(np.mean([r["seconds"] for r in runs]) / 60),
        }
        rows.append(row)
    return rows


# random grey (the baseline), envsched the strongest colour; a scheduler added later takes a free one
COLORS = {"random": "#555555", "plr": "#1f77b4", "mopps": "#ff7f0e", "greso": "#2ca02c", "sec": "#9467bd",
          "envsched": "#d62728"}  # fmt: skip
SPARE_COLORS = ("#8c564b", "#e377c2", "#17becf", "#bcbd22")


def target_score(results: dict[str, list[dict]], warm: dict, setup: Setup) -> float | None:
    """Random's final seed-mean held-out score: what `steps_to_target` in `summarize` is measured
    against (the same expression; a test holds the two together). None without a random run."""
    if not results.get("random"):
        return None
    return float(curves(results["random"], warm, setup)[1][:, -1].mean())


def plot(results: dict[str, list[dict]], warm: dict, setup: Setup, path: Path | None = None) -> Figure:
    """Held-out score vs GRPO step, one line per scheduler, the target line drawn; returns the Figure.

    Built on `matplotlib.figure.Figure`, not pyplot: no backend is switched and no figure leaks."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 5.2))
    ax = fig.add_subplot()
    target = target_score(results, warm, setup)
    spare = iter(SPARE_COLORS)
    for name, runs in results.items():
        steps, sc = curves(runs, warm, setup)  # [E+1], [seeds, E+1]
        mean, low, high = mean_curve_band(sc, n_boot=1000)  # seeds resampled: a 95% bootstrap band
        if not np.isfinite(low).all():  # one seed: no band
            low = high = mean
        color = COLORS.get(name) or next(spare, None)
        lw = 2.6 if name == "envsched" else 1.6
        line = ax.plot(steps, mean, color=color, label=name, lw=lw, marker="o", ms=3)[0]
        ax.fill_between(steps, low, high, color=line.get_color(), alpha=0.12, lw=0)
        reach = first_reach(steps, mean, target) if target is not None else float("inf")
        if np.isfinite(reach):  # where this curve crosses the target: its steps_to_target in the table
            ax.scatter([reach], [target], marker="v", s=45, color=line.get_color(), zorder=3)
    if target is not None:
        ax.axhline(target, color="black", ls="--", lw=1,
                   label=f"target {target:.3f}: random's final score\n(steps_to_target = first step reaching it, \u25bc)")  # fmt: skip
    per_step = setup.batch_size * setup.group_size
    top = ax.secondary_xaxis("top", functions=(lambda s: s * per_step, lambda r: r / per_step))
    top.set_xlabel(f"rollouts spent (step x batch {setup.batch_size} x G{setup.group_size})")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("held-out score (mean over trained environments)")
    seeds = sorted({len(r) for r in results.values()})
    n = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    ax.set_title(f"GRPO, experiment={setup.experiment}, mean of {n} seeds (band: 95% bootstrap CI)\non {', '.join(setup.trained_envs)}",
                 pad=8, fontsize=9)  # fmt: skip  (two lines: a pool with benchmark environments is a long list)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, ncol=2)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def replot(data: dict[str, Any], out: Path) -> Path:
    """Redraw `grpo_efficiency.png` under `out` from a saved `grpo_efficiency.json`; trains nothing."""
    fields = {f.name for f in dataclasses.fields(Setup)}
    kw = {k: v for k, v in data["setup"].items() if k in fields}
    setup = Setup(**kw | {"envs": tuple(kw["envs"]), "benchmark_envs": tuple(kw.get("benchmark_envs", ()))})
    out.mkdir(parents=True, exist_ok=True)
    plot(data["runs"], data["warm"], setup, out / "grpo_efficiency.png")
    return out / "grpo_efficiency.png"


def _saved(path: Path, setup: dict[str, Any]) -> dict[str, Any] | None:
    """A result saved by an earlier run of the same setup (resume), or None."""
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    same = data.get("setup") == json.loads(json.dumps(setup))  # as JSON stores it (tuples become lists)
    return data["result"] if same else None


def _save(path: Path, setup: dict[str, Any], result: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"setup": setup, "result": result}))
    tmp.replace(path)


def _given(value: int | None, default: int) -> int:
    """An option's value if the user gave one (0 included: `--warm-steps 0` means no warm start), else its default."""
    return default if value is None else value


def main(argv: list[str] | None = None) -> list[dict]:
    from envsched_lightning.simulation.report import format_table

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--schedulers", nargs="*", default=list(SCHEDULERS))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--steps", type=int, default=Setup.steps)
    p.add_argument("--eval-every", type=int, default=Setup.eval_every)
    p.add_argument("--batch-size", type=int, default=Setup.batch_size)
    p.add_argument("--group-size", type=int, default=Setup.group_size)
    p.add_argument("--tasks-per-env", type=int, default=Setup.tasks_per_env)
    p.add_argument("--eval-per-env", type=int, default=Setup.eval_per_env)
    p.add_argument("--bfcl", default=None, help="folder holding bfcl_v3/: also score a BFCL-v3 simple subset")
    p.add_argument("--data", default=None, help="benchmark data folder (bfcl_v3/, acebench/, tau_bench/): train on "
                   "--benchmark-envs too, each with held-out tasks")  # fmt: skip
    p.add_argument("--benchmark-envs", nargs="*", default=list(BENCHMARK_ENVS), help="conf/env names used with --data")
    p.add_argument("--max-new-tokens", type=int, default=None, help="default: 32, or 64 with --data")
    p.add_argument("--max-seq-len", type=int, default=None, help="default: 512, or 2048 with --data")
    p.add_argument("--warm-steps", type=int, default=None, help="default: 60, or 300 with --data (measured: "
                   "60 leave the SFT loss at 3.3 on the mixed pool, 300 at 0.3)")  # fmt: skip
    p.add_argument("--workers", type=int, default=2, help="runs in parallel")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run")
    p.add_argument("--experiment", default="tiny_cpu", help="conf/experiment/ name: the model and its settings")
    p.add_argument("--pool-samples", type=int, default=0, help="rollouts per training task after the warm start, "
                   "for the pool's pass-rate histogram (0: skip)")  # fmt: skip
    p.add_argument("--out", default="outputs/grpo_efficiency")
    p.add_argument("--replot", metavar="JSON", help="redraw the PNG under --out from a saved grpo_efficiency.json; runs nothing")
    a = p.parse_args(argv)
    if a.replot:
        data = json.loads(Path(a.replot).read_text())
        print(f"plot: {replot(data, Path(a.out))}")
        return data["rows"]
    if a.steps % a.eval_every:
        p.error("--steps must be a multiple of --eval-every")
    if a.bfcl and a.data and "bfcl_simple" in a.benchmark_envs:
        p.error("--bfcl scores bfcl_simple as never trained on, but --data trains on it: drop one")
    pool = bool(a.data)  # benchmark prompts and calls are longer, and the warm start has more to learn
    setup = Setup(steps=a.steps, eval_every=a.eval_every, batch_size=a.batch_size, group_size=a.group_size,
                  tasks_per_env=a.tasks_per_env, eval_per_env=a.eval_per_env, bfcl=a.bfcl, data=a.data,
                  benchmark_envs=tuple(a.benchmark_envs) if pool else (), warm_steps=_given(a.warm_steps, 300 if pool else 60),
                  max_new_tokens=_given(a.max_new_tokens, 64 if pool else 32),
                  max_seq_len=_given(a.max_seq_len, 2048 if pool else 512), experiment=a.experiment,
                  threads=a.threads, pool_samples=a.pool_samples)  # fmt: skip
    names = ["random"] + [n for n in a.schedulers if n != "random"]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    t0 = time.perf_counter()
    ctx = get_context("spawn")
    key = {k: v for k, v in dataclasses.asdict(setup).items() if k != "threads"}  # cores per run, not what it computes
    warm = _saved(out / "warm.json", key)
    if warm is None:
        with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
            warm = pool.submit(warm_start, setup, out).result()
        _save(out / "warm.json", key, warm)
    print(f"warm start: {warm['seconds']:.0f}s, held-out scores {warm['scores']}", flush=True)
    if warm.get("pool_pass_rates"):
        print(pool_histogram(warm["pool_pass_rates"]), flush=True)
    jobs = [(n, s) for s in range(a.seeds) for n in names]
    results: dict[str, list[dict]] = {n: [] for n in names}
    saved = {(n, s): _saved(out / "runs" / f"{n}_s{s}.json", key) for n, s in jobs}
    with ProcessPoolExecutor(max_workers=a.workers, mp_context=ctx) as pool:
        futures = {(n, s): pool.submit(run_one, setup, n, s, warm["path"], out) for n, s in jobs if saved[n, s] is None}
        for n, s in jobs:
            r = saved[n, s] or futures[n, s].result()
            if saved[n, s] is None:
                _save(out / "runs" / f"{n}_s{s}.json", key, r)
            results[n].append(r)
            how = "saved" if saved[n, s] else f"{r['seconds'] / 60:.1f} min"
            print(f"  {n:9s} seed {s}: {how}, final {r['evals'][-1]['scores']}", flush=True)
    for runs in results.values():
        runs.sort(key=lambda r: r["seed"])
    rows = summarize(results, warm, setup)
    title = (f"GRPO, {setup.experiment}, {', '.join(setup.trained_envs)} ({setup.tasks_per_env} tasks each, {setup.eval_per_env} "
             f"held out), batch {setup.batch_size} x G{setup.group_size}, {setup.steps} steps, {a.seeds} seeds")  # fmt: skip
    print(format_table([display(r) for r in rows], title))
    for line in verdicts(results, warm, setup, rows):
        print(line)
    print(f"total: {(time.perf_counter() - t0) / 60:.1f} min")
    (out / "grpo_efficiency.json").write_text(
        json.dumps({"setup": dataclasses.asdict(setup), "warm": warm, "rows": rows, "runs": results}, indent=1))
    plot(results, warm, setup, out / "grpo_efficiency.png")
    print(f"results: {out / 'grpo_efficiency.json'}\nplot: {out / 'grpo_efficiency.png'}")
    return rows


if __name__ == "__main__":
    main()
