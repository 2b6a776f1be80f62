"""BFCL `GorillaFileSystem`, rewritten from `multi_turn_func_doc/gorilla_file_system.json`.

State is the scenario's own nested-dict tree (``{name: {"type": "directory", "contents": {...}}}``
or ``{"type": "file", "content": str}``) in the public `root`, so the state check compares exactly
what `initial_config` describes. The working directory is private (`_cwd`), as in the official
class, so a model that navigates differently but leaves the same tree passes.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping
from typing import Any

from . import Backend

Node = dict[str, Any]


class GorillaFileSystem(Backend):
    tool_names = frozenset(
        "cat cd cp diff du echo find grep ls mkdir mv pwd rm rmdir sort tail touch wc".split()
    )

    def load(self, config: Mapping[str, Any]) -> None:

        self.root: Node = copy.deepcopy(dict(config.get("root") or {"workspace": {"type": "directory", "contents": {}}}))
        self._cwd: list[str] = [next(iter(self.root))]  # the top directory, as the official class starts

    # ---- helpers (private: not tools)
    def _dir(self, path: list[str]) -> Node:
        node: Node = {"type": "directory", "contents": self.root}
        for part in path:
            node = node["contents"][part]
        return node

    def _here(self) -> dict[str, Node]:
        return self._dir(self._cwd)["contents"]

    def _local(self, name: str, kind: str | None = None) -> Node | None:
        node = self._here().get(name)
        return node if node is not None and (kind is None or node["type"] == kind) else None

    def _file(self, name: str) -> str:
        node = self._local(name, "file")
        if node is None:
            raise ValueError(f"No such file: {name}")
        return node["content"]

    # ---- tools
    def pwd(self) -> dict[str, Any]:
        return {"current_working_directory": "/" + "/".join(self._cwd)}

    def ls(self, a: bool = False) -> dict[str, Any]:
        names = [n for n in self._here() if a or not n.startswith(".")]
        return {"current_directory_content": names}

    def cd(self, folder: str) -> dict[str, Any]:
        path = list(self._cwd) if not folder.startswith("/") else []
        for part in [p for p in folder.split("/") if p and p != "."]:
            if part == "..":
                if len(path) <= 1:
                    return {"error": "cd: ..: No such directory (already at the root)"}
                path.pop()
                continue
            contents = self._dir(path)["contents"] if path else self.root
            if contents.get(part, {}).get("type") != "directory":
                return {"error": f"cd: {folder}: No such directory. You cannot use path to change directory."}
            path.append(part)
        self._cwd = path
        return self.pwd()

    def mkdir(self, dir_name: str) -> dict[str, Any]:
        if "/" in dir_name or dir_name in self._here():
            return {"error": f"mkdir: cannot create directory '{dir_name}': invalid name or already exists"}
        self._here()[dir_name] = {"type": "directory", "contents": {}}
        return {}

    def touch(self, file_name: str) -> dict[str, Any]:
        if "/" in file_name or file_name in self._here():
            return {"error": f"touch: cannot touch '{file_name}': invalid name or already exists"}
        self._here()[file_name] = {"type": "file", "content": ""}
        return {}

    def echo(self, content: str, file_name: str | None = None) -> dict[str, Any]:
        if file_name is None or file_name == "None":
            return {"terminal_output": content}
        if "/" in file_name or self._local(file_name, "directory") is not None:
            return {"error": f"echo: cannot write to '{file_name}'"}
        self._here()[file_name] = {"type": "file", "content": content}
        return {"terminal_output": None}

    def cat(self, file_name: str) -> dict[str, Any]:
        return {"file_content": self._file(file_name)}

    def grep(self, file_name: str, pattern: str) -> dict[str, Any]:
        return {"matching_lines": [ln for ln in self._file(file_name).splitlines() if pattern in ln]}

    def sort(self, file_name: str) -> dict[str, Any]:
        return {"sorted_content": "\n".join(sorted(self._file(file_name).splitlines()))}

    def tail(self, file_name: str, lines: int = 10) -> dict[str, Any]:
        return {"last_lines": "\n".join(self._file(file_name).splitlines()[-lines:])}

    def wc(self, file_name: str, mode: str = "l") -> dict[str, Any]:
        text = self._file(file_name)
        counts = {"l": ("lines", len(text.splitlines())), "w": ("words", len(text.split())), "c": ("characters", len(text))}
        if mode not in counts:
            return {"error": f"wc: invalid mode '{mode}'; use 'l', 'w' or 'c'"}
        kind, count = counts[mode]
        return {"count": count, "type": kind}

    def diff(self, file_name1: str, file_name2: str) -> dict[str, Any]:
        a, b = self._file(file_name1).splitlines(), self._file(file_name2).splitlines()
        return {"diff_lines": "\n".join(difflib.unified_diff(a, b, lineterm=""))}

    def du(self, human_readable: bool = False) -> dict[str, Any]:
        def size(node: Node) -> int:
            if node["type"] == "file":
                return len(node["content"].encode())
            return sum(size(n) for n in node["contents"].values())

        total = size(self._dir(self._cwd))
        return {"disk_usage": f"{total / 1024:.2f} KB" if human_readable else f"{total} bytes"}

    def find(self, path: str = ".", name: str | None = None) -> dict[str, Any]:
        start = self._here() if path in (".", "") else (self._local(path, "directory") or {}).get("contents")
        if start is None:
            return {"error": f"find: '{path}': No such directory"}
        matches: list[str] = []

        def walk(contents: dict[str, Node], prefix: str) -> None:
            for child, node in contents.items():
                if name in (None, "None") or name in child:
                    matches.append(f"{prefix}/{child}")
                if node["type"] == "directory":
                    walk(node["contents"], f"{prefix}/{child}")

        walk(start, path.rstrip("/") or ".")
        return {"matches": matches}

    def _transfer(self, op: str, source: str, destination: str, keep_source: bool) -> dict[str, Any]:

        here = self._here()
        if source not in here:
            return {"error": f"{op}: cannot {op} '{source}': No such file or directory"}
        if "/" in destination:
            return {"error": f"{op}: destination '{destination}' must be local to the current directory"}
        target = here.get(destination)
        node = copy.deepcopy(here[source]) if keep_source else here.pop(source)
        if target is not None and target["type"] == "directory":
            if source in target["contents"]:
                if not keep_source:
                    here[source] = node  # undo the pop: nothing changes on failure
                return {"error": f"{op}: '{destination}/{source}' already exists"}
            target["contents"][source] = node
            return {"result": f"'{source}' {op} to '{destination}/{source}'"}
        if target is not None:
            if not keep_source:
                here[source] = node
            return {"error": f"{op}: '{destination}' already exists"}
        here[destination] = node
        return {"result": f"'{source}' {op} to '{destination}'"}

    def mv(self, source: str, destination: str) -> dict[str, Any]:
        return self._transfer("mv", source, destination, keep_source=False)

    def cp(self, source: str, destination: str) -> dict[str, Any]:
        return self._transfer("cp", source, destination, keep_source=True)

    def rm(self, file_name: str) -> dict[str, Any]:
        if self._here().pop(file_name, None) is None:
            return {"error": f"rm: cannot remove '{file_name}': No such file or directory"}
        return {"result": f"'{file_name}' removed"}

    def rmdir(self, dir_name: str) -> dict[str, Any]:
        node = self._local(dir_name, "directory")
        if node is None:
            return {"error": f"rmdir: failed to remove '{dir_name}': No such directory"}
        if node["contents"]:
            return {"error": f"rmdir: failed to remove '{dir_name}': Directory not empty"}
        del self._here()[dir_name]
        return {"result": f"'{dir_name}' removed"}
