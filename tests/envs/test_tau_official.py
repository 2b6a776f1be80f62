"""tau-bench's own task lists: read as literal data (never run), replayed to their reward, played with the scripted user.

The replay test takes the official task files from where tests/data_roots.py finds `tau_bench_tasks` (the
data root a user fetched), else from `data/tau_bench_tasks_59a200c6.tar.gz`: the five files of the pinned
commit (four task lists and the MIT license) cut from upstream's source archive, unpacked by the project's own
`python -m envsched_lightning.data fetch tau_bench_tasks --archive FILE`, which checks each file's sha256 at
the pinned commit. The other tests build their own files.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envsched_lightning.envs import make_env
from envsched_lightning.envs.base import ToolCall, next_turn
from envsched_lightning.envs.parsing import render_tool_call
from envsched_lightning.envs.tau.environment import STOP, TauEnvironment
from envsched_lightning.envs.tau.official_tasks import read_task_module
from tests.data_roots import data_root, needs, root_with

TAU_DB = root_with("tau_bench") / "tau_bench"
needs_db = needs("tau_bench")


@pytest.fixture(scope="module")
def official_root() -> Path:
    """A data root with tau-bench's databases and its official task lists (see the module docstring)."""
    return data_root("tau_bench", "tau_bench_tasks")

TASK_FILE = '''from tau_bench.types import Action, Task

TASKS_TEST = [
    Task(
        annotator="0",
        user_id="yusuf_rossi_9620",
        instruction="You are Yusuf Rossi in 19122. You want to know your order's status.",
        actions=[
            Action(name="find_user_id_by_name_zip", kwargs={"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}),
            Action(name="get_order_details", kwargs={"order_id": "#W2378156"}),
        ],
        outputs=["delivered"],
    ),
]
'''


def _official_root(tmp_path: Path, text: str = TASK_FILE) -> Path:
    (tmp_path / "tau_bench_tasks" / "retail").mkdir(parents=True)
    (tmp_path / "tau_bench_tasks" / "retail" / "tasks_test.py").write_text(text)
    (tmp_path / "tau_bench").symlink_to(TAU_DB)
    return tmp_path


def test_a_task_file_is_read_as_data():
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "tasks_test.py"
        path.write_text(TASK_FILE)
        (task,) = read_task_module(path, "test")
    assert task["task_id"] == "test_0" and task["outputs"] == ["delivered"]
    assert task["actions"][1] == {"name": "get_order_details", "kwargs": {"order_id": "#W2378156"}}


@pytest.mark.parametrize("value, shown", [
    ("__import__('os').system('touch /tmp/pwned')", "__import__"), ("open('x').read()", "open("),
    ("some_name", "some_name"), ("f'{1}'", "f'{1}'"),
])  # fmt: skip
def test_anything_but_literal_data_is_refused_with_file_and_line(tmp_path, value, shown):
    path = tmp_path / "tasks_test.py"
    path.write_text(TASK_FILE.replace('outputs=["delivered"]', f"outputs=[{value}]"))
    with pytest.raises(ValueError, match=rf"tasks_test.py:\d+: .*{re.escape(shown)}.*not literal data"):
        read_task_module(path, "test")
    assert not Path("/tmp/pwned").exists()


@needs_db
def test_the_scripted_user_answers_questions_and_every_reply_counts_for_the_outputs(tmp_path):
    env = TauEnvironment("retail", data_dir=str(_official_root(tmp_path)), tasks="test")
    assert env.name == "tau_retail_test" and env.user == "scripted"
    (task,) = env.tasks()
    assert task.messages[1]["content"] == "I am Yusuf Rossi in 19122. I want to know my order's status."
    episode = env.reset(task)
    for action in task.ground_truth["actions"]:
        episode.turn(render_tool_call(ToolCall(action["name"], action["kwargs"])))
    reply, _ = next_turn(episode, "Your order was delivered. Do you need anything else?")
    assert reply and "I am Yusuf Rossi" in reply[0]["content"]
    assert next_turn(episode, "Thanks, goodbye.")[0] is None  # the user's reply was the stop phrase
    verdict = episode.verify("Thanks, goodbye.")
    assert verdict.reward == 1.0  # "delivered" was in an earlier reply
    assert verdict.scores == {"user_turns": 2.0, "user_tokens": 0.0}  # the scripted user generates no tokens
    assert STOP == "###STOP###"

    wrong = env.reset(task)  # a write the task does not make: the database differs, and the user's cost is still reported
    wrong.turn(render_tool_call(ToolCall("modify_user_address", {"user_id": "yusuf_rossi_9620", "address1": "1 Main St",
               "address2": "", "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"})))  # fmt: skip
    next_turn(wrong, "Done.")
    verdict = wrong.verify("Done.")
    assert verdict.reward == 0.0 and verdict.reason.startswith("database differs") and verdict.scores["user_turns"] == 1.0


@needs_db
def test_missing_task_files_name_the_fetch_command(tmp_path):
    (tmp_path / "tau_bench").symlink_to(TAU_DB)
    with pytest.raises(FileNotFoundError, match="data fetch tau_bench_tasks"):
        TauEnvironment("retail", data_dir=str(tmp_path), tasks="train")
    with pytest.raises(ValueError, match="airline has no official 'dev' tasks"):
        TauEnvironment("airline", data_dir=str(tmp_path), tasks="dev")


@needs_db
@pytest.mark.parametrize("name, count", [("tau_retail_test", 115), ("tau_retail_train", 500), ("tau_retail_dev", 20),
                                         ("tau_airline_test", 50)])  # fmt: skip
def test_every_official_task_replays_its_ground_truth_to_reward_one(official_root, name, count):
    env = make_env(name, data_dir=str(official_root))
    tasks = env.tasks()
    assert len(tasks) == count
    for task in tasks:
        episode = env.reset(task)
        for action in task.ground_truth["actions"]:
            episode.turn(render_tool_call(ToolCall(action["name"], action["kwargs"])))
        answer = " ".join(task.ground_truth["outputs"])
        next_turn(episode, answer)
        verdict = episode.verify(answer)
        assert verdict.reward == 1.0, (task.spec.task_id, verdict.reason)
