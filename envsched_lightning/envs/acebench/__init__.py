"""ACEBench (English): the normal and special categories (`normal`), ACEBench-Agent's multi_step and
multi_turn (`agent`) on their stateful sandboxes (`sandboxes/`), and upstream's verdicts (`official`).

Importing the package registers every ACEBench environment name."""

from envsched_lightning.envs.acebench import agent, normal  # noqa: F401 - registers the categories
