"""Lightning callbacks that hook the scheduling core's constraints into training, and log its decisions."""

from .constraint import ConstraintCallback, install_constraints
from .env_quota import EnvQuotaCallback
from .scheduling_logger import SchedulingLoggerCallback
from .similarity_penalty import SimilarityPenaltyCallback

__all__ = [
    "ConstraintCallback",
    "EnvQuotaCallback",
    "SchedulingLoggerCallback",
    "SimilarityPenaltyCallback",
    "install_constraints",
]
