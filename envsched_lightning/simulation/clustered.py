"""A third world mechanism: what a large tool-use pool adds to templates. Near-copies, environments
that interfere with each other, and rollouts of very different cost.

Tasks come from templates as in `world.make_world` (a task's pass rate follows the least advanced
of its skills: one or two private tool/state skills of its environment and one execution pattern
shared across environments). On top of that:

- **near-copy clusters**: a share of an environment's templates (`copy_share`) are sources of
  near-copies, as when many tasks are generated from one API document or one prompt template:
  `cluster_size` instances whose difficulty differs by `copy_noise` only and whose metadata is
  identical. Copies share their task-specific progress (learning one is learning the others),
  and within one batch the k-th copy of a cluster teaches `copy_decay`^(k-1) of what a lone copy
  would: their gradients point the same way;
- **interference**: training on some environments (`hurt_envs` of them) lowers the private
  skills of one or two others by `hurt_strength` times the step's own gain, and some pairs help
  each other a little (`help_strength`);
- **forgetting**: an environment absent from a step loses `forgetting` of its private skills'
  progress since the start;
- **cost**: a template takes 1 to `max_turns` turns (log-uniform), a failed rollout half as many
  again, and each environment's turns cost `tokens_per_turn` tokens (its prompts and tool outputs
  differ in length). Rollouts report their turns as lengths; the learner counts tokens.

The scheduler sees `TaskSpec`s only: copies show as tasks with identical metadata (as template
siblings do); the number of turns shows as `n_calls` and in rollout lengths; interference,
forgetting and tokens per turn not at all. Held-out tasks have progress of their own (a held-out
copy does not share its cluster's), so the held-out score measures what transfers through skills.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from envsched_lightning.scheduling import TaskSpec

from .ranges import KnobDraws
from .world import PATTERNS, VERIFIERS, SimWorld, SimWorldConfig, _chance_of_rewards, draw_env_size


@dataclass(frozen=True)
class ClusteredWorldConfig:
    """`base` gives the template structure (sizes, skills, difficulty, learner rates, chance); of its
    knobs `cross_skill_share`, `pattern_shared` and `metadata_noise` are not used here."""

    base: SimWorldConfig = field(default_factory=lambda: SimWorldConfig(num_envs=6))
    copy_share: float = 0.3  # share of templates that are near-copy clusters
    cluster_size: tuple[int, int] = (40, 200)  # instances of such a template
    copy_noise: float = 0.05  # std of a copy's difficulty around its source's
    copy_decay: float = 0.3  # in one batch, the k-th copy of a cluster teaches copy_decay^(k-1)
    hurt_envs: float = 0.25  # share of environments whose training lowers one or two others
    hurt_strength: tuple[float, float] = (0.3, 1.0)  # the loss, per unit of the step's own gain
    help_strength: float = 0.1  # largest gain another environment's training brings (some pairs)
    forgetting: float = 0.01  # share of a private skill's progress lost per step without its environment
    max_turns: int = 30  # a template takes 1..max_turns turns (log-uniform)
    tokens_per_turn: tuple[float, float] = (100.0, 400.0)  # per environment

    def __post_init__(self) -> None:
        for name in ("copy_share", "hurt_envs", "help_strength", "forgetting"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if not 0.0 < self.copy_decay <= 1.0 or self.max_turns < 1 or self.cluster_size[0] < 1:
            raise ValueError(f"copy_decay in (0, 1], max_turns >= 1, cluster_size >= 1; got {self.copy_decay}, "
                             f"{self.max_turns}, {self.cluster_size}")  # fmt: skip

    @property
    def seed(self) -> int:
        return self.base.seed


def make_clustered_world(cfg: ClusteredWorldConfig) -> SimWorld:
    b = cfg.base
    rng = np.random.default_rng([b.seed, 41])
    n_pat, env_names = len(PATTERNS), [f"env{e:02d}" for e in range(b.num_envs)]
    init = list(np.zeros(n_pat) if b.pattern_init == (0.0, 0.0) else rng.uniform(*b.pattern_init, n_pat))
    private = []
    for _ in range(b.num_envs):
        private.append(len(init) + np.arange(b.skills_per_env))
        init.extend(np.full(b.skills_per_env, rng.uniform(*b.skill_init)))
    env_of, skills, diff, cont, calls, is_train, cluster, specs = [], [], [], [], [], [], [], []
    next_cluster = 0
    for e, name in enumerate(env_names):
        patterns = rng.choice(n_pat, size=min(b.patterns_per_env, n_pat), replace=False)
        verifiers = rng.choice(len(VERIFIERS), size=2, replace=False)
        continuous = rng.random() < b.continuous_env_share
        n_plain = draw_env_size(rng, b.tasks_per_env, b.size_dist)
        n_templates = max(3, (n_plain + b.heldout_per_env) // b.tasks_per_template)
        # per template: own skills, pattern, base difficulty, verifier, turns, copy cluster id (-1: plain)
        templates = []
        for _ in range(n_templates):
            own = rng.choice(b.skills_per_env, size=int(rng.integers(1, 3)), replace=False)
            turns = int(round(np.exp(rng.uniform(0.0, np.log(cfg.max_turns)))))
            copies = rng.random() < cfg.copy_share
            templates.append((own, int(rng.choice(patterns)), float(rng.uniform(*b.difficulty)), int(rng.integers(2)),
                              turns, next_cluster if copies else -1))  # fmt: skip
            next_cluster += int(copies)
        # plain templates get the environment's drawn size; each copy source adds its cluster
        plain = [k for k, t in enumerate(templates) if t[5] < 0] or [0]
        members = [int(rng.choice(plain)) for _ in range(n_plain)]
        for k, t in enumerate(templates):
            if t[5] >= 0:
                members += [k] * int(rng.integers(cfg.cluster_size[0], cfg.cluster_size[1] + 1))
        members = [members[i] for i in rng.permutation(len(members))]
        n_heldout = min(b.heldout_per_env, len(members) // 2)
        for t, k in enumerate(members):
            own, pat, base, ver, turns, clu = templates[k]
            noise = cfg.copy_noise if clu >= 0 else b.instance_noise
            train = t >= n_heldout  # the first `n_heldout` instances are held out, copies included
            env_of.append(e)
            skills.append(np.concatenate([[pat], private[e][own]]).astype(np.int64))
            diff.append(base + float(rng.normal(0.0, noise)))
            cont.append(continuous)
            calls.append(turns)
            is_train.append(train)
            cluster.append(clu if train else -1)  # a held-out copy learns on its own
            if train:
                tools = [f"{name}.tool{j}{v}" for j in own for v in ("a", "b")]
                if clu < 0 and rng.random() < 0.3:  # a decoy tool, offered, not needed (copies show the same)
                    tools.append(f"{name}.tool{int(rng.integers(b.skills_per_env))}c")
                specs.append(TaskSpec(
                    env=name, task_id=f"t{t:05d}", tools=tuple(sorted(set(tools))),
                    state_keys=tuple(f"table{j}" for j in sorted(own)), verifier=VERIFIERS[int(verifiers[ver])],
                    features={"n_calls": float(turns), f"pattern_{PATTERNS[pat]}": 1.0},
                    reward_type="continuous" if continuous else "binary"))  # fmt: skip
    env_arr, is_train_arr, cluster_arr = np.asarray(env_of), np.asarray(is_train), np.asarray(cluster)
    all_idx = np.arange(len(env_of))
    flaky_p, chance = _chance_of_rewards(b, env_arr)
    return SimWorld(
        config=b, specs=specs, env_of=env_arr, skills=skills, difficulty=np.asarray(diff), continuous=np.asarray(cont),
        n_calls=np.asarray(calls), skill_init=np.asarray(init, dtype=np.float64), train_idx=all_idx[is_train_arr],
        heldout_idx=all_idx[~is_train_arr], env_names=env_names, flaky_p=flaky_p, chance=chance,
        cluster=cluster_arr, copy_decay=cfg.copy_decay, interference=_interference(cfg, rng),
        private_skills=private, forgetting=cfg.forgetting, failed_turns=0.5,
        tokens_per_turn=rng.uniform(*cfg.tokens_per_turn, b.num_envs))  # fmt: skip


def _interference(cfg: ClusteredWorldConfig, rng: np.random.Generator) -> np.ndarray:
    """float[E, E]: [e, f] is the change of environment f's private skills per unit of environment
    e's own gain (0 on the diagonal: an environment's own learning is the learner's usual step)."""
    n = cfg.base.num_envs
    effect = np.zeros((n, n))
    if n < 2:
        return effect
    hurters = rng.choice(n, size=int(round(cfg.hurt_envs * n)), replace=False)
    for e in hurters:
        victims = rng.choice([f for f in range(n) if f != e], size=min(n - 1, int(rng.integers(1, 3))), replace=False)
        effect[e, victims] = -rng.uniform(*cfg.hurt_strength, victims.size)
    helpers = (rng.random((n, n)) < 0.2) & (effect == 0) & ~np.eye(n, dtype=bool)
    effect[helpers] = rng.uniform(0.0, cfg.help_strength, int(helpers.sum()))
    return effect


# (low, high) of every drawn knob of the clustered family (the template knobs come from `family.RANGES`)
CLUSTERED_RANGES: dict[str, tuple[float, float]] = {
    "copy_share": (0.1, 0.5),
    "cluster_min": (20, 80),
    "cluster_max": (100, 250),
    "copy_noise": (0.0, 0.15),
    "copy_decay": (0.1, 0.6),
    "hurt_envs": (0.1, 0.4),
    "hurt_low": (0.1, 0.4),
    "hurt_width": (0.1, 0.4),
    "help_strength": (0.0, 0.3),
    "forgetting": (0.0, 0.01),
    "max_turns": (10, 30),
    "tokens_low": (50.0, 200.0),
    "tokens_width": (50.0, 600.0),
}


def sample_clustered_params(rng: np.random.Generator, base: SimWorldConfig) -> ClusteredWorldConfig:
    """One clustered world: `base`'s template structure plus every knob drawn from `CLUSTERED_RANGES`."""
    draws = KnobDraws(rng, CLUSTERED_RANGES)
    u, i = draws.uniform, draws.integer
    hurt_lo, tokens_lo = u("hurt_low"), u("tokens_low")
    return ClusteredWorldConfig(
        base=base,
        copy_share=u("copy_share"),
        cluster_size=(i("cluster_min"), i("cluster_max")),
        copy_noise=u("copy_noise"),
        copy_decay=u("copy_decay"),
        hurt_envs=u("hurt_envs"),
        hurt_strength=(hurt_lo, hurt_lo + u("hurt_width")),
        help_strength=u("help_strength"),
        forgetting=u("forgetting"),
        max_turns=i("max_turns"),
        tokens_per_turn=(tokens_lo, tokens_lo + u("tokens_width")),
    )
