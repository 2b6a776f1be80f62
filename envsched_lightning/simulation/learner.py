"""A simulated GRPO learner: pass rates from latent skills, progress only from groups that differ.

The update mirrors what GRPO does with a batch: each group's advantage signal is its reward std
(zero when all rollouts agree), and the step's change is averaged over the batch, so every
zero-variance group dilutes the step. Learning a task raises the skills it uses (and so its
related tasks, in this and other environments) plus a task-specific part that does not transfer.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb, factorial

import numpy as np

from envsched_lightning.scheduling import RolloutGroup

from .world import SimWorld


def _compositions(total: int, parts: int) -> np.ndarray:
    """int[M, parts]: every way to write `total` as an ordered sum of `parts` non-negative counts."""
    if parts == 1:
        return np.array([[total]])
    return np.concatenate([np.concatenate([np.full((len(rest), 1), first), rest], 1)
                           for first in range(total + 1) for rest in [_compositions(total - first, parts - 1)]])


@lru_cache(maxsize=8)
def _informativeness_curve(group_size: int, checks: int, points: int = 2001) -> tuple[np.ndarray, np.ndarray]:
    """(p grid, exact E[min(1, 2 std)] at each p): a sum over every way a group can split among
    the checks-passed levels, weighted by its multinomial probability."""
    levels = np.arange(checks + 1) / checks  # the reward of a rollout that passed j checks
    counts = _compositions(group_size, checks + 1)  # [M, C+1] rollouts at each level
    mean = counts @ levels / group_size
    value = np.minimum(1.0, 2.0 * np.sqrt(np.maximum(counts @ levels**2 / group_size - mean**2, 0.0)))  # [M]
    ways = np.array([factorial(group_size) / np.prod([factorial(int(c)) for c in row]) for row in counts])  # [M]
    grid = np.linspace(0.0, 1.0, points)
    level_prob = np.stack([comb(checks, j) * grid**j * (1 - grid) ** (checks - j) for j in range(checks + 1)], 1)  # [P, C+1]
    prob = ways * np.prod(level_prob[:, None, :] ** counts[None], -1)  # [P, M]
    return grid, prob @ value


def expected_informativeness(p: np.ndarray, group_size: int = 8, checks: int = 1) -> np.ndarray:
    """E[min(1, 2 std)] of a group of `group_size` rewards, each the share of `checks` checks passed
    with probability `p`: the mean of the value a scheduler predicts (min(1, 2 x the group's reward
    std)) for a task whose pass rate is `p`. Not min(1, 2 sqrt(p (1 - p))): that is the limit of
    an infinite group, about twice the expectation near p = 0 or 1 (G = 8, p = 0.05: 0.44 against
    0.23), and would rank nearly-solved and nearly-hopeless tasks far above what their groups show."""
    grid, curve = _informativeness_curve(int(group_size), int(checks))
    return np.interp(np.asarray(p, dtype=np.float64), grid, curve)


class SimLearner:
    def __init__(self, world: SimWorld, seed: int = 0, lr: float | None = None, lr_task: float | None = None,
                 group_size: int = 8) -> None:
        """`lr` / `lr_task`: None takes the world's (`SimWorldConfig.lr`, `.lr_task`)."""
        self.world = world
        self.rng = np.random.default_rng(10_000 + seed)
        self.lr = world.config.lr if lr is None else lr
        self.lr_task = world.config.lr_task if lr_task is None else lr_task
        self.group_size = group_size
        self.level = world.skill_init.copy()
        self.task_bonus = np.zeros(len(world.skills))
        self._bonus_of = world.bonus_of  # int[T]: near-copies keep one task-specific progress
        self.rollouts = 0
        self.tokens = 0.0  # rollout cost so far: turns x the environment's tokens per turn
        self.last_pass_rate = np.zeros(len(world.train_idx))  # per spec: the true pass rate its last group was drawn at
        # per spec: checks behind one rollout's reward (partial credit: the share of them passed)
        self.checks = np.where(world.continuous[world.train_idx], world.config.checks, 1)
        self._clean_std: dict[int, float] = {}  # noisy rewards: each last group's noise-free std
        self._chance_world = bool(world.flaky.any() or (world.chance > 0).any())
        self._judged = world.flaky & bool(world.config.flaky_judge)  # bool[T]: coins cast after the episode
        # per task (train and held-out): the skills it needs, padded with -1
        self._needs = np.full((len(world.skills), max(map(len, world.skills), default=1)), -1, dtype=np.int64)
        for t, k in enumerate(world.skills):
            self._needs[t, : len(k)] = k
        self._heldout_weight = self._score_weights()  # per held-out task: its weight in `heldout_score`

    def _score_weights(self) -> np.ndarray:
        """float[H]: each held-out task's share of the held-out score: 1 / H over tasks, or
        1 / (environments x its environment's held-out count) over environments."""
        w = self.world
        if w.config.score_over == "tasks":
            return np.full(len(w.heldout_idx), 1.0 / len(w.heldout_idx))
        _, inverse, counts = np.unique(w.env_of[w.heldout_idx], return_inverse=True, return_counts=True)
        return 1.0 / (len(counts) * counts[inverse])

    def bottleneck(self, tasks: np.ndarray) -> np.ndarray:
        """int[len(tasks)]: the least advanced skill each task needs; its pass rate follows that one."""
        needs = self._needs[np.asarray(tasks, dtype=np.int64)]
        level = np.where(needs >= 0, self.level[needs], np.inf)  # padding is never the least advanced
        return np.take_along_axis(needs, level.argmin(1)[:, None], 1)[:, 0]

    def step_success(self, tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(float[len(tasks), K] success chance of each needed skill's step, bool mask of real
        entries): sigmoid(sharpness x (level + task bonus - difficulty)); padding reads 1."""
        tasks = np.asarray(tasks, dtype=np.int64)
        needs = self._needs[tasks]
        real = needs >= 0
        own = self.task_bonus[self._bonus_of[tasks]] - self.world.difficulty[tasks]
        x = self.world.config.sharpness * (self.level[needs] + own[:, None])
        return np.where(real, 1.0 / (1.0 + np.exp(-x)), 1.0), real

    def policy_pass_rate(self, tasks: np.ndarray) -> np.ndarray:
        """float[len(tasks)]: the chance the policy solves each task (what training moves)."""
        w, k = self.world, self.world.config.sharpness
        if w.composition == "product":
            return self.step_success(tasks)[0].prod(1)
        x = k * (self.level[self.bottleneck(tasks)] + self.task_bonus[self._bonus_of[tasks]] - w.difficulty[tasks])
        return 1.0 / (1.0 + np.exp(-x))

    def pass_rate(self, tasks: np.ndarray) -> np.ndarray:
        """float[len(tasks)]: the chance a rollout of each task is rewarded: the policy's, except where
        chance decides (a stochastic environment's coin on part of the rollouts, a flaky task's coin on
        all of them)."""
        tasks = np.asarray(tasks, dtype=np.int64)
        p = self.policy_pass_rate(tasks)
        chance, coin = self.world.chance[tasks], self.world.flaky_p[tasks]
        p = (1.0 - chance) * p + 0.5 * chance
        return np.where(np.isnan(coin), p, coin)

    def policy_share(self, tasks: np.ndarray) -> np.ndarray:
        """float[len(tasks)]: the share of each task's reward that the policy decides (0 for a flaky task)."""
        tasks = np.asarray(tasks, dtype=np.int64)
        return np.where(self.world.flaky[tasks], 0.0, 1.0 - self.world.chance[tasks])

    def learnable_variance(self) -> np.ndarray:
        """float[S]: per spec, the variance of one rollout's reward that the policy's skill explains
        (`reward_variance` of the policy's pass rate, times the share it decides): what the oracle
        ranks by. A flaky task's coin has variance but none of it is learnable."""
        tasks = self.world.train_idx
        return self.reward_variance(self.policy_pass_rate(tasks)) * self.policy_share(tasks)

    def reward_variance(self, p: np.ndarray) -> np.ndarray:
        """float[S]: the true variance of one rollout's reward for each spec at pass rates `p` [S]:
        p (1 - p) for a binary task, p (1 - p) / checks for a partial-credit one (the share of
        `checks` independent checks passed). What learning follows: the verifier's noise left out."""
        return p * (1 - p) / self.checks

    def informativeness_at(self, p: np.ndarray) -> np.ndarray:
        """float[S]: what a group of each spec would show on average, on the scheduler's scale
        (min(1, 2 x reward std), see `expected_informativeness`), were its pass rate `p` [S]:
        partial-credit tasks average over their checks, and a noisy verifier's flips count."""
        noise = self.world.config.reward_noise
        observed = p * (1 - noise) + (1 - p) * noise  # a check reads as passed
        out = np.empty(len(self.checks))
        for c in np.unique(self.checks):
            mine = self.checks == c
            out[mine] = expected_informativeness(observed[mine], self.group_size, int(c))
        return out

    def rollout(self, indices: list[int]) -> list[RolloutGroup]:
        """G rollouts of each scheduled task (indices into `world.specs`)."""
        tasks = self.world.train_idx[np.asarray(indices, dtype=np.int64)]
        p = self.pass_rate(tasks)
        self.last_pass_rate[np.asarray(indices, dtype=np.int64)] = p
        groups = []
        policy = self.policy_pass_rate(tasks) if self._chance_world else p
        for i, t, pt, pp in zip(indices, tasks, p, policy):
            passed = self.rng.random((self.group_size, int(self.checks[i]))) < pp
            clean = None
            # a judge's coin is cast after the trajectory, which follows the policy's own outcome (`flaky_judge`)
            own = passed.mean(1) if self._judged[t] else None
            if self._chance_world:  # chance decides some rollouts (stochastic environment) or all (flaky task)
                clean = self._by_chance(int(t), passed)
            flipped = None
            if self.world.config.reward_noise > 0:  # a noisy verifier: each check flipped with this chance
                flipped = self.rng.random(passed.shape) < self.world.config.reward_noise
                passed ^= flipped
            r = passed.mean(1)
            # what GRPO learns from is the spread of the *true* outcomes: a flipped check is noise
            if clean is None and flipped is not None:
                clean = float((passed ^ flipped).mean(1).std())
            if clean is not None:
                self._clean_std[int(i)] = clean
            done = r if own is None else own
            turns = self.world.n_calls[t]
            if self.world.failed_turns is None:
                lengths = turns + self.rng.integers(0, 2, self.group_size) * (1 - done)
            else:  # a failed rollout keeps trying: that share of the task's turns again
                lengths = turns * (1.0 + self.world.failed_turns * (1 - done))
            tokens = lengths * float(self.world.tokens_per_turn[self.world.env_of[t]])
            self.tokens += float(tokens.sum())
            groups.append(RolloutGroup(int(i), r.tolist(), lengths.tolist(), tokens.tolist()))
        self.rollouts += len(indices) * self.group_size
        return groups

    def _by_chance(self, task: int, passed: np.ndarray) -> float:
        """Replace, in place, the outcomes chance decides in one group of `task`; returns the learning
        signal left: the spread of the policy's own outcomes times the share of rollouts it decided
        (0 for a flaky task: its reward says nothing about the policy)."""
        coin = self.world.flaky_p[task]
        if not np.isnan(coin):
            passed[:] = self.rng.random(passed.shape) < coin
            return 0.0
        policy_std = float(passed.mean(1).std())
        level = self.world.chance[task]
        if level > 0:
            replaced = self.rng.random(passed.shape[0]) < level
            passed[replaced] = self.rng.random((int(replaced.sum()), passed.shape[1])) < 0.5
            policy_std *= 1.0 - float(replaced.mean())
        return policy_std

    def learn(self, groups: list[RolloutGroup], batch_size: int | None = None) -> None:
        """One GRPO step on these groups; progress is averaged over `batch_size` groups. In a world
        with near-copies, interference or forgetting (`clustered`), the k-th copy of a cluster in the
        batch counts copy_decay^(k-1), each environment's gain moves the others' private skills as
        `interference` says, and an environment with no group in the batch forgets."""
        w, b = self.world, batch_size or len(groups)
        copies_seen: dict[int, int] = {}
        own_gain = np.zeros(w.interference.shape[0])  # per environment: its skills' step, per skill
        for g in groups:
            t = self.world.train_idx[g.index]
            clean = self._clean_std.get(g.index)
            signal = (g.std if clean is None else clean) / b  # zero-variance groups add nothing but count in b
            if w.cluster[t] >= 0:  # a near-copy: its gradient mostly repeats the earlier copies'
                k = copies_seen[int(w.cluster[t])] = copies_seen.get(int(w.cluster[t]), 0) + 1
                signal *= w.copy_decay ** (k - 1)
            req = self.world.skills[t]
            own_gain[w.env_of[t]] += signal / len(req)
            if self.world.composition == "product":  # each skill by how much its step held the task back
                fail = 1.0 - self.step_success([t])[0][0, : len(req)]
                credit = fail / fail.sum() if fail.sum() > 0 else np.full(len(req), 1.0 / len(req))
                self.level[req] += self.lr * signal * credit
            else:
                self.level[req] += self.lr * signal / len(req)
            self.task_bonus[self._bonus_of[t]] += self.lr_task * signal
        if w.private_skills is not None:
            self._across_environments(own_gain, trained=np.unique(w.env_of[w.train_idx[[g.index for g in groups]]]))

    def _across_environments(self, own_gain: np.ndarray, trained: np.ndarray) -> None:
        """Interference (each environment's private skills moved by the others' gains) and forgetting
        (an environment absent from the step loses a share of its private skills' progress)."""
        w = self.world
        moved = own_gain @ w.interference  # float[E]: per environment, the others' effect per skill
        absent = np.ones(len(w.private_skills), dtype=bool)
        absent[trained] = False
        for f, skills in enumerate(w.private_skills):
            if moved[f] != 0.0:
                self.level[skills] += self.lr * moved[f]
            if absent[f] and w.forgetting > 0:
                init = w.skill_init[skills]
                self.level[skills] = init + (1.0 - w.forgetting) * (self.level[skills] - init)

    def skill_gradient(self) -> np.ndarray:
        """float[num_skills]: d `heldout_score` / d each skill's level, exactly. A held-out task's
        pass rate moves only with its bottleneck skill (the least advanced it needs), at slope
        sharpness x p (1 - p), weighted as the score weighs that task."""
        tasks = self.world.heldout_idx
        p = self.policy_pass_rate(tasks)
        share = self._heldout_weight * self.policy_share(tasks)  # chance's part of a reward does not move
        grad = np.zeros(self.level.shape[0])
        if self.world.composition == "product":  # d prod / d level_k = sharpness x p x (1 - step k's success)
            step, real = self.step_success(tasks)
            slope = self.world.config.sharpness * p[:, None] * (1 - step) * share[:, None]
            needs = self._needs[tasks]
            np.add.at(grad, needs[real], slope[real])
            return grad
        slope = self.world.config.sharpness * p * (1 - p)
        np.add.at(grad, self.bottleneck(tasks), share * slope)
        return grad

    def heldout_gain(self) -> np.ndarray:
        """float[S]: per spec, the held-out score one unit of its group's reward std would add now
        (to first order): `learn` raises each of the task's skills by lr x signal / their number,
        so it is lr x the mean `skill_gradient` over them. What the oracle's variance ranking
        leaves out: an informative group moves the score only through skills held-out tasks are
        limited by."""
        needs = self._needs[self.world.train_idx]
        grad = np.append(self.skill_gradient(), 0.0)  # the padding's index -1 reads this 0
        return self.lr * grad[needs].sum(1) / (needs >= 0).sum(1)

    def heldout_score(self) -> float:
        """Mean over environments (or, with `score_over="tasks"`, over tasks) of the held-out tasks'
        expected pass rate."""
        return float(self._heldout_weight @ self.pass_rate(self.world.heldout_idx))
