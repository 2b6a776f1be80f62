"""`python -m envsched_lightning.data fetch {bfcl,acebench,tau_bench,all} [--to DIR] [--url URL | --archive FILE]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .fetch import FetchError, default_data_root, fetch
from .sources import SOURCES


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m envsched_lightning.data",
                                description="Download benchmark data (pinned, checksum-verified).")  # fmt: skip
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="download BFCL (v4, from PyPI), ACEBench and/or tau-bench data")
    f.add_argument("what", nargs="+", choices=[*SOURCES, "all"], help="sources (tau_bench_tasks: the official task lists)")
    f.add_argument("--to", type=Path, default=None, help=f"data root (default: {default_data_root()})")
    f.add_argument("--url", help="download this archive instead of the pinned URL (a mirror); sources of one archive only")
    f.add_argument("--archive", type=Path, help="a file already downloaded (wheel or source archive); sources of one archive only")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    a = p.parse_args(argv)
    names = list(SOURCES) if "all" in a.what else list(dict.fromkeys(a.what))
    if (a.url or a.archive) and len({SOURCES[n].url or n for n in names}) > 1:
        p.error("--url and --archive name one archive: give bfcl, acebench, or tau_bench and/or tau_bench_tasks (one archive)")
    root = a.to or default_data_root()
    for name in names:
        try:
            dest, what = fetch(name, root, url=a.url, archive=a.archive, quiet=a.quiet)
        except FetchError as err:
            print(f"error: {name}: {err}", file=sys.stderr)
            return 1
        print(f"{name}: {what}: {dest}")
    print(f"data root: {root}" + ("" if a.to is None else f"  (use it with ENVSCHED_DATA={root})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
