"""Simulated users for conversational benchmarks (ACEBench-Agent multi_turn): who answers the agent's questions.

ACEBench's and tau-bench's user is a chat model prompted with the task's instruction (one line at a time, reveal only
what the step needs, invent nothing, say "finish conversation" when the goal is met). `ScriptedUser`
is the deterministic stand-in for tests and CPU runs: it states the whole instruction in its first
message, answers a question by pointing back to it, and finishes when the agent stops asking. It
never invents facts, so a capable agent can finish every task with it; it is easier than a model
user (nothing is held back), which scores made with it must say.
"""

from __future__ import annotations

import re
from typing import Protocol

FINISH = "finish conversation"
_SECOND_PERSON = ((re.compile(r"\bYou are\b"), "I am"), (re.compile(r"\byou are\b"), "I am"),
                  (re.compile(r"\bYour\b"), "My"), (re.compile(r"\byour\b"), "my"),
                  (re.compile(r"\bYou\b"), "I"), (re.compile(r"\byou\b"), "me"))  # fmt: skip


class UserSimulator(Protocol):
    """A user in a conversation: the opening message, then a reply to each agent message without tool calls."""

    def opening(self) -> str: ...

    def reply(self, agent_message: str) -> str: ...


def first_person(instruction: str) -> str:
    """The instruction as the user would say it ("You are Grace" -> "I am Grace")."""
    text = instruction
    for pattern, words in _SECOND_PERSON:
        text = pattern.sub(words, text)
    return text


class ScriptedUser:
    """Deterministic: the instruction up front; a question gets the instruction again; anything else ends it."""

    def __init__(self, instruction: str, max_replies: int = 5, finish: str = FINISH) -> None:
        self.instruction = instruction
        self.max_replies = max_replies
        self.finish = finish  # the benchmark's stop phrase (ACEBench "finish conversation", tau-bench "###STOP###")
        self.replies = 0

    def opening(self) -> str:
        self.replies = 0
        return first_person(self.instruction)

    def reply(self, agent_message: str) -> str:
        self.replies += 1
        if "?" in agent_message and self.replies <= self.max_replies:
            return f"Everything I know is this: {first_person(self.instruction)} Yes, please go ahead."
        return self.finish
