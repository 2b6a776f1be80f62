"""Greedy evaluation, shared by training's validation (`GRPOModule.validation_step`) and `evaluate.py`.

One greedy rollout per (task, env) through the same agent loop training samples with, then scores
per environment (a benchmark category), per benchmark, and overall. Two overall numbers, because
they answer different questions:

* `mean_of_benchmarks`: the mean over benchmarks of each benchmark's score, where a benchmark's
  score is the mean of its categories' scores. This is how papers report "the average over
  BFCL-v3, tau-bench and ACEBench": a 400-task category and a 40-task one weigh the same.
* `task_weighted`: the mean reward over every task evaluated (what `eval/score` has always logged).

A benchmark is named by its environments' prefix (`bfcl_*` -> bfcl, `acebench_*` -> acebench,
`tau_*` -> tau_bench); every other environment (the built-in worlds) counts as `worlds`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from transformers import PreTrainedTokenizerBase

from envsched_lightning.envs.base import Environment, Task
from envsched_lightning.eval_log import PairedChange, paired_change  # noqa: F401 - progress and compare read them here too
from envsched_lightning.rollout import (
    PROMPT_TOO_LONG,  # noqa: F401 - evaluate.py and callers read it from here
    EpisodeRecord,
    RolloutEngine,
    SamplingConfig,
    engine_awake,
    run_agent_loop,
)

BENCHMARK_PREFIXES: tuple[tuple[str, str], ...] = (
    ("bfcl_", "bfcl"), ("acebench_agent_", "acebench_agent"), ("acebench_", "acebench"), ("tau_", "tau_bench"),
)  # fmt: skip  (first match wins)
BUILTIN = "worlds"


def benchmark_of(env_name: str) -> str:
    """The benchmark an environment belongs to, by its name's prefix; the built-in worlds are `worlds`."""
    return next((name for prefix, name in BENCHMARK_PREFIXES if env_name.startswith(prefix)), BUILTIN)


def benchmark_metrics(episodes: Iterable[EpisodeRecord]) -> dict[str, dict[str, float]]:
    """Per environment, the mean of each metric its verifier reports besides the reward (`Verdict.scores`,
    e.g. ACEBench-Agent's end-state and process accuracy); environments without any are left out."""
    sums: dict[str, dict[str, list[float]]] = {}
    for e in episodes:
        for metric, value in (e.scores or {}).items():
            sums.setdefault(e.env, {}).setdefault(metric, []).append(float(value))
    return {env: {m: sum(v) / len(v) for m, v in metrics.items()} for env, metrics in sums.items()}


def metrics_markdown(metrics: Mapping[str, Mapping[str, float]]) -> str:
    """`benchmark_metrics` as a table: one row per environment, one column per metric."""
    names = sorted({m for per_env in metrics.values() for m in per_env})
    rows = [f"| {env} | " + " | ".join(f"{per_env[m]:.3f}" if m in per_env else "" for m in names) + " |"
            for env, per_env in metrics.items()]  # fmt: skip
    return "\n".join([f"| env | {' | '.join(names)} |", "|---|" + "---|" * len(names), *rows])


class PaperScore(NamedTuple):
    suites: tuple[tuple[str, float | None], ...]  # (the paper's suite name, its score; None if not run or not played in full)
    average: float | None  # the mean of the suites played in full (None if none was)
    not_played: tuple[tuple[str, int, int], ...] = ()  # (suite, tasks not played, tasks) where any was not played

    @property
    def complete(self) -> bool:
        """Every suite run and played in full: only then is `average` the paper's number."""
        return all(v is not None for _, v in self.suites)


def unplayed_tasks(episodes: Iterable[EpisodeRecord]) -> dict[str, tuple[int, int]]:
    """Per benchmark, (episodes never played: the prompt left no room to generate, tasks): a zero there is
    no answer of the model's, so a suite with any is not scored as if it were."""
    out: dict[str, list[int]] = {}
    for e in episodes:
        counts = out.setdefault(benchmark_of(e.env), [0, 0])
        counts[0] += e.reason.startswith(PROMPT_TOO_LONG)
        counts[1] += 1
    return {name: (n, total) for name, (n, total) in out.items()}


def paper_score(scores: Scores, suites: Mapping[str, str], unplayed: Mapping[str, tuple[int, int]] | None = None) -> PaperScore:
    """The paper's number from our scoreboard: each suite is one of our benchmarks (`suites`: benchmark -> the
    paper's name for it), scored as the mean of its categories; the paper averages the suites. A suite with
    episodes not played (`unplayed`: benchmark -> (not played, tasks), from `unplayed_tasks`) has no score
    and is left out of the average."""
    by_name = {b.name: b.score for b in scores.benchmarks}
    unplayed = unplayed or {}
    not_played = tuple((paper_name, *unplayed[b]) for b, paper_name in suites.items() if unplayed.get(b, (0, 0))[0])
    skipped = {name for name, _, _ in not_played}
    rows = tuple((paper_name, None if paper_name in skipped else by_name.get(benchmark))
                 for benchmark, paper_name in suites.items())  # fmt: skip
    values = [v for _, v in rows if v is not None]
    return PaperScore(rows, sum(values) / len(values) if values else None, not_played)


def paper_markdown(paper: PaperScore, reference: str, differences: Sequence[str]) -> str:
    """The suites, their average (x100, as the paper reports), the paper's reference and what differs from its
    setting; a suite not run or not played in full says so and the average says over which suites it is."""
    not_played = {name: (n, total) for name, n, total in paper.not_played}
    lines = ["| suite | score |", "|---|---:|"]
    for name, v in paper.suites:
        cell = f"{100 * v:.2f}" if v is not None else "not run"
        if name in not_played:
            cell = "not played: {} of {} tasks".format(*not_played[name])
        lines.append(f"| {name} | {cell} |")
    played = sum(v is not None for _, v in paper.suites)
    if paper.average is None:
        average = "none played in full"
    elif paper.complete:
        average = f"**{100 * paper.average:.2f}**"
    else:
        average = f"{100 * paper.average:.2f} over {played} of {len(paper.suites)} suites: not the paper's number"
    lines.append(f"| **average** | {average} |")
    out = "\n".join(lines) + (f"\n\nPaper: {reference}" if reference else "")
    if differences:
        out += "\n\nDiffers from the paper's setting:\n" + "\n".join(f"- {d}" for d in differences)
    return out


def greedy_rollouts(
    engine: RolloutEngine,
    tokenizer: PreTrainedTokenizerBase,
    pairs: Sequence[tuple[Task, Environment]],
    sampling: SamplingConfig,
    *,
    batch_size: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    **loop_kwargs: Any,
) -> list[EpisodeRecord]:
    """One greedy episode per (task, env), in order; `batch_size` tasks per agent-loop call (None: all).

    `loop_kwargs` go to `run_agent_loop` (`max_seq_len`, `chat_template_kwargs`, `tool_format`, `tool_schemas`); `progress(done, total)`
    is called after each batch. A task whose prompt does not fit scores 0 with reason `PROMPT_TOO_LONG`
    (the agent loop records it; a benchmark counts a task the model cannot answer as failed, dropping
    it would raise the score)."""
    greedy = sampling.greedy()
    step = batch_size or max(len(pairs), 1)
    episodes: list[EpisodeRecord] = []
    with engine_awake(engine):  # a sleeping vLLM wakes once for the whole evaluation
        for start in range(0, len(pairs), step):
            episodes += run_agent_loop(engine, tokenizer, pairs[start : start + step], 1, greedy, **loop_kwargs).episodes
            if progress is not None:
                progress(len(episodes), len(pairs))
    return episodes


class EnvScore(NamedTuple):
    env: str
    benchmark: str
    tasks: int
    score: float  # mean reward over the env's tasks


class BenchmarkScore(NamedTuple):
    name: str
    envs: tuple[str, ...]
    tasks: int
    score: float  # mean of its environments' scores
    task_weighted: float  # mean reward over all its tasks


@dataclass(frozen=True)
class Scores:
    """A leaderboard: per environment, per benchmark, overall; see the module docstring for the means."""

    envs: tuple[EnvScore, ...]  # grouped by benchmark, each group in first-seen order
    benchmarks: tuple[BenchmarkScore, ...]
    tasks: int
    mean_of_benchmarks: float
    task_weighted: float

    def metrics(self, prefix: str = "eval") -> dict[str, float]:
        """`eval/score` (task-weighted), `eval/score/<env>`, `eval/benchmark/<name>`, `eval/benchmark_mean`."""
        out = {f"{prefix}/score/{e.env}": e.score for e in self.envs}
        out |= {f"{prefix}/benchmark/{b.name}": b.score for b in self.benchmarks}
        return out | {f"{prefix}/score": self.task_weighted, f"{prefix}/benchmark_mean": self.mean_of_benchmarks}

    def as_dict(self) -> dict[str, Any]:
        return {
            "envs": [e._asdict() for e in self.envs],
            "benchmarks": [b._asdict() | {"envs": list(b.envs)} for b in self.benchmarks],
            "overall": {"tasks": self.tasks, "mean_of_benchmarks": self.mean_of_benchmarks, "task_weighted": self.task_weighted},
        }

    def rows(self) -> list[tuple[str, str, str, int, float, float]]:
        """(level, benchmark, env or description, tasks, score, task-weighted score), leaderboard order."""
        rows = []
        for b in self.benchmarks:
            for e in (e for e in self.envs if e.benchmark == b.name):
                rows.append(("env", b.name, e.env, e.tasks, e.score, e.score))
            rows.append(("benchmark", b.name, f"mean of {_count(len(b.envs), 'category', 'categories')}", b.tasks,
                         b.score, b.task_weighted))  # fmt: skip
        names = ", ".join(b.name for b in self.benchmarks)
        rows.append(("overall", "overall", f"mean of {_count(len(self.benchmarks), 'benchmark')} ({names})", self.tasks,
                     self.mean_of_benchmarks, self.task_weighted))  # fmt: skip
        return rows

    def markdown(self) -> str:
        lines = ["| benchmark | category | tasks | score | task-weighted |", "|---|---|---:|---:|---:|"]
        for level, bench, what, tasks, score, weighted in self.rows():
            if level == "env":
                lines.append(f"| {bench} | {what} | {tasks} | {score:.3f} | {weighted:.3f} |")
            else:
                lines.append(f"| **{bench}** | *{what}* | {tasks} | **{score:.3f}** | {weighted:.3f} |")
        lines += ["", "score: a category's mean reward; a benchmark's mean over its categories; overall, the mean over "
                  "benchmarks. task-weighted: the mean reward over every task of the row."]  # fmt: skip
        return "\n".join(lines)

    def csv(self) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["level", "benchmark", "env", "tasks", "score", "task_weighted"])
        writer.writerows([level, bench, what, tasks, f"{s:.6f}", f"{w:.6f}"] for level, bench, what, tasks, s, w in self.rows())
        return buf.getvalue()


def _count(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def aggregate(results: Iterable[tuple[str, float]]) -> Scores:
    """Scores from (env name, reward) pairs, one per task; raises on no results (nothing to report)."""
    by_env: dict[str, list[float]] = {}
    for env, reward in results:
        by_env.setdefault(env, []).append(float(reward))
    if not by_env:
        raise ValueError("no results to aggregate")
    by_bench: dict[str, list[str]] = {}
    for env in by_env:
        by_bench.setdefault(benchmark_of(env), []).append(env)
    envs = tuple(EnvScore(env, bench, len(by_env[env]), _mean(by_env[env])) for bench, names in by_bench.items() for env in names)
    benchmarks = tuple(
        BenchmarkScore(bench, tuple(names), sum(len(by_env[n]) for n in names), _mean([_mean(by_env[n]) for n in names]),
                       _mean([r for n in names for r in by_env[n]]))  # fmt: skip
        for bench, names in by_bench.items()
    )
    everything = [r for rs in by_env.values() for r in rs]
    return Scores(envs, benchmarks, len(everything), _mean([b.score for b in benchmarks]), _mean(everything))
