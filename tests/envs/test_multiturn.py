"""BFCL-v3 multi_turn_base: ground truth replays and passes, wrong calls fail, and the official
behaviours (texts and verdicts, quirks included) hold without bfcl-eval installed. The side-by-side
check against the official code is tests/bfcl/test_multi_turn_agreement.py (scripts/bfcl_check.sh)."""

from __future__ import annotations

from collections import Counter

import pytest

from envsched_lightning.envs import make_env
from envsched_lightning.envs.bfcl.backends.file_system import GorillaFileSystem
from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.bfcl.multi_turn import (
    BACKENDS, MAX_STEPS_PER_TURN, MultiTurnEnvironment, World, check_turns, parse_call_string, replay,
)  # fmt: skip
from tests.data_roots import needs, root_with

DATA = root_with("bfcl_v3")
needs_data = needs("bfcl_v3")
MEASURED = {"supported": 200, "excluded": 0, "corruptible": 197}  # all eight backends; reported in docs/benchmarks.md
# Ground-truth calls of the v3 data that fail upstream too, yet pass: `echo` writes only into an
# existing file; the v3 answers call TradingBot methods the current classes no longer have
# (update_market_status, make_transaction) and orders that are not there. (v4 data: none fail.)
TRUTH_ERRORS = {"cancel_order": 11, "echo": 2, "get_order_details": 22, "make_transaction": 1, "place_order": 23,
                "update_market_status": 11}  # fmt: skip
# rules="training" checks calls against the docs first: one ground-truth close_ticket passes its id as
# the doc's wrong type
TRUTH_ERRORS_TRAINING = TRUTH_ERRORS | {"close_ticket": 1}
# Arguments no state or output depends on: corrupting them leaves the verdict as it was.
STATE_BLIND = {"update_market_status", "add_to_watchlist", "authenticate_travel"}
C = ToolCall


@pytest.fixture(scope="module")
def env() -> MultiTurnEnvironment:
    return MultiTurnEnvironment(DATA)


def _task(env: MultiTurnEnvironment, task_id: str):
    return next(t for t in env.tasks() if t.spec.task_id == task_id)


def _world(classes: list[str], config: dict | None = None, rules: str = "official", schemas=()) -> World:
    return World({"id": "t", "involved_classes": classes, "initial_config": config or {}}, rules, schemas=schemas)


def _out(world: World, name: str, **arguments) -> str:
    return world.execute(C(name, arguments)).content


FS = {"GorillaFileSystem": {"root": {"ws": {"type": "directory", "contents": {
    "a.txt": {"type": "file", "content": "b\na"}, "d": {"type": "directory", "contents": {}}}}}}}  # fmt: skip


@needs_data
@pytest.mark.parametrize("rules", ["official", "training"])
def test_ground_truth_replays_and_passes(env, rules) -> None:
    tasks = env.tasks()
    assert (len(tasks), len(env.excluded)) == (MEASURED["supported"], MEASURED["excluded"])
    errors = set()
    for task in tasks:
        record, truth = task.ground_truth["record"], task.ground_truth["calls"]
        assert task.spec.task_id == record["id"] and set(record["involved_classes"]) <= BACKENDS.keys()
        world = World(record, rules, schemas=env.tools_for(task))
        errors |= {(record["id"], t, k, c.name) for t, turn in enumerate(truth) for k, c in enumerate(turn)
                   if world.execute(c).error}  # fmt: skip
        assert check_turns(record, truth, truth, rules, env.tools_for(task)).reward == 1.0, record["id"]
    assert Counter(name for *_, name in errors) == (TRUTH_ERRORS if rules == "official" else TRUTH_ERRORS_TRAINING)


def _corrupt(call: ToolCall) -> ToolCall | None:
    """The same call with its first string argument changed, or None if it has none."""
    key = next((k for k, v in call.arguments.items() if isinstance(v, str)), None)
    return None if key is None else ToolCall(call.name, {**call.arguments, key: call.arguments[key] + "_zq9"})


@needs_data
def test_wrong_calls_fail(env) -> None:
    corrupted = 0
    for task in env.tasks():
        record, truth = task.ground_truth["record"], task.ground_truth["calls"]
        first = next(t for t, turn in enumerate(truth) if turn)
        skipped = [list(turn) if t != first else [] for t, turn in enumerate(truth)]
        assert "empty turn" in check_turns(record, truth, skipped).reason
        assert "force terminated" in check_turns(record, truth, truth[:-1]).reason  # a conversation cut short
        for t, turn in enumerate(truth):  # corrupt the last call of the first turn that has a string argument
            bad = _corrupt(turn[-1]) if turn and turn[-1].name not in STATE_BLIND else None
            if bad is not None:
                model = [list(x) for x in truth]
                model[t][-1] = bad
                assert check_turns(record, truth, model).reward == 0.0, (record["id"], bad)
                corrupted += 1
                break
    assert corrupted == MEASURED["corruptible"]  # 3 tasks have string arguments only in STATE_BLIND calls


@needs_data
def test_episode_runs_turn_by_turn_and_the_model_reads_official_texts(env) -> None:
    task = _task(env, "multi_turn_base_0")
    truth = task.ground_truth["calls"]
    episode = make_env("bfcl_multi_turn_base", data_dir=DATA).reset(task)
    texts = []
    for t, turn in enumerate(truth):
        results = episode.step(turn)
        texts += [(c.name, c.arguments, r.content) for c, r in zip(turn, results)]
        assert (episode.end_turn() is None) == (t == len(truth) - 1)
    assert episode.verify("done").reward == 1.0
    assert env.reset(task).verify("").reward == 0.0
    assert task.spec.state_keys == tuple(task.ground_truth["record"]["involved_classes"])
    assert texts[:3] == [("cd", {"folder": "document"}, '{"current_working_directory": "document"}'),  # the name only
                         ("mkdir", {"dir_name": "temp"}, "None"),
                         ("mv", {"source": "final_report.pdf", "destination": "temp"},
                          '{"result": "\'final_report.pdf\' moved to \'temp/final_report.pdf\'"}')]  # fmt: skip
    assert task.max_turns == (MAX_STEPS_PER_TURN + 1) * len(truth)


def test_call_strings_are_literals_only() -> None:
    docs = {"mv": {"parameters": {"properties": {"source": {}, "destination": {}}}}}
    assert parse_call_string("mv('a', destination='b')", docs) == ToolCall("mv", {"source": "a", "destination": "b"})
    for bad in ["mv(source=open('x'))", "__import__('os')", "mv(1, 2, 3)", "rm(file_name='x')", "mv(("]:
        with pytest.raises(ValueError):
            parse_call_string(bad, docs)


def test_file_system_texts_are_the_official_ones() -> None:
    world = _world(["GorillaFileSystem"], FS)
    assert _out(world, "pwd") == '{"current_working_directory": "/ws"}'  # the root folder's name included
    assert _out(world, "mkdir", dir_name="e") == "None" and _out(world, "touch", file_name="n.txt") == "None"
    assert _out(world, "echo", content="hi", file_name="n.txt") == "None"
    assert _out(world, "echo", content="hi", file_name="missing.txt") == \
        '{"error": "echo: cannot write to \'missing.txt\': No such file"}'  # fmt: skip
    assert _out(world, "mv", source="a.txt", destination="d") == '{"result": "\'a.txt\' moved to \'d/a.txt\'"}'
    assert _out(world, "cd", folder="d") == '{"current_working_directory": "d"}'
    assert _out(world, "sort", file_name="a.txt") == '{"sorted_content": "a\\nb"}'
    assert _out(world, "tail", file_name="a.txt", lines=0) == '{"last_lines": "b\\na"}'  # [-0:] is everything
    assert _out(world, "cd", folder="..") == "{}"
    assert _out(world, "cd", folder="..") == '{"error": "Current directory is already the root. Cannot go back."}'
    assert _out(world, "cd", folder="d/x").startswith('{"error": "cd: d/x: Unsupported path.')
    assert _out(world, "mkdir", dir_name="x", unexpected=1) == \
        "Error during execution: GorillaFileSystem.mkdir() got an unexpected keyword argument 'unexpected'"  # fmt: skip
    assert _out(world, "cd", folder=123) == "Error during execution: 'int' object has no attribute 'rstrip'"
    assert _out(world, "post_tweet", content="x") == "Error during execution: name 'post_tweet' is not defined"
    assert _out(world, "exit") == "Error during execution: Function call exit is not allowed."
    assert _out(world, "_here") == "Error during execution: name '_here' is not defined"  # private helpers are not tools
    fs = world.instances["GorillaFileSystem"]
    assert isinstance(fs, GorillaFileSystem) and set(fs.public_state()) == {"root", "long_context"}


@needs_data
def test_a_root_with_two_top_folders_keeps_the_first(env) -> None:
    record = _task(env, "multi_turn_base_5").ground_truth["record"]
    assert list(record["initial_config"]["GorillaFileSystem"]["root"]) == ["data", "archive"]
    world = World(record)
    assert _out(world, "pwd") == '{"current_working_directory": "/data"}'
    assert _out(world, "cd", folder="archive") == '{"error": "cd: \'archive\': No such file or directory"}'


def test_message_api_defaults_and_login() -> None:
    world = _world(["MessageAPI"])
    before = world.state()
    assert len(before["MessageAPI"]["inbox"]) == 3 and before["MessageAPI"]["message_count"] == 3
    assert _out(world, "delete_message", receiver_id="USR002") == '{"error": "No user is currently logged in."}'
    assert world.state() == before  # no change before login
    _out(world, "message_login", user_id="USR001")
    sent = _out(world, "send_message", receiver_id="USR002", message="hi")
    assert sent.startswith('{"sent_status": true, "message_id": {"new_id": ')  # upstream's seeded ids, as a dict
    assert _out(world, "delete_message", receiver_id="USR002", message_id=1) == \
        "Error during execution: MessageAPI.delete_message() got an unexpected keyword argument 'message_id'"  # fmt: skip
    training = _world(["MessageAPI"], rules="training")  # the documented message_id is accepted there
    _out(training, "message_login", user_id="USR001")
    assert '"deleted_status": true' in _out(training, "delete_message", receiver_id="USR002", message_id=1)


def test_twitter_ids_comments_and_shared_default_mentions() -> None:
    config = {"TwitterAPI": {"username": "u", "password": "p", "tweets": {"0": {"id": 0, "username": "u", "content": "c",
                                                                               "tags": [], "mentions": []}}, "tweet_counter": 1}}  # fmt: skip
    world = _world(["TwitterAPI"], config)
    _out(world, "authenticate_twitter", username="u", password="p")
    assert _out(world, "comment", tweet_id="0", comment_content="x") == '{"error": "Tweet with ID 0 not found."}'
    assert _out(world, "comment", tweet_id=0, comment_content="x") == '{"comment_status": "Comment added successfully"}'
    assert world.state()["TwitterAPI"]["comments"] == {0: [{"username": "u", "content": "x"}]}
    assert _out(world, "get_tweet_comments", tweet_id=0) == "[{'username': 'u', 'content': 'x'}]"  # a list: its repr
    _out(world, "authenticate_twitter", username="u", password="wrong")
    assert _out(world, "posting_get_login_status") == '{"login_status": true}'  # a failed login keeps the old one
    _out(world, "post_tweet", content="a")
    _out(world, "mention", tweet_id=1, mentioned_usernames=["@z"])
    assert '"mentions": ["@z"]' in _out(world, "post_tweet", content="b")  # upstream's shared default list
    training = _world(["TwitterAPI"], config, rules="training")
    _out(training, "authenticate_twitter", username="u", password="p")
    _out(training, "post_tweet", content="a")
    _out(training, "mention", tweet_id=1, mentioned_usernames=["@z"])
    assert '"mentions": []' in _out(training, "post_tweet", content="b")


def test_math_results_keep_upstream_types() -> None:
    world = _world(["MathAPI"])
    assert _out(world, "logarithm", value="36.0", base=10, precision=5) == "{'result': mpf('1.556303')}"  # accepted; repr digits as mpmath's
    assert _out(world, "square_root", number=36, precision=3) == "{'result': Decimal('6')}"
    assert _out(world, "add", a="a", b="b") == '{"result": "ab"}'
    assert _out(world, "divide", a=1, b=0) == '{"error": "Cannot divide by zero"}'
    assert _out(world, "square_root", number=2, precision=0) == "Error during execution: valid range for prec is [1, MAX_PREC]"
    assert _out(world, "power", base=2, exponent=10**9).startswith("Error during execution: Exceeds the limit (4300 digits)")
    assert _out(world, "add", a=float("nan"), b=1) == "Error during execution: name 'nan' is not defined"


@needs_data
def test_training_rules_check_arguments_against_the_docs_first(env) -> None:
    task = _task(env, "multi_turn_base_28")  # GorillaFileSystem + MathAPI
    official, training = env.reset(task), MultiTurnEnvironment(DATA, rules="training").reset(task)
    (result,) = official.step([C("logarithm", {"value": "36.0", "base": 10, "precision": 5})])
    assert result.error is None and result.content.startswith("{'result': mpf(")
    before = training._world.state()
    for call, wrong in [(C("logarithm", {"value": "36.0", "base": 10, "precision": 5}), "value"),
                        (C("cd", {"folder": 123}), "folder"), (C("mkdir", {"dir_name": "new", "unexpected": 1}), "unexpected")]:  # fmt: skip
        (result,) = training.step([call])
        assert result.error and wrong in result.error and result.content.startswith("Error: ")
    assert training._world.state() == before


def test_name_prefixing_in_strings_is_official_only() -> None:
    record = {"id": "r", "involved_classes": ["GorillaFileSystem"], "initial_config": FS, "question": [[{}]]}
    truth = [[C("echo", {"content": "run sort(x)", "file_name": "a.txt"})]]
    official = replay(record, truth, truth)
    assert official.verdict.reward == 0.0 and "state mismatch" in official.verdict.reason
    assert _out(World(record), "echo", content="sort(x)") == '{"terminal_output": "model_r_GorillaFileSystem_instance.sort(x)"}'
    assert replay(record, truth, truth, "training").verdict.reward == 1.0


def test_response_check_matches_texts_officially_and_tool_outputs_in_training() -> None:
    record = {"id": "r", "involved_classes": ["GorillaFileSystem"], "initial_config": FS, "question": [[{}]]}
    truth = [[C("echo", {"content": "b\na", "file_name": "a.txt"})]]  # rewrites the same content: "None"
    model = [[C("mkdir", {"dir_name": "e"}), C("rmdir", {"dir_name": "e"})]]  # same state; mkdir's "None"
    assert check_turns(record, truth, model).reward == 1.0
    assert "missing ground-truth result" in check_turns(record, truth, model, "training").reason


@needs_data
@pytest.mark.parametrize("rules", ["official", "training"])
def test_step_limit_force_quits(env, rules) -> None:
    task = _task(env, "multi_turn_base_0")
    truth = task.ground_truth["calls"]
    last_env = MultiTurnEnvironment(DATA, rules=rules)

    def play(quit_turn: int) -> tuple[float, list]:
        episode = last_env.reset(task)
        for t, turn in enumerate(truth):
            episode.step(turn)
            if t == quit_turn:
                for _ in range(MAX_STEPS_PER_TURN):
                    episode.step([C("pwd", {})])
                after = episode.step([C("pwd", {})])
                return episode.verify("").reward, [episode.end_turn(), after]
            episode.end_turn()
        return episode.verify("").reward, []

    reward, (next_turn, after) = play(0)
    assert reward == 0.0 and next_turn is None and "forced to quit" in after[0].content
    assert play(len(truth) - 1)[0] == (1.0 if rules == "official" else 0.0)  # upstream still scores the last turn


@needs_data
def test_rules_option(env) -> None:
    assert make_env("bfcl_multi_turn_base", data_dir=DATA).rules == "official"
    with pytest.raises(ValueError, match=r"rules.*'official', 'training'"):
        MultiTurnEnvironment(DATA, rules="strict")
