"""Simulated users for conversational benchmarks (ACEBench-Agent multi_turn, tau-bench's own tasks).

ACEBench's and tau-bench's user is a chat model prompted with the task's instruction (one line at a
time, reveal only what the step needs, invent nothing, end with the benchmark's stop phrase). Two
users, chosen per environment with `user:` (`UserSettings`):

- `scripted`: deterministic, for tests and CPU runs. It states the whole instruction in its first
  message, answers a question by pointing back to it, and finishes when the agent stops asking. It
  never invents facts, but it holds nothing back either, so scores made with it are easier than with
  a model user, and say so.
- `model`: any local causal LM (a Hugging Face folder, `user_model_path`) prompted, in our words,
  with the upstream rules; its own sampling settings and seed. Its messages are context for the
  policy (never trained on); each episode counts the user's turns and tokens (`UserCost`), reported
  beside the agent's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

FINISH = "finish conversation"
USER_KINDS = ("scripted", "model")
OPENING_PROMPT = "Is there anything you need help with today?"
RULES = (
    "You are playing a user who talks to a customer-service agent.\n\nInstruction: {instruction}\n\nRules:\n"
    "- Write one line per message, as the user would.\n"
    "- Do not give the whole instruction at once: give what the current step needs.\n"
    "- Never make up information the instruction does not give; if asked for it, say you do not know.\n"
    "- Answer the agent's questions and confirmations as the instruction says.\n"
    "- When everything the instruction asks for is done, reply with exactly: {finish}"
)
_SECOND_PERSON = (
    (re.compile(r"\bYou are\b"), "I am"), (re.compile(r"\byou are\b"), "I am"), (re.compile(r"\bYou're\b"), "I'm"),
    (re.compile(r"\byou're\b"), "I'm"), (re.compile(r"\b([Yy])ou('d|'ll|'ve)\b"), r"I\2"),
    (re.compile(r"\byourself\b"), "myself"), (re.compile(r"\bYour\b"), "My"), (re.compile(r"\byour\b"), "my"),
    (re.compile(r"\bYou\b"), "I"),
    # a lowercase "you" starting a clause is the subject ("...; you want"), elsewhere the object ("help you")
    (re.compile(r"(^|[.;:!?,]\s+|\b(?:and|but|if|that|when|so|then|because|or)\s+)you\b"), r"\1I"),
    (re.compile(r"\byou\b"), "me"),
)  # fmt: skip


class UserSimulator(Protocol):
    """A user in a conversation: its opening message, then a reply to each agent message without tool calls."""

    cost: UserCost

    def opening(self) -> str: ...

    def begin(self, opening: str | Mapping[str, str]) -> None: ...

    def reply(self, agent_message: str) -> str: ...


@dataclass
class UserCost:
    """What the simulated user spent in one episode (reported apart from the agent's tokens)."""

    turns: int = 0
    prompt_tokens: int = 0
    new_tokens: int = 0


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
        self.cost = UserCost()

    def opening(self) -> str:
        return first_person(self.instruction)

    def begin(self, opening: str) -> None:
        self.cost = UserCost()

    def reply(self, agent_message: str) -> str:
        self.cost.turns += 1
        if "?" in agent_message and self.cost.turns <= self.max_replies:
            return f"Everything I know is this: {first_person(self.instruction)} Yes, please go ahead."
        return self.finish


class ChatModel(Protocol):
    def chat(self, messages: list[dict[str, str]]) -> tuple[str, int, int]:
        """(the reply, prompt tokens, generated tokens) for a conversation in chat-message form."""
        ...


class HFChatModel:
    """A local causal LM answering chat messages through its own chat template (greedy when temperature is 0)."""

    def __init__(self, path: str, max_new_tokens: int = 128, temperature: float = 0.0, seed: int = 0,
                 dtype: str = "float32") -> None:  # fmt: skip
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if self.tokenizer.chat_template is None:
            raise ValueError(f"user_model_path={path!r}: the tokenizer has no chat template, so it cannot play a user")
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).eval()
        self.max_new_tokens, self.temperature, self.seed = max_new_tokens, temperature, seed
        self.calls = 0

    def chat(self, messages: list[dict[str, str]]) -> tuple[str, int, int]:
        import torch

        ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        generator_seed = self.seed + self.calls  # each call its own draw, the run reproducible
        self.calls += 1
        torch.manual_seed(generator_seed)
        sample = self.temperature > 0
        with torch.no_grad():
            out = self.model.generate(**ids, max_new_tokens=self.max_new_tokens, do_sample=sample,
                                      temperature=self.temperature if sample else None, top_p=None, top_k=None,
                                      pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id)  # fmt: skip
        new = out[0, ids["input_ids"].shape[1] :]
        text = self.tokenizer.decode(new, skip_special_tokens=True).strip()
        return text, int(ids["input_ids"].shape[1]), int(new.shape[0])


@lru_cache(maxsize=4)
def shared_chat_model(path: str, max_new_tokens: int, temperature: float, seed: int) -> HFChatModel:
    """One loaded user model per setting, shared by every episode of every environment that names it."""
    return HFChatModel(path, max_new_tokens, temperature, seed)


class ModelUser:
    """A chat model plays the user: the rules and instruction as its system message, the agent's messages as
    its user turns, its own as assistant turns."""

    def __init__(self, instruction: str, model: ChatModel, finish: str = FINISH) -> None:
        self.instruction, self.model, self.finish = instruction, model, finish
        self.history: list[dict[str, str]] = []
        self.cost = UserCost()

    def _start(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": RULES.format(instruction=self.instruction, finish=self.finish)},
                {"role": "user", "content": OPENING_PROMPT}]  # fmt: skip

    def opening(self) -> str:
        text, _, _ = self.model.chat(self._start())
        return text or first_person(self.instruction)  # an empty first line would leave the agent nothing

    def begin(self, opening: str | Mapping[str, str]) -> None:
        """The episode starts from `opening` (the task's first user message; an `OpeningMessage` is read only
        when the agent first answers, so resetting an episode costs no generation)."""
        self._opening = opening
        self.history = []
        self.cost = UserCost()

    def reply(self, agent_message: str) -> str:
        if not self.history:
            opening = self._opening if isinstance(self._opening, str) else self._opening["content"]
            self.history = [*self._start(), {"role": "assistant", "content": opening}]
        self.history.append({"role": "user", "content": agent_message})
        text, prompt, new = self.model.chat(self.history)
        self.history.append({"role": "assistant", "content": text})
        self.cost.turns += 1
        self.cost.prompt_tokens += prompt
        self.cost.new_tokens += new
        return text


class OpeningMessage(Mapping[str, str]):
    """`{"role": "user", "content": ...}` whose content is made on first read, then kept. `hint` stands in for
    it where any plausible text will do and a generation would be wasted (a tokenizer's training corpus)."""

    def __init__(self, make: Callable[[], str], hint: str = "") -> None:
        self._make: Callable[[], str] | None = make
        self._content = ""
        self.hint = hint

    @property
    def pending(self) -> bool:
        return self._make is not None

    def __getitem__(self, key: str) -> str:
        if key == "role":
            return "user"
        if key != "content":
            raise KeyError(key)
        if self._make is not None:
            self._content, self._make = self._make(), None
        return self._content

    def __iter__(self) -> Iterator[str]:
        return iter(("role", "content"))

    def __len__(self) -> int:
        return 2


@dataclass(frozen=True)
class UserSettings:
    """An environment's `user` options: which user, and for `model` the folder and its sampling."""

    kind: str = "scripted"
    model_path: str | None = None
    max_new_tokens: int = 128
    temperature: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in USER_KINDS:
            raise ValueError(f"user must be one of {', '.join(USER_KINDS)}; got {self.kind!r}")
        if self.kind == "model" and not self.model_path:
            raise ValueError("user=model needs user_model_path=<a local Hugging Face folder with a chat template>")

    def describe(self) -> str:
        """Who plays the user, in a line for reports (the model's folder and sampling, or the scripted rules)."""
        if self.kind == "scripted":
            return "the scripted user (the whole instruction first, then the stop phrase once the agent stops asking)"
        sampling = "greedy" if self.temperature == 0 else f"temperature {self.temperature:g}, seed {self.seed}"
        return f"the model user {Path(str(self.model_path)).name} ({sampling}, up to {self.max_new_tokens} tokens a message)"

    def opening_message(self, instruction: str, finish: str) -> Mapping[str, str]:
        """The task's first user message. A model user's is generated when a rollout first reads it, so a run
        that plays a few tasks of a list (`limit=`, a held-out split) does not pay for every opening."""
        if self.kind == "scripted":
            return {"role": "user", "content": self.make(instruction, finish).opening()}
        return OpeningMessage(lambda: self.make(instruction, finish).opening(), hint=first_person(instruction))

    def make(self, instruction: str, finish: str) -> UserSimulator:
        if self.kind == "scripted":
            return ScriptedUser(instruction, finish=finish)
        model = shared_chat_model(str(self.model_path), self.max_new_tokens, self.temperature, self.seed)
        return ModelUser(instruction, model, finish)
