"""The training and evaluation configs the end-to-end tests compose: the real `conf/` tree, shrunk."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

CONF = Path(__file__).resolve().parents[1] / "conf"

# a few seconds per step on 2 cores: 3 tasks x 2 rollouts of 8 tokens, 3 small worlds
TINY = [
    "env.banking.num_tasks=6", "env.calendar.num_tasks=6", "env.messaging.num_tasks=6",
    "data.batch_size=3", "data.steps_per_epoch=3", "data.eval_per_env=1", "steps=3",
    "model.sampling.max_new_tokens=8", "model.grpo.group_size=2", "model.warm_start.steps=2",
    "callbacks.scheduling_logger.plot_every=2", "callbacks.env_quota.max_share=0.34",
]  # fmt: skip


def tiny_cfg(out: Path, *overrides: str) -> DictConfig:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("train", overrides=[*TINY, f"output_dir={out}", *overrides])


def compose_cfg(name: str, *overrides: str) -> DictConfig:
    """`conf/<name>.yaml` composed with `overrides`, as the command line would."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(name, overrides=list(overrides))
