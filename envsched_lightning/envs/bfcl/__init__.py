"""BFCL (v3 and v4 data): the single-turn categories (`single_turn`), the multi-turn categories on our own
backends (`multi_turn`, `backends/`), and the official verdict they share (`checker`, `languages`).

Importing the package registers every BFCL environment name."""

from envsched_lightning.envs.bfcl import multi_turn, single_turn  # noqa: F401 - registers the categories
