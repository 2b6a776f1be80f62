"""The latent structure of a simulated multi-environment world, and the `TaskSpec`s it shows.

Why it looks like agentic RL: tasks are instances of templates (as benchmark tasks are: one
tool flow, many parameterisations), so siblings share tools, pattern and, up to instance noise,
difficulty. Each task needs a few latent skills, some tied to its environment's
tools and state (shared within an environment) and one execution pattern (lookup-then-write,
multi-hop, parallel calls, ...) shared across the environments that use it. Difficulty spans a wide
range, so many tasks start out of reach and become learnable only after tasks that train the same
skills are learnt, and some environments start near saturation. The scheduler sees only the
`TaskSpec`s: tool names, state keys, verifier, coarse features. Never skills or pass rates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from envsched_lightning.scheduling import TaskSpec

PATTERNS = ("single_call", "lookup_write", "multi_hop", "parallel", "clarify", "refuse", "aggregate", "retry")
VERIFIERS = ("state_match", "call_match", "answer_match")


@dataclass(frozen=True)
class SimWorldConfig:
    num_envs: int = 8
    tasks_per_env: tuple[int, int] = (100, 300)  # uniform range, per environment
    heldout_per_env: int = 40
    skills_per_env: int = 4  # tool/state skills private to an environment
    patterns_per_env: int = 3  # execution patterns (global skills) an environment uses
    skill_init: tuple[float, float] = (-1.0, 1.5)  # per-environment starting level range
    tasks_per_template: int = 15  # instances of one task template (same tools, pattern, base difficulty)
    instance_noise: float = 0.6  # std of an instance's difficulty around its template's
    difficulty: tuple[float, float] = (-1.0, 6.0)  # wide: ~3/4 of uniform groups are all-fail or all-pass
    sharpness: float = 3.0  # slope of pass rate in (skill - difficulty)
    continuous_env_share: float = 0.25  # environments with partial-credit rewards
    seed: int = 0
    # Structural knobs of the world family (`family.py`). Their defaults reproduce the three named
    # worlds exactly: every draw they need comes from a second generator, so leaving them at their
    # defaults leaves the first generator's stream (and so every named world) unchanged.
    size_dist: str = "uniform"  # environment sizes: "uniform" in tasks_per_env, or "loguniform" (skewed)
    cross_skill_share: float = 0.0  # chance an environment's private skill is secretly another environment's
    pattern_shared: float = 1.0  # chance an environment's use of a pattern is the shared skill (else a private copy)
    pattern_init: tuple[float, float] = (0.0, 0.0)  # starting level range of pattern skills
    metadata_noise: float = 0.0  # chance a task's visible tools / state / pattern belong to another template
    checks: int = 4  # partial-credit rewards: fraction of this many checks passed
    reward_noise: float = 0.0  # chance each rollout's check is flipped
    lr: float = 2.0  # learner: skill step per unit of group std (how fast related groups saturate)
    lr_task: float = 4.0  # learner: task-specific step
    score_over: str = "envs"  # held-out score: mean over environments ("envs") or over tasks ("tasks")
    # Rewards that do not (or only partly) depend on the policy. Every draw they need comes from a
    # third generator, so at their defaults (0) every other world is unchanged.
    flaky_envs: float = 0.0  # share of environments with a flaky verifier (a noisy judge, a stochastic user)
    flaky_tasks: float = 0.45  # in such an environment, the share of tasks whose reward is a coin flip
    stochastic_envs: float = 0.0  # share of environments where chance decides part of every rollout
    stochastic_level: tuple[float, float] = (0.2, 0.5)  # there, the chance a rollout's outcome is a coin flip
    # how a flaky task's coin is cast: False, within the episode (a stochastic simulated user), so the
    # trajectory follows the outcome; True, by a judge after it, so the trajectory is the policy's own
    flaky_judge: bool = False

    def __post_init__(self) -> None:
        if self.size_dist not in ("uniform", "loguniform") or self.score_over not in ("envs", "tasks"):
            raise ValueError(f"size_dist in (uniform, loguniform), score_over in (envs, tasks); got {self.size_dist}, "
                             f"{self.score_over}")
        for name in ("cross_skill_share", "pattern_shared", "metadata_noise", "reward_noise", "continuous_env_share",
                     "flaky_envs", "flaky_tasks", "stochastic_envs"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")


WORLD_PRESETS: dict[str, SimWorldConfig] = {
    "default": SimWorldConfig(),
    # a second world with other sizes, to check that nothing is tuned to the first one
    "skewed": SimWorldConfig(num_envs=4, tasks_per_env=(20, 2000), heldout_per_env=30, seed=1),
    "wide": SimWorldConfig(num_envs=30, tasks_per_env=(20, 200), heldout_per_env=20, skills_per_env=3, seed=2),
}


@dataclass
class SimWorld:
    """Latent facts (for the learner) and the visible `TaskSpec`s (for the scheduler)."""

    config: SimWorldConfig
    specs: list[TaskSpec]
    env_of: np.ndarray  # int[T] environment of every task (train then held-out)
    skills: list[np.ndarray]  # per task: indices of the latent skills it needs
    difficulty: np.ndarray  # float[T]
    continuous: np.ndarray  # bool[T] partial-credit reward
    n_calls: np.ndarray  # int[T] tool calls a solution takes (shows up as rollout length)
    skill_init: np.ndarray  # float[num_skills]
    train_idx: np.ndarray  # indices of schedulable tasks (== positions in `specs`)
    heldout_idx: np.ndarray
    env_names: list[str] = field(default_factory=list)
    # float[T]: a flaky task's coin bias, its reward whatever the policy does; NaN for every other task
    flaky_p: np.ndarray | None = None
    # float[T]: the chance chance alone decides one rollout of the task (a stochastic environment), else 0
    chance: np.ndarray | None = None
    # how a task's skills make its pass rate: "bottleneck" (the least advanced one decides, this
    # module's worlds) or "product" (every step must succeed, `composed.make_composed_world`)
    composition: str = "bottleneck"
    # What `clustered.make_clustered_world` adds (the defaults leave every other world as it was):
    # int[T] near-copy cluster of each task (-1: none); copies share their task-specific progress,
    # and the k-th copy of a cluster in one batch teaches copy_decay^(k-1) of a lone one's signal
    cluster: np.ndarray | None = None
    copy_decay: float = 1.0
    # float[E, E]: [e, f] moves environment f's private skills per unit of e's own gain
    interference: np.ndarray | None = None
    private_skills: list[np.ndarray] | None = None  # per environment: its private skills' indices
    forgetting: float = 0.0  # share of a private skill's progress lost per step without its environment
    # a failed rollout's extra turns: None, 0 or 1 at random (the other mechanisms); a number, that
    # share of the task's turns
    failed_turns: float | None = None
    tokens_per_turn: np.ndarray | None = None  # float[E]; None: one token per turn

    def __post_init__(self) -> None:
        if self.composition not in ("bottleneck", "product"):
            raise ValueError(f"composition must be 'bottleneck' or 'product', got {self.composition!r}")
        n, envs = len(self.env_of), (int(self.env_of.max()) + 1 if len(self.env_of) else 0)
        self.flaky_p = np.full(n, np.nan) if self.flaky_p is None else self.flaky_p
        self.chance = np.zeros(n) if self.chance is None else self.chance
        self.cluster = np.full(n, -1, dtype=np.int64) if self.cluster is None else np.asarray(self.cluster, np.int64)
        self.interference = np.zeros((envs, envs)) if self.interference is None else self.interference
        self.tokens_per_turn = np.ones(envs) if self.tokens_per_turn is None else self.tokens_per_turn

    @property
    def bonus_of(self) -> np.ndarray:
        """int[T]: where each task's task-specific progress is kept: the first member of its copy
        cluster, else its own index."""
        first = {}
        for t, c in enumerate(self.cluster.tolist()):
            first.setdefault(c, t)
        return np.array([first[c] if c >= 0 else t for t, c in enumerate(self.cluster.tolist())], dtype=np.int64)

    @property
    def flaky(self) -> np.ndarray:
        """bool[T]: tasks whose reward does not depend on the policy."""
        return ~np.isnan(self.flaky_p)

    @property
    def num_skills(self) -> int:
        return int(self.skill_init.shape[0])


def make_world(config: SimWorldConfig | str = "default") -> SimWorld:
    cfg = WORLD_PRESETS[config] if isinstance(config, str) else config
    rng = np.random.default_rng(cfg.seed)
    knob = np.random.default_rng([cfg.seed, 7])  # the family knobs' draws (see SimWorldConfig)
    n_pat = len(PATTERNS)
    env_names = [f"env{e:02d}" for e in range(cfg.num_envs)]
    skill_init = [np.zeros(n_pat) if cfg.pattern_init == (0.0, 0.0) else knob.uniform(*cfg.pattern_init, n_pat)]
    env_skill0: list[int] = []
    for e in range(cfg.num_envs):
        env_skill0.append(n_pat + e * cfg.skills_per_env)
        skill_init.append(np.full(cfg.skills_per_env, rng.uniform(*cfg.skill_init)))
    init = list(np.concatenate(skill_init))
    # latent skill of (environment, private skill k): its own, or with `cross_skill_share` another
    # environment's (shared across environments, invisible in tool names)
    skill_of = [env_skill0[e] + np.arange(cfg.skills_per_env) for e in range(cfg.num_envs)]
    if cfg.cross_skill_share > 0:
        for e in range(1, cfg.num_envs):
            for k in range(cfg.skills_per_env):
                if knob.random() < cfg.cross_skill_share:
                    skill_of[e][k] = skill_of[int(knob.integers(e))][int(knob.integers(cfg.skills_per_env))]

    def pattern_skill(p: int) -> int:
        """The shared pattern skill, or with 1 - `pattern_shared` a private copy with its own level."""
        if cfg.pattern_shared >= 1.0 or knob.random() < cfg.pattern_shared:
            return p
        init.append(float(knob.uniform(*cfg.skill_init)))
        return len(init) - 1

    env_of, skills, diff, cont, calls, is_train, specs = [], [], [], [], [], [], []
    for e, name in enumerate(env_names):
        patterns = rng.choice(n_pat, size=min(cfg.patterns_per_env, n_pat), replace=False)
        pat_skill = {int(p): pattern_skill(int(p)) for p in patterns}
        verifiers = rng.choice(len(VERIFIERS), size=2, replace=False)
        continuous = rng.random() < cfg.continuous_env_share
        n_train = draw_env_size(rng, cfg.tasks_per_env, cfg.size_dist, knob)
        n_templates = max(3, (n_train + cfg.heldout_per_env) // cfg.tasks_per_template)
        templates = []  # (own skills, pattern, base difficulty, verifier): what instances share
        for _ in range(n_templates):
            own = rng.choice(cfg.skills_per_env, size=int(rng.integers(1, 3)), replace=False)
            templates.append((own, int(rng.choice(patterns)), float(rng.uniform(*cfg.difficulty)), int(rng.integers(2))))
        for t in range(n_train + cfg.heldout_per_env):
            own, pat, base, ver = templates[int(rng.integers(n_templates))]
            d = base + float(rng.normal(0.0, cfg.instance_noise))
            n_call = 1 + len(own) + int(pat in (2, 3, 6)) + int(rng.random() < 0.3)
            env_of.append(e)
            skills.append(np.concatenate([[pat_skill[pat]], skill_of[e][own]]).astype(np.int64))
            diff.append(d)
            cont.append(continuous)
            calls.append(n_call)
            train = t < n_train
            is_train.append(train)
            if train:
                shown_own, shown_pat = own, pat  # what the metadata says; with `metadata_noise`, another template's
                if cfg.metadata_noise > 0 and knob.random() < cfg.metadata_noise:
                    shown_own, shown_pat, _, _ = templates[int(knob.integers(n_templates))]
                tools = [f"{name}.tool{k}{v}" for k in shown_own for v in ("a", "b")]
                if rng.random() < 0.3:  # a decoy tool: offered, not needed
                    tools.append(f"{name}.tool{int(rng.integers(cfg.skills_per_env))}c")
                features = {"n_calls": float(n_call), f"pattern_{PATTERNS[shown_pat]}": 1.0}
                specs.append(
                    TaskSpec(
                        env=name,
                        task_id=f"t{t:05d}",
                        tools=tuple(sorted(set(tools))),
                        state_keys=tuple(f"table{k}" for k in sorted(shown_own)),
                        verifier=VERIFIERS[int(verifiers[ver])],
                        features=features,
                        reward_type="continuous" if continuous else "binary",
                    )
                )
    is_train_arr = np.asarray(is_train)
    all_idx = np.arange(len(env_of))
    flaky_p, chance = _chance_of_rewards(cfg, np.asarray(env_of))
    return SimWorld(
        config=cfg,
        specs=specs,
        env_of=np.asarray(env_of),
        skills=skills,
        difficulty=np.asarray(diff),
        continuous=np.asarray(cont),
        n_calls=np.asarray(calls),
        skill_init=np.asarray(init, dtype=np.float64),
        train_idx=all_idx[is_train_arr],
        heldout_idx=all_idx[~is_train_arr],
        env_names=env_names,
        flaky_p=flaky_p,
        chance=chance,
    )


def draw_env_size(rng: np.random.Generator, tasks_per_env: tuple[int, int], size_dist: str,
                  skew_rng: np.random.Generator | None = None) -> int:
    """One environment's training-task count: uniform in `tasks_per_env` (always drawn from `rng`, so the
    stream is the same either way), replaced by a log-uniform draw from `skew_rng` (else `rng`) when
    `size_dist` is "loguniform" (a few large environments, many small ones)."""
    n = int(rng.integers(tasks_per_env[0], tasks_per_env[1] + 1))
    if size_dist == "loguniform":
        n = int(round(np.exp((skew_rng or rng).uniform(*np.log(tasks_per_env)))))
    return n


def _chance_of_rewards(cfg: SimWorldConfig, env_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(flaky_p, chance) per task: which environments have a flaky verifier, and which of their tasks
    it decides alone (a coin of bias 0.3-0.7, per task: a judge or a simulated user that is noisy on
    some tasks, not a kind of task); which environments are stochastic, and how much. The metadata
    shows none of it."""
    rng = np.random.default_rng([cfg.seed, 11])
    n, envs = env_of.shape[0], int(env_of.max()) + 1 if env_of.size else 0
    flaky_p, chance = np.full(n, np.nan), np.zeros(n)
    if cfg.flaky_envs > 0:
        k = max(1, int(round(cfg.flaky_envs * envs)))
        flaky_env = np.isin(env_of, rng.choice(envs, size=min(k, envs), replace=False))
        coin = flaky_env & (rng.random(n) < cfg.flaky_tasks)
        flaky_p[coin] = rng.uniform(0.3, 0.7, int(coin.sum()))
    if cfg.stochastic_envs > 0:
        k = max(1, int(round(cfg.stochastic_envs * envs)))
        level = np.zeros(envs)
        chosen = rng.choice(envs, size=min(k, envs), replace=False)
        level[chosen] = rng.uniform(*cfg.stochastic_level, chosen.size)
        chance = level[env_of]
    return flaky_p, chance
