"""The simulated user behind an OpenAI-compatible endpoint (`user: api`), spoken to over real HTTP.

The server here is a small `http.server` in this process that answers `/v1/chat/completions` as the
protocol says and can be told to fail (an error status, a hang past the client's timeout, junk): it
stands in for vLLM's or OpenAI's server, whose model this machine cannot serve in a unit test, and
records what the client sent. The client, retries, routing through an episode and reporting are real.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from envsched_lightning.envs.acebench.agent import ACEBENCH_TRAVEL_USER, FINISH, AgentEpisode, user_prompt
from envsched_lightning.envs.base import next_turn
from envsched_lightning.envs.users import (
    ACEBENCH_BASE_USER, TAU_STOP, TAU_USER, APIChatModel, APISettings, ModelUser, UserSettings, UserUnavailable,
)  # fmt: skip


class Server:
    """What the endpoint does next (`plan`: a list of "ok" / "error" / "hang" / "junk", then "ok"), and every
    request it got."""

    def __init__(self) -> None:
        self.plan: list[str] = []
        self.requests: list[dict] = []
        self.reply = "I want to return my order."
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the standard library's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                step = outer.plan.pop(0) if outer.plan else "ok"
                if step == "hang":
                    time.sleep(1.5)
                if step == "error":
                    self.send_response(503)
                    self.end_headers()
                    return
                payload = b"<html>not json" if step == "junk" else json.dumps({
                    "choices": [{"message": {"role": "assistant", "content": outer.reply}}],
                    "usage": {"prompt_tokens": 40, "completion_tokens": 7}}).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except OSError:  # the client gave up (a hang past its timeout)
                    pass

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    thread = threading.Thread(target=s.httpd.serve_forever, daemon=True)
    thread.start()
    yield s
    s.httpd.shutdown()


def settings(server: Server, **kw) -> APISettings:
    return APISettings.of({"base_url": server.url, "model": "served-user", "retries": 1, "timeout": 0.5, **kw})


def test_a_reply_follows_the_benchmarks_rules_and_counts_its_cost(server, monkeypatch):
    monkeypatch.setenv("MY_USER_KEY", "sk-test")
    user = ModelUser("You are Yusuf. You want to exchange a keyboard.", APIChatModel(settings(server, key_env="MY_USER_KEY")),
                     TAU_STOP, TAU_USER)  # fmt: skip
    opening = user.opening()
    user.begin(opening)
    assert opening == server.reply and user.reply("Which order?") == server.reply
    first, second = server.requests
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sk-test"
    messages = first["body"]["messages"]
    assert messages[0]["role"] == "system" and "You are Yusuf" in messages[0]["content"] and TAU_STOP in messages[0]["content"]
    assert messages[1] == {"role": "user", "content": "Hi! How can I help you today?"}  # tau-bench's opening
    assert second["body"]["messages"][-1] == {"role": "user", "content": "Which order?"}
    assert first["body"]["model"] == "served-user" and first["body"]["seed"] != second["body"]["seed"]
    assert (user.cost.turns, user.cost.prompt_tokens, user.cost.new_tokens) == (1, 40, 7)


def test_acebench_picks_its_scenarios_rules():
    assert user_prompt(["Travel"]) is ACEBENCH_TRAVEL_USER and user_prompt(["BaseApi", "MessageApi"]) is ACEBENCH_BASE_USER
    assert ACEBENCH_BASE_USER.opening == "Is there anything you need help with today?" != TAU_USER.opening
    assert "round-trip" in ACEBENCH_TRAVEL_USER.system("x", FINISH) and FINISH in ACEBENCH_BASE_USER.system("x", FINISH)


@pytest.mark.parametrize("failure", ["error", "hang", "junk"])
def test_a_failure_is_retried(server, failure):
    server.plan = [failure]
    text, _, _ = APIChatModel(settings(server)).chat([{"role": "user", "content": "hi"}])
    assert text == server.reply and len(server.requests) == 2


@pytest.mark.parametrize("failure, why", [("error", "HTTP 503"), ("hang", "timed out"), ("junk", "bad response")])
def test_a_server_that_keeps_failing_ends_the_episode_with_the_reason_not_the_run(server, failure, why):
    server.plan = [failure] * 3
    record = {"id": "agent_multi_turn_99", "question": "You are Eve.", "function": [], "initial_config": {},
              "involved_classes": ["BaseApi", "MessageApi"]}  # fmt: skip
    user = UserSettings("api", api=settings(server)).make("You are Eve.", FINISH, ACEBENCH_BASE_USER)
    user.begin("I am Eve.")
    episode = AgentEpisode("agent_multi_turn", record, {"ground_truth": [], "mile_stone": []}, user=user)
    started = time.monotonic()
    messages, failed = next_turn(episode, "Which message should I send?")
    assert messages is None and failed.startswith("end_turn failed: UserUnavailable") and why in failed
    assert len(server.requests) == 2 and time.monotonic() - started < 5  # retries bounded, timeouts honoured
    assert episode.verify("").reason.startswith("end state")  # the episode is scored as it stands


def test_the_first_message_falls_back_to_the_instruction_when_the_server_is_down():
    down = APISettings.of({"base_url": "http://127.0.0.1:9/v1", "model": "m", "retries": 0, "timeout": 0.5})
    user = UserSettings("api", api=down).make("You are Grace.", TAU_STOP, TAU_USER)
    assert user.opening() == "I am Grace."
    with pytest.raises(UserUnavailable, match="1 tries failed"):
        user.begin("I am Grace.") or user.reply("Hello?")


def test_the_user_ends_an_episode_after_its_turn_limit(server):
    user = UserSettings("api", api=settings(server, max_turns=2)).make("You are Eve.", FINISH)
    user.begin("I am Eve.")
    assert [user.reply("?") for _ in range(3)] == [server.reply, server.reply, FINISH] and len(server.requests) == 2


def test_settings_say_what_is_missing_or_wrong():
    with pytest.raises(ValueError, match="user=api needs user_api"):
        UserSettings("api")
    with pytest.raises(ValueError, match=r"unknown keys \['url'\]"):
        APISettings.of({"url": "http://x", "model": "m"})
    with pytest.raises(ValueError, match="must be an http"):
        APISettings.of({"base_url": "file:///etc/passwd", "model": "m"})
    described = UserSettings("api", api=APISettings.of({"base_url": "http://h:1/v1", "model": "gpt-4o"})).describe()
    assert described.startswith("the API user gpt-4o at http://h:1/v1 (greedy")
