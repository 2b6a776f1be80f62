"""No model output runs for long: decoded values have a size budget, and `end_turn` and verifiers share the tools' time limit.

A 97-character ACEBench answer built from nested repetition (`[[[[[0]*100]*100]*100]*100]*100`) shares references
while it is decoded, then takes hours to walk as the tree that checkers and renderers see. It is refused while it
is decoded, whatever the category: agent messages (multi_step and multi_turn), the normal categories' verifier and
`envs/score.py`'s replay. An episode whose own code loops past the limit ends with the reason recorded; time a
simulated user takes to answer is not counted.
"""

from __future__ import annotations

import time

import pytest

from envsched_lightning.envs.acebench import official
from envsched_lightning.envs.acebench.agent import AgentEpisode, DecodeFailure, decode_agent_message
from envsched_lightning.envs.acebench.normal import judge
from envsched_lightning.envs.base import Episode, ToolResult, Verdict, checked_verdict, next_turn
from envsched_lightning.envs.time_limit import ToolTimeout, call_with_time_limit, time_limit_paused
from envsched_lightning.envs.users import ModelUser

BOMB = '[send_message(sender_name="Eve", receiver_name="Frank", message=[[[[[0]*100]*100]*100]*100]*100)]'
PHONE = {"id": "agent_multi_step_99", "question": "I am Eve.", "function": [],
         "initial_config": {"MessageApi": {}}, "involved_classes": ["MessageApi"]}  # fmt: skip
RECORD = {"id": "hand_0_0", "question": "user: ...", "function": [{"name": "send_message", "description": "",
          "parameters": {"type": "object", "required": [], "properties": {"message": {"type": "array"}}}}]}  # fmt: skip


def test_the_repetition_bomb_is_refused_while_decoding():
    assert len(BOMB) == 97
    for multi_turn in (False, True):
        with pytest.raises(official.DecodeError, match="too large"):
            official.decode(BOMB, multi_turn)
    with pytest.raises(DecodeFailure, match="too large"):
        decode_agent_message(BOMB)


def test_the_budget_counts_shared_references_and_whole_outputs():
    assert official.expanded_size([[0] * 10] * 10) == 1 + 10 * 11
    ok = official.decode("[f(a=[[0]*100]*100)]", False)  # 10,101 elements: an ordinary large value still decodes
    assert ok[0][1]["a"] == [[0] * 100] * 100
    with pytest.raises(official.DecodeError, match="too large"):  # each argument fits; together they do not
        official.decode("[f(" + ", ".join(f"a{i}=[0]*30000" for i in range(4)) + ")]", False)
    with pytest.raises(official.DecodeError, match="too large"):  # written out, not repeated: still counted
        official.decode("[f(a=" + repr(["x" * 60_000, "y" * 60_000]) + ")]", False)


@pytest.mark.parametrize("category", ["agent_multi_step", "agent_multi_turn"])
def test_an_agent_answer_that_would_expand_is_not_executed(category):
    episode = AgentEpisode(category, PHONE, {"ground_truth": [], "mile_stone": []})
    next_turn(episode, "Hello")  # the first message
    start = time.perf_counter()
    reply, failed = next_turn(episode, BOMB)
    assert time.perf_counter() - start < 30  # (before the budget: hours)
    assert failed is None  # undecodable: routed as upstream routes a message it cannot decode
    assert not [m for m in reply or [] if str(m["content"]).startswith("execution:")]


def test_the_normal_verifier_scores_it_zero_with_the_reason():
    verdict = judge("normal_atom_list", RECORD, [{"send_message": {"message": [0]}}], [], BOMB)
    assert verdict.reward == 0.0 and "too large" in verdict.reason


class _Looping(Episode):
    """An episode whose own code never returns: in end_turn or in verify."""

    def __init__(self, where: str) -> None:
        self.where = where

    def step(self, calls):  # pragma: no cover - not reached
        return [ToolResult(c.name, "ok") for c in calls]

    def end_turn(self, answer: str = ""):
        while self.where == "end_turn":
            pass
        return None

    def verify(self, final_answer: str) -> Verdict:
        while self.where == "verify":
            pass
        return Verdict(1.0, "ok")


def test_end_turn_and_verify_that_run_past_the_limit_end_the_episode_with_the_reason():
    nxt, failed = next_turn(_Looping("end_turn"), "answer", time_limit=0.3)
    assert nxt is None and failed and "time limit of 0.3 s" in failed
    verdict = checked_verdict(_Looping("verify"), "answer", time_limit=0.3)
    assert verdict.reward == 0.0 and "verifier ran past its time limit of 0.3 s" in verdict.reason


class _SlowModel:
    """A simulated user's model that takes longer than the episode's limit to answer (its wait is not counted)."""

    def chat(self, messages):
        time.sleep(0.6)
        return "I want a pizza.", 10, 5


def test_a_simulated_users_wait_does_not_count_against_the_limit():
    user = ModelUser("You are Eve.", _SlowModel())
    user.begin("Hi")
    assert call_with_time_limit(lambda: user.reply("Which size?"), 0.3) == "I want a pizza."

    def own_work_after_the_wait() -> None:
        with time_limit_paused():
            time.sleep(0.4)
        while True:  # the limit runs again after the wait
            pass

    with pytest.raises(ToolTimeout):
        call_with_time_limit(own_work_after_the_wait, 0.3)

