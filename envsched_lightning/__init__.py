"""EnvSched-Lightning: rollout-efficient GRPO over many tool-use environments."""

__version__ = "0.1.0"
