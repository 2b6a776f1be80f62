"""Run folders that two runs never share.

Hydra names a run's folder after the second it started; two runs started in the same second (a
sweep script, two terminals) would write their config, logs and checkpoints into one folder, and
Lightning would then save `last-v1.ckpt` beside the other run's config. `unique_dir` claims the
folder with an atomic `mkdir` and takes the next free suffix (`-1`, `-2`, ...) when it exists.
"""

from __future__ import annotations

import itertools
from pathlib import Path

_CLAIMED: dict[str, str] = {}  # base -> the folder this process claimed (Hydra resolves the key more than once)


def unique_dir(base: str) -> str:
    """`base`, or `base-N` for the first N whose folder does not exist yet; created, so it is ours."""
    if base in _CLAIMED:
        return _CLAIMED[base]
    path = Path(base)
    path.parent.mkdir(parents=True, exist_ok=True)
    for n in itertools.count():
        candidate = path if n == 0 else path.with_name(f"{path.name}-{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        _CLAIMED[base] = str(candidate)
        return str(candidate)
    raise AssertionError("unreachable")


def register_resolver() -> None:
    """`${unique_dir:...}` for `hydra.run.dir` (conf/train.yaml, conf/evaluate.yaml)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("unique_dir"):
        OmegaConf.register_new_resolver("unique_dir", unique_dir)
