"""Checkpoint files: written atomically, read without unpickling code, with errors that name the file.

A checkpoint is a pickle, and a pickle can name any callable: loading one with `weights_only=False`
runs whatever it says. Everything this application saves is tensors, numbers, strings and
containers once numpy arrays are packed as tensors (`to_safe`), so every file is read with
`weights_only=True` and a file holding anything else is refused with the object named
(`read_state`). Checkpoints written before this packing hold numpy arrays: `python -m
envsched_lightning.checkpoints convert OLD NEW --trust` rewrites one you trust (it unpickles it).

Writes go to a temporary file in the target's own folder, then `os.replace`: a kill mid-save leaves
the previous checkpoint whole, and the rename is atomic because it never crosses filesystems. The
temporary file is removed when the save fails, and a dead process's leftover is removed by the next
save into that folder. `callbacks.checkpoint.SafeCheckpointIO` gives Lightning's
Trainer both behaviours.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from envsched_lightning.processes import process_alive

NUMPY_TAG = "__numpy__"  # {NUMPY_TAG: raw bytes as a uint8 tensor, "dtype": "<f8", "shape": [..]}
_TMP = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d+)$")


class UnsafeCheckpoint(ValueError):
    """A checkpoint file that holds objects other than tensors and plain values."""


# ---------------------------------------------------------------------------------------- packing
def to_safe(obj: Any, where: str = "checkpoint") -> Any:
    """`obj` with numpy arrays packed as tensors and numpy scalars as Python numbers.

    Raises naming the key path for what cannot be stored safely (object or structured arrays)."""
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "OV" or obj.dtype.hasobject:
            raise TypeError(f"{where}: a numpy array of dtype {obj.dtype} cannot be saved without pickle")
        # one copy, as raw bytes: the saved value cannot change if the array does before the write ends
        raw = np.array(obj, order="C", copy=True).reshape(-1).view(np.uint8)
        return {NUMPY_TAG: torch.from_numpy(raw), "dtype": obj.dtype.str, "shape": list(obj.shape)}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        out = {k: to_safe(v, f"{where}[{k!r}]") for k, v in obj.items()}
        return OrderedDict(out) if isinstance(obj, OrderedDict) else out  # (other subclasses are not plain data)
    if isinstance(obj, (list, tuple)):
        items = [to_safe(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        return items if isinstance(obj, list) else tuple(items)
    return obj


MAX_TREE_NODES = 20_000_000
"""Containers and values a checkpoint may hold when walked as a tree (every shared reference counted each time).

Arrays are packed as one tensor each, so what this application writes is far below it; a few KB of pickle whose
lists share references (`L(k) = [L(k-1), L(k-1)]`) would otherwise unpack into 2^k nodes for whatever walks it."""


def _packed(obj: Any) -> bool:
    return isinstance(obj, dict) and NUMPY_TAG in obj and set(obj) == {NUMPY_TAG, "dtype", "shape"}


def _unpack(obj: dict[str, Any]) -> np.ndarray:
    raw, dtype = obj[NUMPY_TAG].numpy(), np.dtype(obj["dtype"])
    if raw.size % dtype.itemsize or raw.ctypes.data % dtype.alignment:  # not viewable in place: copy
        raw = np.frombuffer(raw.tobytes(), np.uint8)
    return raw.view(dtype).reshape(obj["shape"])  # the loaded bytes themselves, no copy


def _children(obj: Any) -> list[Any]:
    if _packed(obj):
        return []
    if isinstance(obj, dict):
        return [v for v in obj.values() if isinstance(v, (dict, list, tuple))]
    if isinstance(obj, (list, tuple)):
        return [v for v in obj if isinstance(v, (dict, list, tuple))]
    return []


def _post_order(root: Any) -> list[Any]:
    """Every distinct container under `root`, children before parents, without recursion; a cycle is an error."""
    order, done, open_ = [], set(), set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_.discard(key)
            done.add(key)
            order.append(node)
            continue
        if key in done:
            continue
        if key in open_:
            raise ValueError("a container holds itself (a reference cycle), which no saved state does")
        open_.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in done)
    return order


def tree_size(obj: Any) -> int:
    """Nodes of `obj` walked as a tree (containers and their items, shared ones counted each time), in linear time."""
    if not isinstance(obj, (dict, list, tuple)):
        return 1
    size: dict[int, int] = {}
    for node in _post_order(obj):
        items = [] if _packed(node) else list(node.values()) if isinstance(node, dict) else list(node)
        size[id(node)] = 1 + sum(size.get(id(v), 1) for v in items)
    return size[id(obj)]


def from_safe(obj: Any) -> Any:
    """The inverse of `to_safe`: packed arrays back to numpy (numpy scalars stay Python numbers).

    Iterative and memoised by identity: a container shared in the file is converted once and stays shared."""
    if not isinstance(obj, (dict, list, tuple)):
        return obj
    out: dict[int, Any] = {}

    def get(v: Any) -> Any:
        return out[id(v)] if isinstance(v, (dict, list, tuple)) else v

    for node in _post_order(obj):
        if _packed(node):
            out[id(node)] = _unpack(node)
        elif isinstance(node, dict):
            converted = {k: get(v) for k, v in node.items()}
            out[id(node)] = OrderedDict(converted) if isinstance(node, OrderedDict) else converted
        elif isinstance(node, list):
            out[id(node)] = [get(v) for v in node]
        else:
            out[id(node)] = tuple(get(v) for v in node)
    return out[id(obj)]


def _stored_members(file: Path) -> None:
    """A checkpoint's zip members are stored as written (torch.save never compresses): a deflated one is refused
    before anything inflates it (a 2 MB file can inflate to GBs)."""
    if not zipfile.is_zipfile(file):
        return
    with zipfile.ZipFile(file) as archive:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError(f"member {info.filename!r} is compressed ({info.compress_type}), which torch.save "
                                 "never writes")  # fmt: skip


# ------------------------------------------------------------------------------------ read / write
def read_state(path: str | os.PathLike, what: str = "checkpoint", mmap: bool = False) -> Any:
    """The object saved at `path` (numpy arrays unpacked), read with `weights_only=True`.

    Raises FileNotFoundError for a missing or empty file, `UnsafeCheckpoint` naming the first object
    that is not plain data, ValueError for anything unreadable; every message names `path`."""
    file = Path(path)
    if not file.is_file() or file.stat().st_size == 0:
        raise FileNotFoundError(f"{what}={path}: {'empty file' if file.is_file() else 'no such file'}")
    try:
        _stored_members(file)
        obj = torch.load(file, map_location="cpu", weights_only=True, mmap=mmap)
    except Exception as err:  # noqa: BLE001 - any unreadable file gets the same clear message
        found = re.search(r"GLOBAL ([\w.]+)", str(err))
        if found or "weights_only" in str(err).lower() and "unsupported" in str(err).lower():
            name = found.group(1) if found else "an object that is not a tensor or plain value"
            raise UnsafeCheckpoint(
                f"{what}={path}: refused: it holds {name}, which loading would have to unpickle (code could run). "
                "This application saves only tensors and plain values. A checkpoint written by an older version "
                "holds numpy arrays: if you trust the file, convert it once with "
                f"`python -m envsched_lightning.checkpoints convert {path} NEW_PATH --trust`") from None  # fmt: skip
        raise ValueError(f"{what}={path}: not a readable checkpoint ({type(err).__name__}: {str(err)[:300]})") from None
    try:
        nodes = tree_size(obj)
        if nodes > MAX_TREE_NODES:
            raise ValueError(f"it holds {nodes:,} values when read as a tree (containers that share references), "
                             f"more than the {MAX_TREE_NODES:,} any checkpoint of this application holds")  # fmt: skip
        return from_safe(obj)
    except Exception as err:  # noqa: BLE001 - every refusal names the file
        raise ValueError(f"{what}={path}: not a readable checkpoint ({type(err).__name__}: {str(err)[:300]})") from None


def read_checkpoint(path: str, mmap: bool = False) -> dict[str, Any]:
    """The Lightning checkpoint's top-level dict (it holds a 'state_dict'), or an error naming `path`.

    `mmap=True` reads tensors lazily (for a look at the keys)."""
    ckpt = read_state(path, "ckpt_path", mmap=mmap)
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
        raise ValueError(f"ckpt_path={path}: not a Lightning checkpoint (no 'state_dict')")
    return ckpt


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Temporary files of saves whose process is gone (killed mid-save): removed, and returned."""
    removed = []
    for tmp in folder.glob(".*.tmp-*"):
        m = _TMP.match(tmp.name)
        if m and int(m["pid"]) != os.getpid() and not process_alive(int(m["pid"])):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def write_state(obj: Any, path: str | os.PathLike) -> None:
    """Save `obj` (numpy packed) at `path` atomically: a temporary file in the same folder, fsync, rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target.parent)
    safe = to_safe(obj, target.name)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            torch.save(safe, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except (OSError, RuntimeError) as err:  # torch reports a short write (a full disk) as a RuntimeError
        tmp.unlink(missing_ok=True)
        free_mb = shutil.disk_usage(target.parent).free / 2**20
        raise OSError(f"{target}: the save failed with {free_mb:.0f} MB free on its disk ({err}); "
                      "the previous file at this path, if any, is intact") from err  # fmt: skip
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# ------------------------------------------------------------------------------------------ convert
def convert(old: str, new: str, trust: bool) -> list[str]:
    """Rewrite a checkpoint you trust (unpickled: it may run code) in the safe format. Returns what changed."""
    if not trust:
        raise PermissionError(f"{old}: converting unpickles the file, which runs any code it names; "
                              "pass --trust only for a file you (or this application) wrote")  # fmt: skip
    if Path(new).resolve() == Path(old).resolve():
        raise ValueError(f"{new}: NEW must be another path than OLD (OLD is kept until NEW is known to load safely)")
    obj = torch.load(old, map_location="cpu", weights_only=False)
    unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(old)
    target = Path(new)
    staged = target.with_name(f".{target.name}.convert-{os.getpid()}")
    try:
        write_state(obj, staged)
        read_state(staged, "converted")  # NEW appears only once it loads safely
        os.replace(staged, target)
    finally:
        staged.unlink(missing_ok=True)
    return unsafe


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m envsched_lightning.checkpoints", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="rewrite a trusted older checkpoint so that it loads with weights_only=True")
    c.add_argument("old")
    c.add_argument("new")
    c.add_argument("--trust", action="store_true", help="the file is yours: unpickling it is safe")
    a = p.parse_args(argv)
    unsafe = convert(a.old, a.new, a.trust)
    print(f"wrote {a.new}" + (f" (packed: {', '.join(unsafe)})" if unsafe else " (nothing needed packing)"))


if __name__ == "__main__":
    main()
