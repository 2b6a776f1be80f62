"""BFCL `GorillaFileSystem`, behaving as the official class (bfcl-eval 2026.3.23) does.

The tree is made of `Directory` and `File` objects that compare by name and contents (never by
parent), the working directory is private, and every result and error text is the official one,
so the model reads what it would read upstream and the state check decides as upstream's does.
Official behaviours that look like bugs are kept, each marked "Quirk:" where it happens:
* the scenario's `root` keeps only its first top-level folder, which becomes the root;
* `pwd` includes the root folder's name; `cd` answers with the folder's name only, `cd("..")` with
  `{}`; `mkdir`, `touch` and `echo` into a file answer None (rendered "None");
* `echo` writes only into an existing file; `tail(lines=0)` returns the whole file;
* `mv` of a folder makes a new folder object that shares the old one's contents, so a child's
  `cd("..")` lands in the detached old object (same contents, old name);
* `cp` of a folder copies one level (`dict.copy()`): deeper folders and files are shared, so
  writing into the copy's files changes the original's; `cp` into a folder that already has the
  name raises (its "File exists" check looks up "dest/src" in the folder, which never matches).

Long-context mode (``load(config, long_context=True)``, upstream's ``_load_scenario(...,
long_context=True)``): every loaded file except upstream's `FILES_TAIL_USED` names (log.txt,
report.txt, ...) gets a 3,251-character financial filler appended, and every folder without
sub-folders (the root too, when it has none) gets 30 empty ``image_*.jpg`` files after its own
entries (a scenario file of the same name makes loading raise ValueError, as upstream). The public
`long_context` attribute is the flag, compared by the checker like the rest of the state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import Backend
from .long_context_data import FILE_CONTENT_EXTENSION, FILES_TAIL_USED, POPULATE_FILE_EXTENSION

BAD_NAME_CHARS = '|/\\?%*:"><'


class File:
    def __init__(self, name: str, content: str = "") -> None:
        self.name, self.content = name, content

    def __eq__(self, other: object) -> bool:
        return isinstance(other, File) and self.name == other.name and self.content == other.content

    def _write(self, content: str) -> None:
        self.content = content


class Directory:
    def __init__(self, name: str, parent: Directory | None = None) -> None:
        self.name, self.parent = name, parent
        self.contents: dict[str, File | Directory] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Directory) and self.name == other.name and self.contents == other.contents

    def _add_file(self, name: str, content: str = "") -> None:
        if name in self.contents:
            raise ValueError(f"File '{name}' already exists in directory '{self.name}'.")
        self.contents[name] = File(name, content)

    def _add_directory(self, name: str) -> None:
        if name in self.contents:
            raise ValueError(f"Directory '{name}' already exists in directory '{self.name}'.")
        self.contents[name] = Directory(name, self)

    def _get_item(self, name: str) -> File | Directory | None:
        return self if name == "." else self.contents.get(name)


def _valid_name(name: str) -> bool:
    return not any(c in name for c in BAD_NAME_CHARS)


class GorillaFileSystem(Backend):
    tool_names = frozenset(
        "cat cd cp diff du echo find grep ls mkdir mv pwd rm rmdir sort tail touch wc".split()
    )

    def load(self, config: Mapping[str, Any], long_context: bool = False) -> None:
        self.long_context = long_context  # public upstream too, so the checker compares it
        self.root = Directory("/", None)
        if "root" in config:
            # Quirk: only the first top-level entry of the scenario's root is loaded.
            top = list(config["root"].keys())[0]
            self.root = self._load_dir(config["root"][top]["contents"], Directory(top, None))
        self._cwd = self.root

    def _load_dir(self, entries: Mapping[str, Any], into: Directory) -> Directory:
        innermost = True
        for name, node in entries.items():
            if node["type"] == "directory":
                innermost = False
                into.contents[name] = self._load_dir(node["contents"], Directory(name, into))
            elif node["type"] == "file":
                content = node["content"]
                if self.long_context and name not in FILES_TAIL_USED:
                    content += FILE_CONTENT_EXTENSION  # `+=` as upstream, whatever the content's type
                into.contents[name] = File(name, content)
        if innermost and self.long_context:
            # A folder without sub-folders (an empty one too) gets the filler files; a clash raises.
            for filler in POPULATE_FILE_EXTENSION:
                into._add_file(filler)
        return into

    def _here(self) -> dict[str, File | Directory]:
        return self._cwd.contents

    def _resolve(self, path: str | None) -> Directory | dict[str, str]:
        """Walk `path` from the working directory (or the root if absolute); an error dict if broken."""
        if path is None or path == ".":
            return self._cwd
        if path == "/":
            return self.root
        parts = path.strip("/").split("/")
        node = self._cwd if not path.startswith("/") else self.root
        for part in parts:
            nxt = node._get_item(part)
            if not isinstance(nxt, Directory):
                return {"error": f"cd: '{path}': No such file or directory"}
            node = nxt
        return node

    def _local_file(self, name: str) -> File | None:
        if name in self._here():
            item = self._cwd._get_item(name)
            if isinstance(item, File):
                return item
        return None

    # ---- navigation
    def pwd(self) -> dict[str, str]:
        parts, node = [], self._cwd
        while node is not None:  # Quirk: upstream's stop test never fires, so the root's name is included
            parts.append(node.name)
            node = node.parent
        return {"current_working_directory": "/" + "/".join(reversed(parts))}

    def ls(self, a: bool = False) -> dict[str, list[str]]:
        names = list(self._here().keys())
        return {"current_directory_content": names if a else [n for n in names if not n.startswith(".")]}

    def cd(self, folder: str) -> dict[str, str]:
        folder = folder.rstrip("/") or "/"
        if folder not in {".", "..", "/"} and "/" in folder:
            return {"error": f"cd: {folder}: Unsupported path. Only one folder level at a time is supported."}
        if folder == "..":
            if self._cwd.parent:
                self._cwd = self._cwd.parent
                return {}  # Quirk: going up answers an empty dict, not the new path
            if self.root == self._cwd:
                return {"error": "Current directory is already the root. Cannot go back."}
            return {"error": "cd: ..: No such directory"}
        target = self._resolve(folder)
        if isinstance(target, dict):
            return target
        self._cwd = target
        return {"current_working_directory": target.name}  # Quirk: the folder's name, not its path

    # ---- creating and writing
    def mkdir(self, dir_name: str) -> dict[str, str] | None:
        if not _valid_name(dir_name):
            return {"error": f"mkdir: cannot create directory '{dir_name}': Invalid character"}
        if dir_name in self._here():
            return {"error": f"mkdir: cannot create directory '{dir_name}': File exists"}
        self._cwd._add_directory(dir_name)
        return None

    def touch(self, file_name: str) -> dict[str, str] | None:
        if not _valid_name(file_name):
            return {"error": f"touch: cannot touch '{file_name}': Invalid character"}
        if file_name in self._here():
            return {"error": f"touch: cannot touch '{file_name}': File exists"}
        self._cwd._add_file(file_name)
        return None

    def echo(self, content: str, file_name: str | None = None) -> dict[str, str] | None:
        if file_name is None:
            return {"terminal_output": content}
        if not _valid_name(file_name):
            return {"error": f"echo: cannot write to '{file_name}': Invalid character"}
        if not file_name:
            return {"terminal_output": content}
        if file_name not in self._here():
            return {"error": f"echo: cannot write to '{file_name}': No such file"}  # Quirk: no create
        self._cwd._get_item(file_name)._write(content)  # a folder raises AttributeError, as upstream
        return None

    # ---- reading
    def cat(self, file_name: str) -> dict[str, str]:
        if not _valid_name(file_name):
            return {"error": f"cat: '{file_name}': Invalid character"}
        if file_name not in self._here():
            return {"error": f"cat: '{file_name}': No such file or directory"}
        item = self._cwd._get_item(file_name)
        if not isinstance(item, File):
            return {"error": f"cat: '{file_name}': Is a directory"}
        return {"file_content": item.content}

    def find(self, path: str = ".", name: str | None = None) -> dict[str, Any]:
        start = self._resolve(path)
        if isinstance(start, dict):
            message = start.get("error", "")
            return {"error": message.replace("cd:", "find:", 1)} if message.startswith("cd:") else start
        matches: list[str] = []

        def walk(folder: Directory, prefix: str) -> None:
            for child, item in folder.contents.items():
                here = f"{prefix}/{child}"
                if name is None or name in child:
                    matches.append(here)
                if isinstance(item, Directory):
                    walk(item, here)

        walk(start, path.rstrip("/"))
        return {"matches": matches}

    def wc(self, file_name: str, mode: str = "l") -> dict[str, Any]:
        if mode not in ["l", "w", "c"]:
            return {"error": f"wc: invalid mode '{mode}'"}
        item = self._local_file(file_name)
        if item is None:
            return {"error": f"wc: {file_name}: No such file or directory"}
        text = item.content
        if mode == "l":
            return {"count": len(text.splitlines()), "type": "lines"}
        if mode == "w":
            return {"count": len(text.split()), "type": "words"}
        return {"count": len(text), "type": "characters"}

    def sort(self, file_name: str) -> dict[str, str]:
        item = self._local_file(file_name)
        if item is None:
            return {"error": f"sort: {file_name}: No such file or directory"}
        return {"sorted_content": "\n".join(sorted(item.content.splitlines()))}

    def grep(self, file_name: str, pattern: str) -> dict[str, Any]:
        item = self._local_file(file_name)
        if item is None:
            return {"error": f"grep: {file_name}: No such file or directory"}
        return {"matching_lines": [line for line in item.content.splitlines() if pattern in line]}

    def du(self, human_readable: bool = False) -> dict[str, str]:
        def size(item: File | Directory) -> int:
            if isinstance(item, File):
                return len(item.content.encode("utf-8"))
            return sum(size(child) for child in item.contents.values())

        total: float = size(self._cwd)
        if not human_readable:
            return {"disk_usage": f"{total} bytes"}
        for unit in ("B", "KB", "MB", "GB", "TB"):
            if total < 1024:
                return {"disk_usage": f"{total:.2f} {unit}"}
            total /= 1024
        return {"disk_usage": f"{total:.2f} PB"}

    def tail(self, file_name: str, lines: int = 10) -> dict[str, str]:
        item = self._local_file(file_name)
        if item is None:
            return {"error": f"tail: {file_name}: No such file or directory"}
        text = item.content.splitlines()
        if lines > len(text):
            lines = len(text)
        return {"last_lines": "\n".join(text[-lines:])}  # Quirk: lines=0 slices [-0:], the whole file

    def diff(self, file_name1: str, file_name2: str) -> dict[str, str]:
        if file_name1 in self._here() and file_name2 in self._here():
            first, second = self._cwd._get_item(file_name1), self._cwd._get_item(file_name2)
            if isinstance(first, File) and isinstance(second, File):
                pairs = zip(first.content.splitlines(), second.content.splitlines())  # extra lines ignored
                return {"diff_lines": "\n".join(f"- {a}\n+ {b}" for a, b in pairs if a != b)}
        return {"error": f"diff: {file_name1} or {file_name2}: No such file or directory"}

    # ---- moving, copying, removing
    def _place(self, folder: Directory, name: str, item: File | Directory, share: bool) -> None:
        """Put a new object named `name` for `item` into `folder`: a file gets its content; a folder
        gets the old contents dict itself (`share`, mv) or a one-level copy of it (cp)."""
        if isinstance(item, File):
            folder._add_file(name, item.content)
        else:
            folder._add_directory(name)
            folder.contents[name].contents = item.contents if share else item.contents.copy()

    def _transfer(self, verb: str, past: str, source: str, destination: str) -> dict[str, str]:
        here = self._here()
        if source not in here:
            return {"error": f"{verb}: cannot {'move' if verb == 'mv' else 'copy'} '{source}': No such file or directory"}
        item = self._cwd._get_item(source)
        if "/" in destination:
            return {"error": f"{verb}: path not allowed in destination. Provide only a file or directory name."}
        if destination in here:
            target = self._cwd._get_item(destination)
            what = "move" if verb == "mv" else "copy"
            if not isinstance(target, Directory):
                return {"error": f"{verb}: cannot {what} '{source}' to '{destination}': Not a directory"}
            # Quirk: mv looks up `source` in the folder, cp looks up "destination/source" (never there).
            if (source if verb == "mv" else f"{destination}/{source}") in target.contents:
                return {"error": f"{verb}: cannot {what} '{source}' to '{destination}/{source}': File exists"}
            if verb == "mv":
                here.pop(source)
            self._place(target, source, item, share=verb == "mv")
            return {"result": f"'{source}' {past} to '{destination}/{source}'"}
        if verb == "mv":
            here.pop(source)
        self._place(self._cwd, destination, item, share=verb == "mv")
        return {"result": f"'{source}' {past} to '{destination}'"}

    def mv(self, source: str, destination: str) -> dict[str, str]:
        return self._transfer("mv", "moved", source, destination)

    def cp(self, source: str, destination: str) -> dict[str, str]:
        return self._transfer("cp", "copied", source, destination)

    def rm(self, file_name: str) -> dict[str, str]:
        if file_name not in self._here():
            return {"error": f"rm: cannot remove '{file_name}': No such file or directory"}
        self._here().pop(file_name)  # folders too, empty or not
        return {"result": f"'{file_name}' removed"}

    def rmdir(self, dir_name: str) -> dict[str, str]:
        if dir_name not in self._here():
            return {"error": f"rmdir: cannot remove '{dir_name}': No such file or directory"}
        item = self._cwd._get_item(dir_name)
        if not isinstance(item, Directory):
            return {"error": f"rmdir: cannot remove '{dir_name}': Not a directory"}
        if item.contents:
            return {"error": f"rmdir: cannot remove '{dir_name}': Directory not empty"}
        self._here().pop(dir_name)
        return {"result": f"'{dir_name}' removed"}
