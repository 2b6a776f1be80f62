"""A family of simulated worlds: one mechanism (`world.make_world`), structural parameters drawn
at random, so a scheduler is measured on worlds nobody tuned it on.

What varies, and why each knob matters to a scheduler that propagates over a task graph:

- how skills are shared: within an environment (`skills_per_env`, templates per environment) and
  across environments, both visibly (`patterns_per_env`, `pattern_shared`: whether tasks with the
  same visible execution pattern in two environments really share a skill) and invisibly
  (`cross_skill_share`: an environment's private skill secretly being another's);
- how well metadata reveals skills (`metadata_noise`: a task's tools, state keys and pattern
  shown from another template);
- the spread of difficulty within a class (`instance_noise`, `tasks_per_template`, `difficulty`);
- environment sizes and their skew (`tasks_per_env`, `size_dist`);
- how fast groups saturate (`sharpness`, the learner's `lr` and `lr_task`);
- whether the held-out score averages over environments or tasks (`score_over`);
- noise in rewards (`reward_noise`) and continuous rewards (`continuous_env_share`, `checks`).

The three named worlds (`WORLD_PRESETS`) are fixed points of the same mechanism: every knob at
its default value.
"""

from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np

from .clustered import ClusteredWorldConfig, make_clustered_world, sample_clustered_params
from .composed import ComposedWorldConfig, make_composed_world, sample_composed_params
from .ranges import KnobDraws
from .world import WORLD_PRESETS, SimWorld, SimWorldConfig, make_world

# (low, high) of every drawn knob: the ranges a test checks
RANGES: dict[str, tuple[float, float]] = {
    "num_envs": (3, 14),
    "tasks_min": (20, 120),  # smallest environment
    "tasks_max": (150, 500),  # largest environment
    "heldout_per_env": (10, 40),
    "skills_per_env": (2, 6),
    "patterns_per_env": (1, 5),
    "pattern_shared": (0.0, 1.0),
    "cross_skill_share": (0.0, 0.5),
    "pattern_init_low": (-1.0, 0.5),
    "pattern_init_width": (0.0, 1.5),
    "skill_init_low": (-1.5, 0.0),
    "skill_init_width": (1.0, 3.0),
    "tasks_per_template": (3, 40),
    "instance_noise": (0.1, 1.5),
    "difficulty_low": (-2.0, 0.0),
    "difficulty_high": (3.0, 7.0),
    "sharpness": (1.5, 5.0),
    "metadata_noise": (0.0, 0.5),
    "continuous_env_share": (0.0, 0.6),
    "checks": (2, 8),
    "reward_noise": (0.0, 0.1),
    "lr": (1.0, 4.0),
    "lr_task": (1.0, 8.0),
}


def sample_world_params(rng: np.random.Generator) -> SimWorldConfig:
    """One world's structure, every knob drawn from `RANGES` (integers inclusive)."""

    draws = KnobDraws(rng, RANGES)
    u, i = draws.uniform, draws.integer

    pat_lo, skill_lo, diff_lo = u("pattern_init_low"), u("skill_init_low"), u("difficulty_low")
    return SimWorldConfig(
        num_envs=i("num_envs"),
        tasks_per_env=(i("tasks_min"), i("tasks_max")),
        size_dist="loguniform" if rng.random() < 0.5 else "uniform",
        heldout_per_env=i("heldout_per_env"),
        skills_per_env=i("skills_per_env"),
        patterns_per_env=i("patterns_per_env"),
        pattern_shared=u("pattern_shared"),
        cross_skill_share=u("cross_skill_share"),
        pattern_init=(pat_lo, pat_lo + u("pattern_init_width")),
        skill_init=(skill_lo, skill_lo + u("skill_init_width")),
        tasks_per_template=i("tasks_per_template"),
        instance_noise=u("instance_noise"),
        difficulty=(diff_lo, u("difficulty_high")),
        sharpness=u("sharpness"),
        metadata_noise=u("metadata_noise"),
        continuous_env_share=u("continuous_env_share"),
        checks=i("checks"),
        reward_noise=u("reward_noise") if rng.random() < 0.5 else 0.0,
        lr=u("lr"),
        lr_task=u("lr_task"),
        score_over="tasks" if rng.random() < 0.5 else "envs",
        seed=int(rng.integers(2**31)),
    )


# rewards decided by chance (`--chance` worlds): drawn apart from the knobs above, so a world with
# them is the same world as without, plus flaky verifiers and stochastic environments
CHANCE_RANGES: dict[str, tuple[float, float]] = {
    "flaky_envs": (0.2, 0.5),
    "flaky_tasks": (0.3, 0.6),
    "stochastic_envs": (0.0, 0.4),
}


def with_chance(cfg: WorldConfig, rng: np.random.Generator, judge: bool = False) -> WorldConfig:
    """`cfg` plus flaky verifiers (a share of environments where a share of tasks is a coin flip
    whatever the policy does) and stochastic environments, drawn from `CHANCE_RANGES`; `judge`: the
    coins are a judge's verdicts cast after the episode (`flaky_judge`), same draws."""
    if isinstance(cfg, ClusteredWorldConfig):
        return replace(cfg, base=with_chance(cfg.base, rng, judge))
    return replace(cfg, **{k: float(rng.uniform(*r)) for k, r in CHANCE_RANGES.items()}, flaky_judge=judge)


MECHANISMS = ("template", "composed", "clustered")
WorldConfig = SimWorldConfig | ComposedWorldConfig | ClusteredWorldConfig


def make_world_family(n: int, seed: int = 0, chance: bool = False, mechanism: str = "template",
                      judge: bool = False) -> list[WorldConfig]:
    """`n` drawn world configurations, reproducible from `seed` (pass each to `build_world`).
    `mechanism`: "template" (`world.make_world`: templated tasks, bottleneck skills), "composed"
    (`composed.make_composed_world`: tasks compose skills, every step must succeed) or "clustered"
    (`clustered.make_clustered_world`: templates plus near-copy clusters, environments that
    interfere and forget, rollouts of 1-30 turns).
    `chance=True`: the same worlds, each with flaky verifiers and stochastic environments; `judge=True`
    as well: their coins cast by a judge after the episode (`SimWorldConfig.flaky_judge`)."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    if mechanism == "composed":
        rng = np.random.default_rng([seed, 2026])
        worlds = [sample_composed_params(rng) for _ in range(n)]
    elif mechanism == "clustered":
        rng = np.random.default_rng([seed, 2027])
        worlds = [sample_clustered_params(rng, sample_world_params(rng)) for _ in range(n)]
    else:
        rng = np.random.default_rng([seed, 2024])
        worlds = [sample_world_params(rng) for _ in range(n)]
    if chance:
        chance_rng = np.random.default_rng([seed, 2025])
        worlds = [with_chance(w, chance_rng, judge) for w in worlds]
    return worlds


def build_world(cfg: WorldConfig | str) -> SimWorld:
    """The world a configuration of any mechanism describes (a name: a named world)."""
    if isinstance(cfg, ClusteredWorldConfig):
        return make_clustered_world(cfg)
    return make_composed_world(cfg) if isinstance(cfg, ComposedWorldConfig) else make_world(cfg)


def named_worlds() -> dict[str, SimWorldConfig]:
    """The three hand-designed worlds, as the family's fixed points."""
    return dict(WORLD_PRESETS)


def describe(cfg: WorldConfig) -> str:
    """A one-line summary of the knobs that differ from the defaults."""
    default = asdict(type(cfg)())
    parts = [describe(cfg.base)] if isinstance(cfg, ClusteredWorldConfig) else []
    for k, v in asdict(cfg).items():
        if k in ("seed", "base") or v == default[k]:
            continue
        if isinstance(v, float):
            v = f"{v:.2f}"
        elif isinstance(v, tuple):
            v = "(" + ",".join(f"{x:.1f}" if isinstance(x, float) else str(x) for x in v) + ")"
        parts.append(f"{k}={v}")
    return " ".join(parts)
