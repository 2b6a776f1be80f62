"""A second world mechanism, unlike `world.make_world` in kind: tasks compose latent skills.

`make_world` builds tasks from templates (siblings share tools, pattern and difficulty) and a
task's pass rate follows its least advanced skill. Here there are no templates: every task is its
own draw of 1-4 skills from its environment's palette (some skills private to the environment,
some from a pool shared across environments), and it succeeds only if every step does, so its
pass rate is the *product* of one success chance per skill. Training a task moves each of its
skills by how much that skill held it back. Two tasks are related exactly as far as their skill
sets overlap, which no grouping of the metadata captures:

- each skill of a task shows as a tool with probability `tool_reveal` (else hidden), and a decoy
  tool is offered with probability 0.3; tools are named per environment, so a skill shared across
  environments never shares a tool name;
- a shared skill leaves an execution signature (a feature `sig_<j>`, visible across environments)
  with probability `signature_reveal`;
- state keys group skills in pairs (two skills read the same table), and the verifier follows the
  task's last step.

Skills are drawn with Zipf-like weights (`skill_zipf`): a few common skills, a tail of rare ones.
The learner (`SimLearner`) reads `composition="product"` off the world.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envsched_lightning.scheduling import TaskSpec

from .ranges import KnobDraws
from .world import VERIFIERS, SimWorld, _chance_of_rewards, draw_env_size


@dataclass(frozen=True)
class ComposedWorldConfig:
    num_envs: int = 6
    tasks_per_env: tuple[int, int] = (100, 300)
    size_dist: str = "uniform"  # "uniform" in tasks_per_env, or "loguniform"
    heldout_per_env: int = 30
    own_skills: int = 4  # skills private to an environment
    shared_pool: int = 6  # skills any environment may share
    shared_per_env: int = 2  # of them, how many an environment uses
    composition_mean: float = 2.0  # skills per task: 1 + Poisson(mean - 1), at most 4
    skill_zipf: float = 1.0  # skill weights ~ rank^-zipf within an environment's palette
    own_init: tuple[float, float] = (-0.5, 1.5)  # starting levels of private skills
    shared_init: tuple[float, float] = (-0.5, 1.0)
    difficulty: tuple[float, float] = (-1.5, 3.5)  # per task, against every one of its skills
    sharpness: float = 3.0
    tool_reveal: float = 0.8
    signature_reveal: float = 0.5
    continuous_env_share: float = 0.25
    checks: int = 4
    reward_noise: float = 0.0
    lr: float = 2.0
    lr_task: float = 4.0
    score_over: str = "envs"
    flaky_envs: float = 0.0  # as in `SimWorldConfig`: rewards by chance, from their own generator
    flaky_tasks: float = 0.45
    stochastic_envs: float = 0.0
    stochastic_level: tuple[float, float] = (0.2, 0.5)
    flaky_judge: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if self.size_dist not in ("uniform", "loguniform") or self.score_over not in ("envs", "tasks"):
            raise ValueError(f"size_dist in (uniform, loguniform), score_over in (envs, tasks); got {self.size_dist}, "
                             f"{self.score_over}")  # fmt: skip
        if self.shared_per_env > self.shared_pool or self.composition_mean < 1.0:
            raise ValueError(f"shared_per_env ({self.shared_per_env}) must not exceed shared_pool "
                             f"({self.shared_pool}); composition_mean >= 1 (got {self.composition_mean})")  # fmt: skip
        for name in ("tool_reveal", "signature_reveal", "continuous_env_share", "reward_noise", "flaky_envs",
                     "flaky_tasks", "stochastic_envs"):  # fmt: skip
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")


def make_composed_world(cfg: ComposedWorldConfig) -> SimWorld:
    rng = np.random.default_rng([cfg.seed, 31])
    env_names = [f"env{e:02d}" for e in range(cfg.num_envs)]
    # skill ids: the shared pool first, then each environment's private ones
    init = list(rng.uniform(*cfg.shared_init, cfg.shared_pool))
    palettes: list[np.ndarray] = []
    for _ in range(cfg.num_envs):
        shared = rng.choice(cfg.shared_pool, size=cfg.shared_per_env, replace=False)
        own = len(init) + np.arange(cfg.own_skills)
        init.extend(np.full(cfg.own_skills, rng.uniform(*cfg.own_init)))
        palettes.append(rng.permutation(np.concatenate([shared, own])))  # the order sets which are common
    env_of, skills, diff, cont, calls, is_train, specs = [], [], [], [], [], [], []
    for e, name in enumerate(env_names):
        palette = palettes[e]
        weights = np.arange(1, palette.size + 1, dtype=np.float64) ** -cfg.skill_zipf
        weights /= weights.sum()
        tool_of = {int(k): f"{name}.op{j}" for j, k in enumerate(palette)}  # per-environment names
        continuous = rng.random() < cfg.continuous_env_share
        n_train = draw_env_size(rng, cfg.tasks_per_env, cfg.size_dist)
        for t in range(n_train + cfg.heldout_per_env):
            k = int(min(4, 1 + rng.poisson(cfg.composition_mean - 1.0)))
            need = rng.choice(palette, size=min(k, palette.size), replace=False, p=weights)
            n_call = len(need) + int(rng.random() < 0.4)
            env_of.append(e)
            skills.append(np.unique(need).astype(np.int64))
            diff.append(float(rng.uniform(*cfg.difficulty)))
            cont.append(continuous)
            calls.append(n_call)
            train = t < n_train
            is_train.append(train)
            if not train:
                continue
            tools = {tool_of[int(s)] for s in need if rng.random() < cfg.tool_reveal}
            if rng.random() < 0.3:
                tools.add(f"{name}.op{int(rng.integers(palette.size))}")  # a decoy: offered, not needed
            features = {"n_calls": float(n_call)}
            for s in need:
                if s < cfg.shared_pool and rng.random() < cfg.signature_reveal:
                    features[f"sig_{int(s)}"] = 1.0
            specs.append(TaskSpec(
                env=name, task_id=f"t{t:05d}", tools=tuple(sorted(tools)),
                state_keys=tuple(sorted({f"table{int(s) // 2}" for s in need})),
                verifier=VERIFIERS[int(need[-1]) % len(VERIFIERS)], features=features,
                reward_type="continuous" if continuous else "binary"))  # fmt: skip
    env_arr, is_train_arr = np.asarray(env_of), np.asarray(is_train)
    all_idx = np.arange(len(env_of))
    flaky_p, chance = _chance_of_rewards(cfg, env_arr)
    return SimWorld(config=cfg, specs=specs, env_of=env_arr, skills=skills, difficulty=np.asarray(diff),
                    continuous=np.asarray(cont), n_calls=np.asarray(calls), skill_init=np.asarray(init, dtype=np.float64),
                    train_idx=all_idx[is_train_arr], heldout_idx=all_idx[~is_train_arr], env_names=env_names,
                    flaky_p=flaky_p, chance=chance, composition="product")  # fmt: skip


# (low, high) of every drawn knob of the composed family
COMPOSED_RANGES: dict[str, tuple[float, float]] = {
    "num_envs": (3, 14),
    "tasks_min": (20, 120),
    "tasks_max": (150, 500),
    "heldout_per_env": (10, 40),
    "own_skills": (2, 6),
    "shared_pool": (2, 10),
    "shared_per_env": (1, 4),
    "composition_mean": (1.2, 3.0),
    "skill_zipf": (0.0, 1.5),
    "own_init_low": (-1.5, 0.5),
    "init_width": (0.5, 2.5),
    "shared_init_low": (-1.0, 0.5),
    "difficulty_low": (-2.5, -0.5),
    "difficulty_high": (2.0, 5.0),
    "sharpness": (1.5, 5.0),
    "tool_reveal": (0.4, 1.0),
    "signature_reveal": (0.0, 0.9),
    "continuous_env_share": (0.0, 0.6),
    "checks": (2, 8),
    "lr": (1.0, 4.0),
    "lr_task": (1.0, 8.0),
}


def sample_composed_params(rng: np.random.Generator) -> ComposedWorldConfig:
    """One composed world's structure, every knob drawn from `COMPOSED_RANGES` (integers inclusive)."""

    draws = KnobDraws(rng, COMPOSED_RANGES)
    u, i = draws.uniform, draws.integer

    own_lo, width, shared_lo = u("own_init_low"), u("init_width"), u("shared_init_low")
    pool = i("shared_pool")
    return ComposedWorldConfig(
        num_envs=i("num_envs"),
        tasks_per_env=(i("tasks_min"), i("tasks_max")),
        size_dist="loguniform" if rng.random() < 0.5 else "uniform",
        heldout_per_env=i("heldout_per_env"),
        own_skills=i("own_skills"),
        shared_pool=pool,
        shared_per_env=min(pool, i("shared_per_env")),
        composition_mean=u("composition_mean"),
        skill_zipf=u("skill_zipf"),
        own_init=(own_lo, own_lo + width),
        shared_init=(shared_lo, shared_lo + width),
        difficulty=(u("difficulty_low"), u("difficulty_high")),
        sharpness=u("sharpness"),
        tool_reveal=u("tool_reveal"),
        signature_reveal=u("signature_reveal"),
        continuous_env_share=u("continuous_env_share"),
        checks=i("checks"),
        lr=u("lr"),
        lr_task=u("lr_task"),
        score_over="tasks" if rng.random() < 0.5 else "envs",
        seed=int(rng.integers(2**31)),
    )
