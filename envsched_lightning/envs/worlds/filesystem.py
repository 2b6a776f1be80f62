"""File system: folders of small text files; read, write, move, delete and search by name."""

from __future__ import annotations

import posixpath
import random

from ..patterns import Draft, ask_for, call, refuse
from ..registry import register_env
from ..tool_world import State, ToolError, ToolWorld, get_row, tool

DIRS = ("/docs", "/notes", "/src", "/photos")
FILES = ("todo.txt", "plan.md", "report.txt", "main.py", "ideas.md", "budget.csv", "trip.txt", "cat.jpg",
         "notes.md", "readme.md")
WORDS = ("milk", "eggs", "call Ann", "fix bug", "ship v2", "rent 900", "Oslo in May", "print tickets",
         "water plants", "draft slides", "pay tax", "book dentist")
NEW_DIRS = ("/backup", "/tmp", "/music", "/archive", "/work", "/old")


@register_env("filesystem")
class FilesystemEnv(ToolWorld):
    """Ten files with distinct names spread over four folders."""

    def build_state(self, rng: random.Random) -> State:
        files = {posixpath.join(rng.choice(DIRS), name): {"content": rng.choice(WORDS)} for name in FILES}
        return {"dirs": {d: {} for d in ("/", *DIRS)}, "files": files}

    # --- tools ------------------------------------------------------------------------------------

    @staticmethod
    def _parent_exists(state: State, path: str) -> None:
        if not path.startswith("/") or posixpath.dirname(path) not in state["dirs"]:
            raise ToolError(f"no folder {posixpath.dirname(path) or path}")

    @tool("List a folder.", {"path": "string"}, reads=("dirs", "files"))
    def list_dir(self, state: State, path: str) -> list:
        path = path.rstrip("/") or "/"
        get_row(state, "dirs", path, "folder")
        children = [p for p in [*state["dirs"], *state["files"]] if p != path and posixpath.dirname(p) == path]
        return sorted(posixpath.basename(p) for p in children)

    @tool("Read a file.", {"path": "string"}, reads=("files",))
    def read_file(self, state: State, path: str) -> str:
        return get_row(state, "files", path, "file")["content"]

    @tool("Write text to a file, creating it if needed.", {"path": "string", "content": "string"}, writes=("files",))
    def write_file(self, state: State, path: str, content: str) -> dict:
        self._parent_exists(state, path)
        state["files"][path] = {"content": content}
        return {"written": path}

    @tool("Delete a file.", {"path": "string"}, writes=("files",))
    def delete_file(self, state: State, path: str) -> dict:
        get_row(state, "files", path, "file")
        del state["files"][path]
        return {"deleted": path}

    @tool("Move a file to a new path.", {"src": "string", "dst": "string"}, writes=("files",))
    def move_file(self, state: State, src: str, dst: str) -> dict:
        get_row(state, "files", src, "file")
        self._parent_exists(state, dst)
        if dst in state["files"]:
            raise ToolError(f"{dst} already exists")
        state["files"][dst] = state["files"].pop(src)
        return {"moved": src, "to": dst}

    @tool("Create a folder.", {"path": "string"}, writes=("dirs",))
    def make_dir(self, state: State, path: str) -> dict:
        self._parent_exists(state, path)
        state["dirs"][path] = {}
        return {"created": path}

    @tool("Find files by name.", {"name": "string"}, reads=("files",))
    def find_files(self, state: State, name: str) -> list:
        return sorted(p for p in state["files"] if posixpath.basename(p) == name)

    # --- task drafts ------------------------------------------------------------------------------

    @staticmethod
    def _file(rng: random.Random, state: State) -> tuple[str, str]:
        path = rng.choice(sorted(state["files"]))
        return path, state["files"][path]["content"]

    def draft_single(self, rng: random.Random, state: State) -> Draft:
        path, text = self._file(rng, state)
        if rng.random() < 0.5:
            return Draft("single", f"What does {path} say?", ((call("read_file", path=path),),),
                         f"It says: {text}.", ("answer",), (text,))
        return Draft("single", f"Delete {path}.", ((call("delete_file", path=path),),), f"Deleted {path}.", ("state",))

    def draft_lookup_write(self, rng: random.Random, state: State) -> Draft:
        path, _ = self._file(rng, state)
        name = posixpath.basename(path)
        find = (call("find_files", name=name),)
        if rng.random() < 0.5:
            return Draft("lookup_write", f"Delete the file named {name}.", (find, (call("delete_file", path=path),)),
                         f"Deleted {path}.", ("state",))
        folder = rng.choice([d for d in DIRS if d != posixpath.dirname(path)])
        dst = posixpath.join(folder, name)
        return Draft("lookup_write", f"Move {name} into {folder}.", (find, (call("move_file", src=path, dst=dst),)),
                     f"Moved to {dst}.", ("state",))

    def draft_multi_hop(self, rng: random.Random, state: State) -> Draft:
        path, text = self._file(rng, state)
        name = posixpath.basename(path)
        find = (call("find_files", name=name),)
        if rng.random() < 0.5:
            return Draft("multi_hop", f"What is in the file named {name}?", (find, (call("read_file", path=path),)),
                         f"It says: {text}.", ("calls", "answer"), (text,))
        folder = rng.choice([d for d in DIRS if d != posixpath.dirname(path)])
        dst = posixpath.join(folder, "copy_" + name)
        return Draft("multi_hop", f"Copy {name} to {dst}.",
                     (find, (call("read_file", path=path),), (call("write_file", path=dst, content=text),)),
                     f"Copied to {dst}.", ("state",))

    def draft_parallel(self, rng: random.Random, state: State) -> Draft:
        if rng.random() < 0.5:
            (p1, t1), (p2, t2) = rng.sample(sorted((p, r["content"]) for p, r in state["files"].items()), 2)
            return Draft("parallel", f"Read {p1} and {p2}.", ((call("read_file", path=p1), call("read_file", path=p2)),),
                         f"{p1}: {t1}. {p2}: {t2}.", ("calls", "answer"), (t1, t2))
        a, b = rng.sample(NEW_DIRS, 2)
        return Draft("parallel", f"Create the folders {a} and {b}.",
                     ((call("make_dir", path=a), call("make_dir", path=b)),),
                     "Both folders exist now.", ("state", "calls"))

    def draft_missing_arg(self, rng: random.Random, state: State) -> Draft:
        path, _ = self._file(rng, state)
        request, missing, tool_name = rng.choice((
            (f"Write '{rng.choice(WORDS)}' to a file.", "path", "write_file"),
            (f"Move {path} somewhere else.", "dst", "move_file"),
            (f"Create a file {rng.choice(DIRS)}/new.txt.", "content", "write_file"),
        ))
        return ask_for(request, missing, tool_name)

    def draft_refuse(self, rng: random.Random, state: State) -> Draft:
        folder = rng.choice(DIRS)
        present = {posixpath.basename(p) for p in state["files"] if posixpath.dirname(p) == folder}
        name = rng.choice([n for n in FILES if n not in present])
        look = [call("list_dir", path=folder)]
        if rng.random() < 0.5:
            return refuse(f"Delete {folder}/{name}.", look, f"there is no {name} in {folder}", "delete_file")
        dst = posixpath.join(rng.choice(NEW_DIRS), name)
        return refuse(f"Move {folder}/{name} to {dst}.", look, f"there is no {name} in {folder}", "move_file")
