"""A simulated GRPO learner over many tool-use environments, for measuring schedulers cheaply."""

from .family import make_world_family, sample_world_params
from .learner import SimLearner
from .loop import (RunResult, run_class_informed, run_dynamic_sampling, run_informed, run_noise_told, run_oracle,
                   run_scheduler)
from .world import WORLD_PRESETS, SimWorld, SimWorldConfig, make_world

__all__ = [
    "RunResult",
    "SimLearner",
    "SimWorld",
    "SimWorldConfig",
    "WORLD_PRESETS",
    "make_world",
    "make_world_family",
    "run_class_informed",
    "run_dynamic_sampling",
    "run_informed",
    "run_noise_told",
    "run_oracle",
    "run_scheduler",
    "sample_world_params",
]
