"""A quiet console: the warnings and log lines that say nothing about a run, silenced once.

Shared by `train.py`, `evaluate.py` and the benchmarks that drive a Lightning Trainer, so every
entry point prints the same run output and nothing else. Each pattern is precise: a warning that
merely looks like one of these still shows."""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from hydra.errors import InstantiationException

NOISE = (
    r".*isinstance\(treespec, LeafSpec\)` is deprecated.*",  # Lightning internals on torch >= 2.13
    r".*You have overridden `transfer_batch_to_device` in `LightningModule` but have passed in a `LightningDataModule`.*",
    r".*Your `IterableDataset` has `__len__` defined.*",  # the scheduled stream knows its length on purpose
)


class _DropAdvert(logging.Filter):
    """Lightning >= 2.6 logs an advertisement for its hosted logger on every Trainer without one."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "litlogger" not in record.getMessage()


def quiet_known_noise() -> None:
    """Silence warnings that say nothing about a run, and print Lightning's log lines once.

    Under Hydra the root logger already prints (and files) every record; Lightning's own console
    handler would print each INFO line a second time."""
    for pattern in NOISE:
        warnings.filterwarnings("ignore", message=pattern)
    rank_zero = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    if not any(isinstance(f, _DropAdvert) for f in rank_zero.filters):
        rank_zero.addFilter(_DropAdvert())
    if logging.getLogger().handlers:
        import lightning.pytorch  # noqa: F401 - its import installs the handlers cleared here

        for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
            logging.getLogger(name).handlers.clear()
            logging.getLogger(name).propagate = True


class RunConfigError(ValueError):
    """A setting a run cannot start with. The message names the key and what to set instead, so the
    entry points print it alone (no traceback) and exit with status 2."""


@contextmanager
def config_errors_exit() -> Iterator[None]:
    """`train.py` / `evaluate.py` main: a `RunConfigError` becomes `error: <message>` and exit 2.

    Also one that Hydra's `instantiate` wrapped (a builder the config names refused its input, e.g. a
    weights file cut short): its message, not the wrapper's traceback."""
    try:
        yield
    except (RunConfigError, InstantiationException) as err:
        cause: BaseException | None = err
        while isinstance(cause, InstantiationException):
            cause = cause.__cause__
        if not isinstance(cause, RunConfigError):
            raise
        print(f"error: {cause}", file=sys.stderr)
        sys.exit(2)
