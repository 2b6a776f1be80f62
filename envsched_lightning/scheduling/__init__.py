"""The scheduling core: task specs, history, graph, predictors, schedulers and constraints.

Depends on torch, numpy and torch-geometric only, so it can be used without Lightning.
"""

from .base import Scheduler
from .constraints import EnvQuota, SimilarityPenalty
from .decision import Decision
from .history import TaskHistory
from .registry import build_scheduler, register_scheduler, scheduler_names
from .similarity import SparseSimilarity, task_similarity
from .types import ZERO_STD_EPS, RolloutGroup, TaskSpec, validate_groups

__all__ = [
    "Decision",
    "EnvQuota",
    "RolloutGroup",
    "Scheduler",
    "SimilarityPenalty",
    "SparseSimilarity",
    "TaskHistory",
    "TaskSpec",
    "ZERO_STD_EPS",
    "build_scheduler",
    "register_scheduler",
    "scheduler_names",
    "task_similarity",
    "validate_groups",
]
