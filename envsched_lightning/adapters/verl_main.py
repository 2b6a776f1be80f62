"""``python -m envsched_lightning.adapters.verl_main <verl overrides>``: verl 0.9's PPO/GRPO run with
its prompts chosen by an EnvSched scheduler.

verl 0.9 dropped the curriculum-sampler hook (``data.sampler.class_path`` and ``sampler.update``),
and its default v1 trainer takes no prompt sampler. Its legacy trainer still does, so this is
verl's own ``verl.trainer.main_ppo`` with three departures:

- ``trainer.use_v1=false`` and ``data.dataloader_num_workers=0`` come first on the command line
  (yours still win; ``trainer.use_v1=true`` is refused, and `EnvSchedSampler` refuses workers);
- verl's ``TaskRunner.run`` is used as it is, but while it runs, inside its Ray actor, the two names
  it builds the trainer and the sampler from, ``RayPPOTrainer`` and ``create_rl_sampler`` in
  ``verl.trainer.main_ppo_v0``, are `EnvSchedPPOTrainer` and `train_sampler`;
- no deprecation warning: verl marks the legacy trainer deprecated, and 0.9.0/0.9.1 still ship it.

Options go under ``+data.sampler.*`` as for `EnvSchedSampler`; see docs/adapters.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence, Sized
from typing import Any
from unittest import mock

import hydra
import ray
import verl.trainer.config as _verl_config
from omegaconf import DictConfig
from verl.trainer import main_ppo_v0
from verl.trainer.main_ppo import run_ppo
from verl.trainer.ppo.ray_trainer import RayPPOTrainer
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config
from verl.utils.device import auto_set_device

from .verl import CurriculumFeedback, EnvSchedSampler

VERL_CONFIG_DIR = os.path.dirname(os.path.abspath(_verl_config.__file__))
"""verl's own Hydra configs (``ppo_trainer.yaml`` and its groups): every verl override applies."""

DEFAULTS = ("trainer.use_v1=false", "data.dataloader_num_workers=0")
"""Put ahead of the command line's overrides: the legacy trainer, no dataloader workers."""

_SWAPPED = ("RayPPOTrainer", "create_rl_sampler")  # the globals verl's TaskRunner.run builds from


class EnvSchedPPOTrainer(CurriculumFeedback, RayPPOTrainer):
    """verl's legacy `RayPPOTrainer` with the curriculum hook it lost in 0.9 (`CurriculumFeedback`)."""


def train_sampler(data_config: Mapping[str, Any], dataset: Sized) -> EnvSchedSampler:
    """Stands in for verl's ``create_rl_sampler(data_config, dataset)``."""
    return EnvSchedSampler(data_source=dataset, data_config=data_config)


def _verl_task_runner() -> type:
    """The class under verl's ``@ray.remote TaskRunner``, checked to build from the swapped names."""
    cls = getattr(main_ppo_v0.TaskRunner, "__ray_actor_class__", None)
    missing = [n for n in _SWAPPED if cls is None or n not in cls.run.__code__.co_names]
    if missing:
        raise ImportError(f"verl.trainer.main_ppo_v0.TaskRunner.run no longer uses {missing}: this entry point "
                          "is written for verl 0.9.0/0.9.1 (docs/adapters.md)")  # fmt: skip
    return cls


class EnvSchedTaskRunnerImpl(_verl_task_runner()):
    """verl's TaskRunner, building `EnvSchedPPOTrainer` and `EnvSchedSampler`; run it as `EnvSchedTaskRunner`."""

    def __init__(self) -> None:
        # Defined here so that Ray ships this class's own methods, by reference. An inherited
        # TaskRunner.__init__ would travel by value (verl's module name holds the ActorClass, not the
        # class), with a copy of TaskRunner for its super() that the actor is no instance of.
        super().__init__()

    def run(self, config: DictConfig) -> None:
        # patched in this process only (the Ray actor's), and only for the duration of the run
        with mock.patch.multiple(main_ppo_v0, RayPPOTrainer=EnvSchedPPOTrainer, create_rl_sampler=train_sampler):
            super().run(config)


EnvSchedTaskRunner = ray.remote(EnvSchedTaskRunnerImpl)


@hydra.main(config_path=VERL_CONFIG_DIR, config_name="ppo_trainer", version_base=None)
def main(config: DictConfig) -> None:
    """verl's ``main_ppo.main`` for the legacy trainer, with `EnvSchedTaskRunner`."""
    if config.trainer.use_v1:
        raise ValueError("trainer.use_v1=true: verl's v1 trainer takes no prompt sampler; this entry point runs "
                         "the legacy trainer (trainer.use_v1=false)")  # fmt: skip
    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    run_ppo(config, task_runner_class=EnvSchedTaskRunner)


def cli(argv: Sequence[str] | None = None) -> None:
    """``main`` with `DEFAULTS` ahead of `argv` (default: the command line)."""
    args = list(sys.argv[1:] if argv is None else argv)
    sys.argv = [sys.argv[0], *DEFAULTS, *args]
    main()


if __name__ == "__main__":
    # through the importable module, so Ray ships EnvSchedTaskRunner to its actor by reference
    from envsched_lightning.adapters import verl_main

    verl_main.cli()
