"""tau-bench retail and airline: the environments (`environment`), their tool backends over the shipped
databases (`backends/`), our generated tasks (`tasks/`) and upstream's task lists (`official_tasks`).

Importing the package registers every tau-bench environment name."""

from envsched_lightning.envs.tau import environment  # noqa: F401 - registers the domains and splits
