"""Benchmark data: where it comes from (`sources`), fetching it (`fetch`), and where loaders find it.

    python -m envsched_lightning.data fetch {bfcl,bfcl_v3,acebench,tau_bench,tau_bench_tasks,all} [--to DIR]

Without `--to`, data goes to `default_data_root()`: `$ENVSCHED_DATA` when set, else the user cache
folder; benchmark environments read from there when no `data_dir` is given.
"""

from .fetch import DATA_ENV, FetchError, cache_data_root, default_data_root, fetch
from .sources import SOURCES, Source, source_for

__all__ = ["DATA_ENV", "FetchError", "SOURCES", "Source", "cache_data_root", "default_data_root", "fetch", "source_for"]
