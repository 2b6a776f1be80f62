"""A tool world in one file, as docs/environments.md "Adding a world" describes it.

    python docs/examples/library_world.py

A library with books and members: a read-only tool, two writing tools, a domain error, two task
patterns. Copy the class into `envsched_lightning/envs/worlds/library.py` (and the yaml from the guide
into `conf/env/library.yaml`) to train on it: `python train.py env=[library,banking]`. Run as a
script, it generates the 200 tasks training uses by default, runs the checks every world must pass
(`envs/world_checks.py`) on all of them, writes the tasks to a JSONL file and reads them back as a
user task file, shows two `ToolError`s rolled back, and prints one task. Its asserts hold what
docs/environments.md says (`rng` is a `random.Random`; the imports are the documented ones).
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from envsched_lightning.envs import Draft, ToolCall, ToolError, ToolWorld, register_env, save_tasks_jsonl, tool
from envsched_lightning.envs.patterns import call
from envsched_lightning.envs.tool_world import get_row
from envsched_lightning.envs.world_checks import check_world


@register_env("library")
class LibraryEnv(ToolWorld):
    """Books that members borrow and return."""

    patterns = ("single", "lookup_write")  # of PATTERNS; one draft_<pattern> method each

    def build_state(self, rng):  # tables: row id -> JSON row; a seeded function of rng
        assert isinstance(rng, random.Random)  # the standard library's: choice, randint, sample (no .integers)
        titles = ["Dune", "Emma", "Ulysses", "Beloved", "Hamlet", "Middlemarch"]
        books = {f"B{i + 1}": {"title": t, "out_to": None} for i, t in enumerate(titles)}
        members = {f"M{i + 1}": {"name": n} for i, n in enumerate(["Ada", "Bo", "Cy"])}
        for book in rng.sample(sorted(books), rng.randint(1, 2)):  # one or two books start lent out
            books[book]["out_to"] = rng.choice(sorted(members))
        return {"books": books, "members": members}

    @tool("Find a book by its title.", {"title": "string"}, reads=("books",))
    def find_book(self, state, title):
        for book_id, row in state["books"].items():
            if row["title"].lower() == title.lower():
                return {"book_id": book_id, "out": row["out_to"] is not None}
        raise ToolError(f"no book titled {title}")  # the model sees this message; state is rolled back

    @tool("Lend a book to a member.", {"book_id": "string", "member_id": "string"}, writes=("books",))
    def lend(self, state, book_id, member_id):
        book = get_row(state, "books", book_id)  # a ToolError naming what is missing
        get_row(state, "members", member_id)
        if book["out_to"] is not None:
            raise ToolError(f"book {book_id} is already lent out")
        book["out_to"] = member_id
        return {"book_id": book_id, "out_to": member_id}

    @tool("Take a book back.", {"book_id": "string"}, writes=("books",))
    def return_book(self, state, book_id):
        get_row(state, "books", book_id)["out_to"] = None
        return {"book_id": book_id, "returned": True}

    # A Draft: the pattern, the user's request, the oracle's tool turns (calls in one turn run in
    # parallel), its final answer, and the checks the reward averages: "state" (the world's tables
    # end as the oracle's did), "calls" (the same calls), "answer" (answer_contains in the answer),
    # "no_call" (no tool called). The expected state changes are computed by replaying the oracle.
    def draft_single(self, rng, state):  # rng: a random.Random seeded by (world, seed, task index)
        assert isinstance(rng, random.Random)
        book = rng.choice(sorted(b for b, row in state["books"].items() if row["out_to"] is not None))
        return Draft("single", f"Book {book} came back; record the return.", ((call("return_book", book_id=book),),),
                     "Recorded.", ("state",))  # fmt: skip

    def draft_lookup_write(self, rng, state):
        free = sorted(b for b, row in state["books"].items() if row["out_to"] is None)
        book, member = rng.choice(free), rng.choice(sorted(state["members"]))
        title = state["books"][book]["title"]
        return Draft("lookup_write", f"Lend {title} to member {member}.",
                     ((call("find_book", title=title),), (call("lend", book_id=book, member_id=member),)),
                     f"{title} is lent to {member}.", ("state", "answer"), answer_contains=(title,))  # fmt: skip


def main() -> None:
    world = LibraryEnv(seed=0)  # num_tasks=None: the 200 generated tasks, as `conf/env/library.yaml` gives
    assert len(world.tasks()) == 200
    problems = {name: p for name, p in check_world(world).items() if p}  # every task the world holds
    assert not problems, problems
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "library.jsonl"
        save_tasks_jsonl(path, world.tasks())  # the format of a user task file (env.library.tasks_path=...)
        from_file = LibraryEnv(tasks_path=str(path))
        assert [t.spec for t in from_file.tasks()] == [t.spec for t in world.tasks()]
    task = world.tasks()[1]  # lookup_write: offers find_book and lend
    episode = world.reset(task)
    lent = next(b for b, row in episode.state["books"].items() if row["out_to"])
    before = repr(episode.state)
    missing, taken = episode.step([ToolCall("find_book", {"title": "Nope"}),
                                   ToolCall("lend", {"book_id": lent, "member_id": "M1"})])  # fmt: skip
    assert (missing.error, taken.error) == ("no book titled Nope", f"book {lent} is already lent out")
    assert repr(episode.state) == before  # each raising call was rolled back
    print(f"library: {len(world.tasks())} tasks, every world check passes; task {task.spec.key}: "
          f"{task.messages[-1]['content']!r}, tools {list(task.spec.tools)}")  # fmt: skip
    print("ok")


if __name__ == "__main__":
    main()
