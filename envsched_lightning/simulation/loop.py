"""Drive a scheduler (or DAPO-style dynamic sampling) against the simulated learner."""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from envsched_lightning.scheduling import RolloutGroup, build_scheduler

from .diagnostics import spec_classes
from .learner import SimLearner
from .world import SimWorld


@dataclass
class RunResult:
    name: str
    seed: int
    scores: list[float] = field(default_factory=list)  # held-out score after each step (index 0 = before training)
    rollouts: list[int] = field(default_factory=list)  # cumulative rollouts after each step
    zero_var: list[float] = field(default_factory=list)  # zero-variance group fraction per step
    group_std: list[float] = field(default_factory=list)  # mean within-group reward std per step (the signal trained on)
    sched_seconds: list[float] = field(default_factory=list)  # select + update wall time per step
    flaky_share: list[float] = field(default_factory=list)  # share of the step's groups on flaky tasks (reward by chance alone)
    tokens: list[float] = field(default_factory=list)  # cumulative rollout tokens after each step (turns x tokens per turn)

    def record_step(self, learner: SimLearner, trained: list[RolloutGroup], seconds: float = 0.0,
                    zero_var: float | None = None) -> None:
        """One step's entries, after it trained on `trained`: held-out score, rollouts so far, the
        groups' zero-variance share (unless given: dynamic sampling also counts what it discarded),
        their mean reward std and the scheduler's time."""
        self.scores.append(learner.heldout_score())
        self.rollouts.append(learner.rollouts)
        self.tokens.append(learner.tokens)
        self.zero_var.append(float(np.mean([not g.informative for g in trained])) if zero_var is None else zero_var)
        self.group_std.append(float(np.mean([g.std for g in trained])) if trained else 0.0)
        self.sched_seconds.append(seconds)
        tasks = learner.world.train_idx[[g.index for g in trained]]  # only this step's tasks, not the pool
        self.flaky_share.append(float((~np.isnan(learner.world.flaky_p[tasks])).mean()) if trained else 0.0)

    def gain_per_kilo_rollout(self) -> float:
        """Held-out score gained per 1,000 rollouts paid for (what a run's compute bought)."""
        return 1000.0 * (self.scores[-1] - self.scores[0]) / max(self.rollouts[-1], 1) if self.rollouts else 0.0

    def steps_to(self, target: float) -> float:
        """First step whose score reaches `target` (inf if never)."""
        hit = np.flatnonzero(np.asarray(self.scores) >= target)
        return float(hit[0]) if hit.size else float("inf")


def run_scheduler(
    world: SimWorld,
    name: str,
    seed: int,
    steps: int = 120,
    batch_size: int = 32,
    group_size: int = 8,
    label: str | None = None,
    setup: Any = None,
    learner: SimLearner | None = None,
    **options: Any,
) -> RunResult:
    """`setup(scheduler)` may install constraints before the first step; `learner` replaces the
    fresh one a run starts from (a reference that reads its latent state needs it)."""
    learner = learner or SimLearner(world, seed=seed, group_size=group_size)
    sched = build_scheduler(name, world.specs, seed=seed, **options)
    if setup is not None:
        setup(sched)
    res = RunResult(label or name, seed, scores=[learner.heldout_score()])
    for _ in range(steps):
        t0 = time.perf_counter()
        idx = sched.select(batch_size)
        t_sel = time.perf_counter() - t0
        groups = learner.rollout(idx)
        learner.learn(groups)
        t0 = time.perf_counter()
        sched.update(groups)
        res.record_step(learner, groups, seconds=t_sel + time.perf_counter() - t0)
    return res


def run_dynamic_sampling(
    world: SimWorld, seed: int, steps: int = 120, batch_size: int = 32, group_size: int = 8, max_rounds: int = 8,
    scheduler: str = "random", label: str | None = None, **options: Any,
) -> RunResult:
    """DAPO dynamic sampling over any scheduler (uniform by default): each round the scheduler picks a
    whole batch (select + update, so it also learns from the groups dropped), only groups whose
    rewards differ are kept, until the batch is full or `max_rounds` rounds ran; the step trains
    on at most `batch_size` of them. Every discarded group's rollouts are still paid for: compare
    such a run by its `rollouts`, not its steps. The trainer's `grpo.dynamic_sampling` does the same."""
    learner = SimLearner(world, seed=seed, group_size=group_size)
    sched = build_scheduler(scheduler, world.specs, seed=seed, **options)
    name = "dapo_dynamic_sampling" if scheduler == "random" and not options else f"dapo_dynamic_sampling({scheduler})"
    res = RunResult(label or name, seed, scores=[learner.heldout_score()])
    for _ in range(steps):
        kept, drawn, seconds = [], 0, 0.0
        for _ in range(max_rounds):
            t0 = time.perf_counter()
            groups = learner.rollout(sched.select(batch_size))
            sched.update(groups)
            seconds += time.perf_counter() - t0
            drawn += len(groups)
            kept += [g for g in groups if g.informative]
            if len(kept) >= batch_size:
                break
        learner.learn(kept[:batch_size], batch_size=batch_size)
        res.record_step(learner, kept[:batch_size], seconds=seconds, zero_var=1.0 - len(kept) / max(drawn, 1))
    return res


KNOWLEDGE = {"untried": (None, "class"), "tried": (None, "last", "now")}  # what `run_informed` can tell


def run_informed(world: SimWorld, seed: int, steps: int = 120, batch_size: int = 32, group_size: int = 8,
                 untried: str | None = "class", tried: str | None = None, gain: bool = False,
                 noise: bool = False, label: str | None = None, **options: Any) -> RunResult:
    """envsched, except that some predictions are replaced by what only the simulator knows: a
    reference for how far better knowledge of one kind would take it, never a scheduler.

    `untried="class"`: every never-tried task is predicted by the *true* current mean of that
    value over its class (same visible signature, `diagnostics.spec_classes`), the
    best any propagation from siblings could know. Every member of a class gets the same value (a
    leave-one-out mean would rank a class's worst instance first).
    `tried="last"`: every tried task by its true pass rate when its last group ran (the group's
    outcome without the sampling noise of G rollouts, but not what training changed since);
    `tried="now"`: by its true current value (what also the drift since then would tell).
    Every value is on the scheduler's own scale: what a group at that pass rate shows on average
    (`SimLearner.informativeness_at`), so told values and envsched's own predictions compare.
    `gain=True`: every prediction (told or envsched's own) is multiplied by the task's true
    held-out gain per unit of group std (`SimLearner.heldout_gain`) over its mean across tasks,
    so the ranking is by expected held-out progress rather than by spread alone. That takes
    knowing which skills the held-out tasks are limited by, which depends on the held-out set and
    on how the learner generalises: both hidden from a scheduler.
    `noise=True`: every prediction is multiplied by the share of the task's reward the policy
    decides (`SimLearner.policy_share`: 0 for a coin-flip task, 1 - chance in a stochastic
    environment), which nothing a trainer sees reveals."""
    if untried not in KNOWLEDGE["untried"] or tried not in KNOWLEDGE["tried"]:
        raise ValueError(f"untried in {KNOWLEDGE['untried']}, tried in {KNOWLEDGE['tried']}; got {untried!r}, {tried!r}")
    learner = SimLearner(world, seed=seed, group_size=group_size)
    classes = spec_classes(world.specs)
    class_size = np.bincount(classes)
    share = learner.policy_share(world.train_idx).astype(np.float32)  # fixed for the run

    def inform(sched: Any) -> None:
        own = sched.predict

        def predict() -> np.ndarray:
            out = own()
            observed = sched.history.observed
            if untried is not None or tried == "now":
                p = learner.pass_rate(world.train_idx)
            if untried is not None:
                truth = np.bincount(classes, weights=learner.informativeness_at(p)) / class_size
                out = np.where(observed, out, truth[classes])
            if tried is not None:
                out = np.where(observed, learner.informativeness_at(p if tried == "now" else learner.last_pass_rate), out)
            if noise:
                out = out * share
            if gain:
                held_out = learner.heldout_gain()
                if held_out.mean() > 0:
                    out = out * held_out / held_out.mean()
            return out.astype(np.float32)

        sched.predict = predict

    name = label or "_".join(["informed"] + [f"{k}_{v}" for k, v in (("untried", untried), ("tried", tried)) if v]
                             + (["noise"] if noise else []) + (["gain"] if gain else []))
    # told values need no trend test on top (the learning-progress discount reads the same rollouts
    # the told values replace): off unless asked for
    return run_scheduler(world, "envsched", seed, steps, batch_size, group_size, label=name, setup=inform,
                         learner=learner, **{"progress": False, **options})


def run_class_informed(world: SimWorld, seed: int, steps: int = 120, batch_size: int = 32, group_size: int = 8,
                       **options: Any) -> RunResult:
    """envsched told every never-tried task's true class mean (`run_informed(untried="class")`).

    The gap from this row to the oracle is what no spec- and rollout-based prediction of untried
    tasks can close: the instance-level spread within a class."""
    return run_informed(world, seed, steps, batch_size, group_size, untried="class", label="class_informed", **options)


def run_noise_told(world: SimWorld, seed: int, steps: int = 120, batch_size: int = 32, group_size: int = 8,
                   **options: Any) -> RunResult:
    """envsched told how much of each task's reward the policy decides (`run_informed(noise=True)`,
    no other knowledge): what perfect detection of reward noise would be worth."""
    return run_informed(world, seed, steps, batch_size, group_size, untried=None, noise=True, label="noise_told",
                        **options)  # fmt: skip


def run_oracle(world: SimWorld, seed: int, steps: int = 120, batch_size: int = 32, group_size: int = 8) -> RunResult:
    """The ceiling no scheduler can reach: each step, the batch of tasks with the largest *true*
    learnable reward variance (`SimLearner.learnable_variance`: p (1 - p), over the number of checks
    for a partial-credit task, whose group spread is that much smaller, times the share of the
    reward the policy decides: none for a flaky task), read from the learner's latent
    state; in a world with near-copies and interference (`clustered`), see `oracle_batch`. A
    reference for how much of the possible saving a scheduler realises, never a scheduler (it sees
    what no trainer can)."""
    learner = SimLearner(world, seed=seed, group_size=group_size)
    rng = np.random.default_rng(seed)
    res = RunResult("oracle", seed, scores=[learner.heldout_score()])
    for _ in range(steps):
        groups = learner.rollout(oracle_batch(learner, batch_size, rng))
        learner.learn(groups)
        res.record_step(learner, groups)
    return res


def oracle_batch(learner: SimLearner, batch_size: int, rng: np.random.Generator) -> list[int]:
    """The oracle's batch: tasks by true learnable variance, each weighed by what training its
    environment does in all (1 + the sum of its interference on the others, at least 0), and a
    near-copy counted copy_decay^k once k copies of its cluster are in the batch (a greedy fill,
    exact because a value only falls as its cluster fills)."""
    w = learner.world
    value = learner.learnable_variance()
    if w.private_skills is not None:
        value = value * np.clip(1.0 + w.interference.sum(1), 0.0, None)[w.env_of[w.train_idx]]
    value = value + 1e-9 * rng.random(value.shape[0])  # random order among equals
    cluster = w.cluster[w.train_idx]
    if w.copy_decay >= 1.0 or (cluster < 0).all():
        return np.argsort(-value)[:batch_size].tolist()
    heap = [(-v, i) for i, v in enumerate(value.tolist())]
    heapq.heapify(heap)
    picked, in_batch = [], {}
    while heap and len(picked) < batch_size:
        neg, i = heapq.heappop(heap)
        c = int(cluster[i])
        current = value[i] * w.copy_decay ** in_batch.get(c, 0) if c >= 0 else value[i]
        if current < -neg:  # its cluster filled since it was pushed: back in at its value now
            heapq.heappush(heap, (-current, i))
            continue
        picked.append(i)
        if c >= 0:
            in_batch[c] = in_batch.get(c, 0) + 1
    return picked
