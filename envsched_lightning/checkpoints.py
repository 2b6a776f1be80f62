"""Reading a Lightning checkpoint written by this application, with errors that name the file.

Training (resume) and evaluation both start from a user-given `ckpt_path`; a missing, empty,
truncated or foreign file must fail with the path and the reason, not with a pickle traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def read_checkpoint(path: str, mmap: bool = False) -> dict[str, Any]:
    """The checkpoint's top-level dict (it holds a 'state_dict'), or an error naming `path`.

    `weights_only=False`: our checkpoints carry the scheduler's numpy state and RNG states, so
    load only checkpoints you wrote. `mmap=True` reads tensors lazily (for a look at the keys)."""
    import torch

    file = Path(path)
    if not file.is_file() or file.stat().st_size == 0:
        raise FileNotFoundError(f"ckpt_path={path}: {'empty file' if file.is_file() else 'no such file'}")
    try:
        ckpt = torch.load(file, map_location="cpu", weights_only=False, mmap=mmap)
    except Exception as err:  # noqa: BLE001 - any unreadable file gets the same clear message
        raise ValueError(f"ckpt_path={path}: not a readable checkpoint ({type(err).__name__}: {err})") from None
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
        raise ValueError(f"ckpt_path={path}: not a Lightning checkpoint (no 'state_dict')")
    return ckpt
