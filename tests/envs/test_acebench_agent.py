"""ACEBench-Agent: our sandboxes and scores give upstream's end states and verdicts.

`data/acebench_agent_official.json.gz` holds what upstream's own code (chenchen0103/ACEBench at 56dd66cf:
its inference loops, agents, execution roles, sandboxes, `agent_eval` and `agent_eval_process`) gave
for 2008 agent message paths over the 50 tasks: the milestones as written, re-written as valid Python,
and their perturbations, and random calls of the tasks' tools (`tests/official/acebench_agent_diff.py`, which wrote the file and re-checks against a
snapshot). Each path is replayed here through our environment, as text turns and as tool calls.
"""

from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from envsched_lightning.envs import make_env
from envsched_lightning.envs.acebench.agent import (
    FINISH, NO_QUESTIONS, AceBenchAgentEnvironment, AgentEpisode, AgentWorld, DecodeFailure, canonical_message,
    decode_agent_message, end_state_reason, process_score,
)  # fmt: skip
from envsched_lightning.envs.base import ToolCall, next_turn, play_turn
from envsched_lightning.envs.parsing import render_tool_call
from envsched_lightning.envs.users import ScriptedUser
from tests.data_roots import needs, root_with

DATA = root_with("acebench")
needs_data = needs("acebench")
RECORDED = Path(__file__).parent / "data" / "acebench_agent_official.json.gz"


def _state_hash(state: object) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(state, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def _play(env: AceBenchAgentEnvironment, task, turns: list[str]) -> tuple[AgentEpisode, dict[str, float]]:
    """The agent loop's protocol: each turn through `Episode.turn`, an answer asks `end_turn` for what follows."""
    episode = env.reset(task)
    for played, text in enumerate([*turns, FINISH][: task.max_turns], start=1):
        outcome = play_turn(episode, task, text, played)
        assert "end_turn failed" not in outcome.answer
        if outcome.done:
            break
    return episode, dict(episode.verify("").scores)


@pytest.fixture(scope="module")
def recorded() -> list[dict]:
    return json.loads(gzip.decompress(RECORDED.read_bytes()))


@pytest.fixture(scope="module")
def envs() -> dict[str, AceBenchAgentEnvironment]:
    return {c: AceBenchAgentEnvironment(c, data_dir=DATA) for c in ("agent_multi_step", "agent_multi_turn")}


@needs_data
def test_task_counts_match_the_official_data(envs):
    assert {c: len(e.tasks()) for c, e in envs.items()} == {"agent_multi_step": 20, "agent_multi_turn": 30}
    assert make_env("acebench_agent_multi_turn", data_dir=str(DATA)).name == "acebench_agent_multi_turn"


@needs_data
def test_every_recorded_path_reaches_upstreams_state_and_verdicts(recorded, envs):
    tasks = {t.spec.task_id: t for e in envs.values() for t in e.tasks()}
    assert len(recorded) == 2008 and len({r["id"] for r in recorded}) == 50
    wrong = []
    for r in recorded:
        episode, scores = _play(envs[r["category"]], tasks[r["id"]], r["messages"])
        got = (_state_hash(episode.world.saved_state()), scores["end_state"] == 1.0, round(scores["process"], 3))
        if got != (r["state"], r["end_state"], round(r["process"], 3)):
            wrong.append((r["id"], r["path"], got, (r["state"], r["end_state"], r["process"])))
    assert not wrong, wrong[:5]
    assert sum(r["end_state"] for r in recorded) == 609  # paths upstream itself scores as reaching the answer


def as_tool_calls(message: str) -> list[ToolCall] | None:
    """A message's calls as a tool-calling model would send them (keyword arguments, any literal values,
    dicts included), or None when it is not a list of such calls (it then stays a text turn)."""
    source = message.strip()
    source = ("" if source.startswith("[") else "[") + source + ("" if source.endswith("]") else "]")
    try:
        body = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(body, (ast.List, ast.Tuple)) or not body.elts or not all(isinstance(e, ast.Call) for e in body.elts):
        return None
    calls = []
    for node in body.elts:
        if node.args or any(k.arg is None for k in node.keywords) or not isinstance(node.func, (ast.Name, ast.Attribute)):
            return None
        try:
            calls.append(ToolCall(ast.unparse(node.func), {k.arg: ast.literal_eval(k.value) for k in node.keywords}))
        except (ValueError, TypeError, SyntaxError, RecursionError):
            return None
    return calls


def _canonical_milestone_tasks(envs) -> set[str]:
    """Tasks with a milestone written in a form `call_text` never renders (no space after `:`, double quotes)."""
    out = set()
    for env in envs.values():
        for task in env.tasks():
            stones = env.reset(task).answer["mile_stone"]
            flat = [m for alt in stones for m in alt] if stones and isinstance(stones[0], list) else stones
            if any(canonical_message(m) != m.strip() for m in flat):
                out.add(task.spec.task_id)
    return out


@needs_data
def test_every_path_as_tool_calls_reaches_upstreams_state_and_verdict(recorded, envs):
    """Every message of every path that a tool-calling model could send goes as tool calls (the rest as text):
    upstream's routing holds (the end-of-conversation phrase inside a call ends the conversation unexecuted; in
    multi_turn a message upstream cannot decode goes to the user), so end state and verdict are upstream's on all
    2008 paths. The process score departs only where a milestone is written in a form no rendering of the same
    calls produces (8 milestones, 8 tasks): there the tool-calling model is credited, upstream's literal match is not."""
    tasks = {t.spec.task_id: t for e in envs.values() for t in e.tasks()}
    odd_milestones = _canonical_milestone_tasks(envs)
    assert len(odd_milestones) == 8
    as_calls, credited = 0, set()
    for r in recorded:
        turns = []
        for message in r["messages"]:
            calls = as_tool_calls(message)
            as_calls += calls is not None
            turns.append(message if calls is None else "\n".join(render_tool_call(c) for c in calls))
        episode, scores = _play(envs[r["category"]], tasks[r["id"]], turns)
        assert (_state_hash(episode.world.saved_state()), scores["end_state"] == 1.0) == (r["state"], r["end_state"]), r["path"]
        if round(scores["process"], 3) != round(r["process"], 3):
            assert scores["process"] > r["process"] and r["id"] in odd_milestones, (r["id"], r["path"])
            credited.add(r["id"])
    assert as_calls > 9000 and credited <= odd_milestones


# --- behaviour on a hand-built task (no data needed) ----------------------------------------------

PHONE = {"id": "agent_multi_step_99", "question": "I am Eve.", "function": [],
         "initial_config": {"BaseApi": {"wifi": False, "logged_in": True}},
         "involved_classes": ["BaseApi", "MessageApi", "FoodPlatform"]}  # fmt: skip


def test_a_device_switch_reaches_every_app_and_state_goes_through_json():
    world = AgentWorld(PHONE)
    assert world.saved_state() == []  # nothing executed: upstream records no state
    out = world.run(decode_agent_message("[turn_on_wifi(), login_food_platform(username='Eve', password='password123')]"))
    assert json.loads(out[1])["status"] is True  # the food app saw the Wi-Fi switched on by the device call
    assert all(i.wifi for i in world.instances.values())
    state = world.saved_state()
    assert [list(s) for s in state] == [["BaseApi"], ["MessageApi"], ["FoodPlatform"]]
    assert "1" in state[1]["MessageApi"]["inbox"] and state[2]["FoodPlatform"]["logged_in_users"] == ["Eve"]


def test_bad_calls_fail_their_call_without_changing_state():
    world = AgentWorld({**PHONE, "involved_classes": ["Travel"], "initial_config": {}})
    before = world.saved_state() or AgentWorld({**PHONE, "involved_classes": ["Travel"]}).instances["Travel"].users
    results = world.run(decode_agent_message(
        "[reserve_flight(user_id='user1', password='wrong', flight_no='CA1234', cabin='Economy Class', payment_method='cash', baggage_count=1),"
        " reserve_flight(user_id='user1', password='password123', flight_no='CA1234', cabin='First', payment_method='cash', baggage_count=1),"
        " no_such_tool(x=1), cancel_reservation(user_id='user1'), get_flight_details(origin=1e999)]"))  # fmt: skip
    assert all(r.startswith("Error during execution") for r in results), results
    assert world.instances["Travel"].users == before and len(world.instances["Travel"].reservations) == 4


@pytest.mark.parametrize("text", ["", "[f(x=)]", "[f(), 3]", "[f(x={})]", "[f(x={'a': 1})]", "[f(x=lambda: 1)]"])
def test_what_upstreams_decoder_refuses_is_refused(text):
    with pytest.raises(DecodeFailure):
        decode_agent_message(text)


def test_end_state_rules_follow_agent_eval():
    truth = [{"BaseApi": {"wifi": True}}, {"ReminderAPI": {"reminder_list": {"1": {"title": "x"}}}}]
    result = [{"BaseApi": {"wifi": True, "logged_in": True}}, {"ReminderApi": {"reminder_list": {}}}]
    assert end_state_reason(result, truth) is not None  # `logged_in` is not in the possible answer
    result[0]["BaseApi"].pop("logged_in")
    assert end_state_reason(result, truth) is None  # "ReminderAPI" matches no class: upstream skips it
    assert "number of classes" in end_state_reason(result[:1], truth)
    inbox = [{"MessageApi": {"inbox": {"1": {"m": "a"}, "7": {"m": "extra"}}}}]
    assert end_state_reason(inbox, [{"MessageApi": {"inbox": {"1": {"m": "a"}}}}]) is None  # extra keys pass


def test_process_score_is_milestones_found_in_order():
    assert process_score(["[a()]", "[x()]", "[b()]"], ["[a()]", "[b()]", "[c()]"], False) == pytest.approx(2 / 3)
    assert process_score(["[b()]", "[a()]"], ["[a()]", "[b()]"], False) == 0.5
    assert process_score(["[b()]"], [["[a()]", "[b()]"], ["[b()]", "[c()]"]], False) == 0.5
    assert process_score([], ["[a()]"], True) == 1.0


def test_multi_step_answers_text_as_upstreams_execution_role():
    episode = AgentEpisode("agent_multi_step", PHONE, {"ground_truth": [], "mile_stone": ["[turn_on_wifi()]"]})
    assert next_turn(episode, f"{FINISH}")[0] is not None  # the first message cannot finish (upstream: index > 1)
    assert next_turn(episode, "Which user?")[0] == [{"role": "user", "content": NO_QUESTIONS}]
    reply = next_turn(episode, "[turn_on_wifi()]")[0]
    assert reply and reply[0]["content"].startswith("execution: ")
    assert next_turn(episode, f"Done. {FINISH}")[0] is None
    assert episode.process == [FINISH, "Which user?", "[turn_on_wifi()]"]


def test_multi_turn_questions_go_to_the_scripted_user_until_it_finishes():
    user = ScriptedUser("You are Eve. You want to order a pizza.", max_replies=1)
    assert user.opening() == "I am Eve. I want to order a pizza."
    episode = AgentEpisode("agent_multi_turn", PHONE, {"ground_truth": [], "mile_stone": ["[a()]"]}, user=user)
    reply = next_turn(episode, "Which merchant?")[0]
    assert reply and "I am Eve" in reply[0]["content"]
    assert next_turn(episode, "Which size?")[0] is None and episode.finished_by == "user"  # past max_replies: finish
    assert episode.process == [] and user.cost.turns == 2


def test_a_task_naming_an_unknown_sandbox_is_an_error_naming_it(tmp_path):
    root = tmp_path / "acebench" / "data_en"
    (root / "possible_answer").mkdir(parents=True)
    (root / "data_agent_multi_step.json").write_text(json.dumps({**PHONE, "involved_classes": ["Finance"]}) + "\n")
    (root / "possible_answer" / "data_agent_multi_step.json").write_text(
        json.dumps({"id": PHONE["id"], "ground_truth": [], "mile_stone": []}) + "\n")
    with pytest.raises(ValueError, match=r"data_agent_multi_step.json: task agent_multi_step_99 uses \['Finance'\]"):
        AceBenchAgentEnvironment("agent_multi_step", data_dir=tmp_path).tasks()


def test_multi_turn_stops_a_message_at_its_first_failing_call_and_answers_every_call():
    episode = AgentEpisode("agent_multi_turn", PHONE, {"ground_truth": [], "mile_stone": ["[a()]"]}, user=ScriptedUser("x"))
    calls = [ToolCall("turn_on_wifi", {}), ToolCall("delete_message", {}), ToolCall("login_device", {})]
    results = episode.step(calls)
    assert [r.error for r in results] == [None, None, "Not executed: an earlier call of this message failed"]
    assert results[1].content.startswith("Error during execution") and episode.world.executed is False
    assert all(i.wifi for i in episode.world.instances.values())  # what ran before the failure stays


def test_the_end_phrase_inside_a_call_ends_the_conversation_before_anything_runs():
    """Upstream reads the agent message as text: "finish conversation" anywhere in it ends the conversation
    at that message, which is never executed (a text turn and a tool-call turn alike)."""
    episode = AgentEpisode("agent_multi_turn", PHONE, {"ground_truth": [], "mile_stone": ["[turn_on_wifi()]"]},
                           user=ScriptedUser("x"))  # fmt: skip
    episode.step([ToolCall("turn_on_wifi", {})])  # index 0 -> 2: a later message may finish
    wifi_before = [i.wifi for i in episode.world.instances.values()]
    call = ToolCall("send_message", {"sender_name": "Eve", "receiver_name": "Frank", "message": f"ok, {FINISH}"})
    results = episode.step([call])
    assert episode.over and episode.finished_by == "agent" and results[0].content.startswith("Not executed")
    assert episode.process == ["[turn_on_wifi()]"] and [i.wifi for i in episode.world.instances.values()] == wifi_before
    task = SimpleNamespace(max_turns=20)
    assert play_turn(AgentEpisode("agent_multi_step", PHONE, {"ground_truth": [], "mile_stone": []}), task,
                     render_tool_call(call), 1).done is False  # the first message cannot finish (upstream: index > 1)


def test_a_multi_turn_call_upstream_cannot_write_as_text_goes_to_the_user():
    """A dict-valued argument has no form upstream's decoder reads back: the message goes to the simulated
    user (as a text message would), is not executed, and is not in the process record."""
    user = ScriptedUser("You are Eve.", max_replies=0)
    episode = AgentEpisode("agent_multi_turn", PHONE, {"ground_truth": [], "mile_stone": ["[a()]"]}, user=user)
    episode.step([ToolCall("turn_on_wifi", {})])
    results = episode.step([ToolCall("send_message", {"sender_name": "Eve", "receiver_name": {"text": "Frank"}})])
    assert results[0].content == f"user: {FINISH}" and user.cost.turns == 1  # the scripted user ends it
    assert episode.over and episode.finished_by == "user" and episode.process == ["[turn_on_wifi()]"]
    step = AgentEpisode("agent_multi_step", PHONE, {"ground_truth": [], "mile_stone": []})
    out = step.step([ToolCall("send_message", {"receiver_name": {"text": "Frank"}})])  # multi_step: upstream's error
    assert out[0].content.startswith("Error") and not step.over
