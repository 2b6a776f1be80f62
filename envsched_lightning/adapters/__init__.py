"""Drop-in adapters that let other GRPO trainers take their prompts from an EnvSched scheduler.

- `envsched_lightning.adapters.trl`: `EnvSchedGRPOTrainer`, a TRL `GRPOTrainer` subclass;
- `envsched_lightning.adapters.verl`: `EnvSchedSampler`, a verl curriculum sampler, and
  `CurriculumFeedback`, which restores the sampler hook verl 0.9 removed;
- `envsched_lightning.adapters.mapping`: the id, reward-range and group translation both share
  (no trl or verl);
- `envsched_lightning.adapters.metrics`: `scheduler_metrics`, the ``sched/`` metrics for the host's logs;
- `envsched_lightning.adapters.specs`: `specs_from_rows`, `TaskSpec`s from a plain dataset's columns;
- `envsched_lightning.adapters.tasks`: prompts and a reward function built from our environments.

Both adapters only translate between the trainer's data layout and `Scheduler.select` / `update`:
selection, history and constraints stay in the scheduling core. Nothing here imports trl or verl
until its own module is imported, so this package loads in either environment.
"""
