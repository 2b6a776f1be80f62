"""`world_checks`: what any world must pass, a small one included; a broken world is told what is wrong."""

from __future__ import annotations

import dataclasses

from envsched_lightning.envs import Draft, ToolWorld, tool
from envsched_lightning.envs.patterns import call
from envsched_lightning.envs.tool_world import get_row
from envsched_lightning.envs.world_checks import check_world, main


class TinyLibrary(ToolWorld):
    """A user's world: two tools, one pattern, as small as docs/environments.md's example."""

    name = "tiny_library"
    patterns = ("single",)

    def build_state(self, rng):
        return {"books": {f"B{i}": {"title": f"Book {i}", "out": False} for i in range(1, 6)}}

    @tool("Lend a book.", {"book_id": "string"}, writes=("books",))
    def lend(self, state, book_id):
        get_row(state, "books", book_id)["out"] = True
        return {"book_id": book_id, "out": True}

    @tool("Look a book up.", {"book_id": "string"})
    def look_up(self, state, book_id):
        return dict(get_row(state, "books", book_id))

    def draft_single(self, rng, state):
        book = rng.choice(sorted(state["books"]))
        return Draft("single", f"Lend {book}.", ((call("lend", book_id=book),),), "Done.", ("state",))


def test_every_world_in_the_package_passes_whatever_its_size(package_world):
    world = type(package_world)(num_tasks=30)
    assert check_world(world) == {name: [] for name in check_world(world)}


def test_a_small_world_of_two_tools_passes():
    assert all(not problems for problems in check_world(TinyLibrary(num_tasks=5)).values())


def test_a_world_whose_episodes_share_state_is_named():
    class Sticky(TinyLibrary):
        def reset(self, task):
            episode = super().reset(task)
            self.__dict__.setdefault("shared", episode.state)
            episode.state = self.shared  # every episode writes the first one's state
            return episode

    problems = check_world(Sticky(num_tasks=5))["isolation"]
    assert any("episodes share state" in p for p in problems), problems


def test_a_checker_that_passes_anything_is_named():
    class Lenient(TinyLibrary):
        def reset(self, task):
            episode = super().reset(task)
            real = episode.verify
            episode.verify = lambda answer: dataclasses.replace(real(answer), reward=1.0)
            return episode

    problems = check_world(Lenient(num_tasks=5))["wrong actions"]
    assert any("without any call scores 1.0" in p for p in problems)


def test_the_command_reports_each_check(capsys):
    assert main(["banking", "--num-tasks", "8"]) == 0
    assert "6 of 6 checks pass" in capsys.readouterr().out
