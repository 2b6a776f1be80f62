"""tau-bench's own task lists, read from upstream's Python files as literal data: never imported, never run.

Upstream (sierra-research/tau-bench, `tau_bench/envs/<domain>/tasks_<split>.py`) writes each list as
`TASKS... = [Task(user_id=..., instruction=..., actions=[Action(name=..., kwargs={...})], outputs=[...]), ...]`.
This module parses the file with `ast` and turns `Task(...)`/`Action(...)` into dicts and every other
value with `ast.literal_eval`; anything that is not literal data (a name, another call, an f-string)
is refused with the file and line. `python -m envsched_lightning.data fetch tau_bench_tasks` gets the files.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

from envsched_lightning.envs.benchmark_files import read_utf8

SPLITS: dict[str, tuple[str, ...]] = {"retail": ("test", "train", "dev"), "airline": ("test",)}
CONSTRUCTORS = frozenset({"Task", "Action"})  # upstream's pydantic models: read as their keyword arguments


def _data(node: ast.AST, path: Path) -> Any:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CONSTRUCTORS:
        if node.args or any(kw.arg is None for kw in node.keywords):
            raise ValueError(f"{path}:{node.lineno}: {node.func.id}(...) with positional or ** arguments; refused")
        return {kw.arg: _data(kw.value, path) for kw in node.keywords}
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError(f"{path}:{node.lineno}: `**` in a dict; refused")
        return {_data(k, path): _data(v, path) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_data(e, path) for e in node.elts]
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        line = getattr(node, "lineno", "?")
        raise ValueError(f"{path}:{line}: {ast.unparse(node)[:80]!r} is not literal data; refused (task files are "
                         "read, never run)") from None  # fmt: skip


def read_task_module(path: str | os.PathLike[str], prefix: str) -> list[dict[str, Any]]:
    """The tasks of one upstream task file, each with `task_id` = `{prefix}_{index}` (upstream's task index)."""
    path = Path(path)
    try:
        tree = ast.parse(read_utf8(path), filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read the task file ({type(exc).__name__}: {exc})") from None
    lists = [n.value for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.List)]
    if len(lists) != 1:
        raise ValueError(f"{path}: expected one module-level list of tasks, found {len(lists)}")
    tasks = []
    for i, node in enumerate(lists[0].elts):
        task = _data(node, path)
        if not isinstance(task, dict):
            raise ValueError(f"{path}:{node.lineno}: task {i} is not a Task(...) or a dict")
        tasks.append({"outputs": [], **task, "task_id": f"{prefix}_{i}"})
    return tasks


def task_file(root: Path, domain: str, split: str) -> Path:
    """`root/<domain>/tasks_<split>.py`, or an error naming the split, the folder and the fetch command."""
    if split not in SPLITS.get(domain, ()):
        raise ValueError(f"tau-bench {domain} has no official {split!r} tasks; its splits: {', '.join(SPLITS.get(domain, ()))}")
    path = root / domain / f"tasks_{split}.py"
    if not path.is_file():
        where = str(path) if root.name == "tau_bench_tasks" else f"{root} holds no tau_bench_tasks/ folder ({path} not there either)"
        raise FileNotFoundError(f"tau-bench's official {domain} {split} tasks: {where}; run `python -m envsched_lightning.data "
                                "fetch tau_bench_tasks` (or set ENVSCHED_DATA to a data root holding tau_bench_tasks/)")  # fmt: skip
    return path
