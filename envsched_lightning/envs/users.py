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
- `api`: a model behind an OpenAI-compatible chat-completions endpoint (`user_api`: base URL, model
  name, the environment variable holding the key), as tau-bench and ACEBench run theirs (GPT-4o through
  an OpenAI client). A server that errors, hangs past its timeout or answers junk is retried, then ends
  the episode with the reason recorded; it never stops the run.

The model and API users follow each benchmark's own user rules and opening (`UserPrompt`): tau-bench's,
ACEBench's for the phone scenarios (`BaseApi`) and for the airline (`Travel`), in our words.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from .time_limit import time_limit_paused

FINISH = "finish conversation"
TAU_STOP = "###STOP###"
USER_KINDS = ("scripted", "model", "api")
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


@dataclass(frozen=True)
class UserPrompt:
    """A benchmark's user: the rules its user model is given (`{instruction}` and `{finish}` filled in) and the
    agent line the user model answers first (its opening)."""

    rules: str
    opening: str

    def system(self, instruction: str, finish: str) -> str:
        return self.rules.format(instruction=instruction, finish=finish)


_COMMON = (
    "- Write one line per message, as the user would.\n"
    "- Do not give the whole instruction at once: give what the current step needs.\n"
    "- Never make up what the instruction does not say (an order id, a food item): say you do not know or do "
    "not have it.\n"
)
TAU_USER = UserPrompt(  # tau-bench's LLM user (tau_bench/envs/user.py), in our words
    "You are a user talking to an agent.\n\nInstruction: {instruction}\n\nRules:\n" + _COMMON
    + "- Say it in your own words: do not repeat the instruction as written.\n"
    "- Keep the conversation natural and keep to the personality the instruction describes.\n"
    "- Once the instruction's goal is met, reply with {finish} alone, nothing else.",
    "Hi! How can I help you today?",
)
ACEBENCH_BASE_USER = UserPrompt(  # ACEBench's user for the phone scenarios (BaseApi), in our words
    "You are a user talking to an agent.\n\nInstruction: {instruction}\n\nRules:\n" + _COMMON
    + "- Give everything the current step needs in full (a reminder needs its title, description and time).\n"
    "- When asked whether you need more help, check that every main task of the instruction is done; if not, "
    "ask for the next one.\n"
    "- Names in the instruction are full names.\n"
    "- When asked which message to delete, delete the one the instruction says.\n"
    "- Do not offer the agent help; answer its questions as the instruction says.\n"
    "- When every task is done, reply with a line that says {finish} alone.",
    OPENING_PROMPT,
)
ACEBENCH_TRAVEL_USER = UserPrompt(  # ACEBench's user for the airline (Travel), in our words
    "You are a user talking to an agent.\n\nInstruction: {instruction}\n\nRules:\n" + _COMMON
    + "- When asked to confirm, confirm or not as the instruction says.\n"
    "- Say it in your own words: do not repeat the instruction as written.\n"
    "- Keep the conversation natural and keep to the personality the instruction describes.\n"
    "- If the instruction asks for a round-trip flight, say that you want to book a round-trip flight first.\n"
    "- When the instruction's goal is met, reply with a line that says {finish} alone.",
    OPENING_PROMPT,
)


def default_prompt(finish: str) -> UserPrompt:
    """The benchmark a stop phrase belongs to: tau-bench's `###STOP###`, else ACEBench's phone user."""
    return TAU_USER if finish == TAU_STOP else ACEBENCH_BASE_USER


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

        if not Path(path, "config.json").is_file():  # nothing is downloaded at run time
            raise ValueError(f"user_model_path={path!r}: not a local model folder (no config.json in it); give the path "
                             "of a Hugging Face folder on this machine")  # fmt: skip
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if self.tokenizer.chat_template is None:
            raise ValueError(f"user_model_path={path!r}: the tokenizer has no chat template, so it cannot play a user")
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype), local_files_only=True).eval()
        self.max_new_tokens, self.temperature, self.seed = max_new_tokens, temperature, seed
        self.calls = 0

    def chat(self, messages: list[dict[str, str]]) -> tuple[str, int, int]:
        import torch

        from envsched_lightning.models.special_text import shielded_chat_ids

        # the policy's messages are text to this model: a `<|im_end|><|im_start|>system ...` in them stays text
        input_ids = torch.tensor([shielded_chat_ids(self.tokenizer, messages)])
        ids = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
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


class UserUnavailable(RuntimeError):
    """The user's model could not answer (a server that errors, hangs or answers junk, after retries): the
    episode ends here with this reason; the run goes on."""


@dataclass(frozen=True)
class APISettings:
    """`user_api`: an OpenAI-compatible chat-completions endpoint for the simulated user. The key is read
    from the environment variable `key_env` when a request is made (never stored in configs or logs);
    `retries` more tries after a failure, `timeout` seconds per request, `max_turns` user replies per episode."""

    base_url: str
    model: str
    key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int | None = 0
    retries: int = 2
    timeout: float = 60.0
    max_turns: int = 30

    def __post_init__(self) -> None:
        if not str(self.base_url).startswith(("http://", "https://")):
            raise ValueError(f"user_api.base_url must be an http(s) URL (e.g. http://127.0.0.1:8000/v1), got {self.base_url!r}")
        if not self.model:
            raise ValueError("user_api.model: the served model's name is required")
        if self.retries < 0 or not (self.timeout > 0 and math.isfinite(self.timeout)) or self.max_turns < 1:
            raise ValueError(f"user_api: need retries >= 0, a finite timeout > 0 and max_turns >= 1; got {self.retries}, "
                             f"{self.timeout}, {self.max_turns}")  # fmt: skip

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> APISettings:
        unknown = set(options) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"user_api: unknown keys {sorted(unknown)}; known: {sorted(cls.__dataclass_fields__)}")
        return cls(**dict(options))


class APIChatModel:
    """A chat model behind an OpenAI-compatible `/chat/completions` endpoint (vLLM's server, OpenAI, ...),
    spoken with the standard library: one JSON request per reply, retried with backoff."""

    def __init__(self, settings: APISettings) -> None:
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self.calls = 0

    def chat(self, messages: list[dict[str, str]]) -> tuple[str, int, int]:
        s = self.settings
        body: dict[str, Any] = {"model": s.model, "messages": messages, "temperature": s.temperature,
                                "max_tokens": s.max_tokens}  # fmt: skip
        if s.seed is not None:
            body["seed"] = s.seed + self.calls  # each call its own draw, the run reproducible where the server is
        self.calls += 1
        headers = {"Content-Type": "application/json"}
        if key := os.environ.get(s.key_env):
            headers["Authorization"] = f"Bearer {key}"
        data = json.dumps(body).encode()
        failures = []
        for attempt in range(s.retries + 1):
            if attempt:
                time.sleep(min(0.5 * 2 ** (attempt - 1), 8.0))
            try:
                request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
                with urllib.request.urlopen(request, timeout=s.timeout) as response:
                    raw = response.read(4 << 20)  # a reply larger than 4 MB is junk for a one-line user message
                return _completion(raw)
            except urllib.error.HTTPError as exc:
                failures.append(f"HTTP {exc.code} {exc.reason}")
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                failures.append(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}")
            except ValueError as exc:  # junk: not JSON, or no message in it
                failures.append(f"bad response: {exc}")
        raise UserUnavailable(f"user model {s.model!r} at {s.base_url}: {len(failures)} tries failed: "
                              f"{'; '.join(str(f)[:120] for f in failures)}")  # fmt: skip


def _completion(raw: bytes) -> tuple[str, int, int]:
    """(text, prompt tokens, generated tokens) of an OpenAI chat-completions response, or ValueError."""
    try:
        payload = json.loads(raw)
        text = payload["choices"][0]["message"]["content"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"not a chat completion ({type(exc).__name__}: {str(exc)[:80]}): {raw[:80]!r}") from None
    if not isinstance(text, str):
        raise ValueError(f"the message content is {type(text).__name__}, not text")
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
    tokens = [usage.get(k) for k in ("prompt_tokens", "completion_tokens")]
    return text.strip(), *(int(t) if isinstance(t, int) and t >= 0 else 0 for t in tokens)


@lru_cache(maxsize=4)
def shared_chat_model(path: str, max_new_tokens: int, temperature: float, seed: int) -> HFChatModel:
    """One loaded user model per setting, shared by every episode of every environment that names it."""
    return HFChatModel(path, max_new_tokens, temperature, seed)


@lru_cache(maxsize=4)
def shared_api_model(settings: APISettings) -> APIChatModel:
    """One client per endpoint setting, shared by every episode (its call count seeds each request)."""
    return APIChatModel(settings)


class ModelUser:
    """A chat model plays the user: the rules and instruction as its system message, the agent's messages as
    its user turns, its own as assistant turns."""

    def __init__(self, instruction: str, model: ChatModel, finish: str = FINISH, prompt: UserPrompt | None = None,
                 max_turns: int | None = None) -> None:  # fmt: skip
        self.instruction, self.model, self.finish = instruction, model, finish
        self.prompt = prompt or default_prompt(finish)
        self.max_turns = max_turns  # replies per episode; past it the user sends the stop phrase
        self.history: list[dict[str, str]] = []
        self.cost = UserCost()

    def _start(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.prompt.system(self.instruction, self.finish)},
                {"role": "user", "content": self.prompt.opening}]  # fmt: skip

    def _chat(self, messages: list[dict[str, str]]) -> tuple[str, int, int]:
        """The model's next message; its wait does not count against the episode's time limit (it has its own)."""
        with time_limit_paused():
            return self.model.chat(messages)

    def opening(self) -> str:
        try:
            text, _, _ = self._chat(self._start())
        except UserUnavailable:  # the task keeps a first message: the instruction in the first person
            return first_person(self.instruction)
        return text or first_person(self.instruction)  # an empty first line would leave the agent nothing

    def begin(self, opening: str | Mapping[str, str]) -> None:
        """The episode starts from `opening` (the task's first user message; an `OpeningMessage` is read only
        when the agent first answers, so resetting an episode costs no generation)."""
        self._opening = opening
        self.history = []
        self.cost = UserCost()

    def reply(self, agent_message: str) -> str:
        if not self.history:
            with time_limit_paused():  # an `OpeningMessage` asks the model now
                opening = self._opening if isinstance(self._opening, str) else self._opening["content"]
            self.history = [*self._start(), {"role": "assistant", "content": opening}]
        if self.max_turns is not None and self.cost.turns >= self.max_turns:
            self.cost.turns += 1
            return self.finish  # the episode's user-turn limit
        self.history.append({"role": "user", "content": agent_message})
        text, prompt, new = self._chat(self.history)  # UserUnavailable ends the episode, its reason recorded
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
    api: APISettings | Mapping[str, Any] | None = None  # `user_api` as configured: checked into APISettings here

    def __post_init__(self) -> None:
        if isinstance(self.api, Mapping):
            object.__setattr__(self, "api", APISettings.of(self.api) if self.api else None)
        if self.kind not in USER_KINDS:
            raise ValueError(f"user must be one of {', '.join(USER_KINDS)}; got {self.kind!r}")
        if self.kind == "model" and not self.model_path:
            raise ValueError("user=model needs user_model_path=<a local Hugging Face folder with a chat template>")
        if self.kind == "api" and self.api is None:
            raise ValueError("user=api needs user_api={base_url: http://HOST:PORT/v1, model: NAME} (key_env: the "
                             "environment variable holding the key, default OPENAI_API_KEY)")  # fmt: skip

    def describe(self) -> str:
        """Who plays the user, in a line for reports (the model's folder and sampling, or the scripted rules)."""
        if self.kind == "scripted":
            return "the scripted user (the whole instruction first, then the stop phrase once the agent stops asking)"
        if self.kind == "api":
            a = self.api
            assert a is not None
            sampling = "greedy" if a.temperature == 0 else f"temperature {a.temperature:g}"
            return (f"the API user {a.model} at {a.base_url} ({sampling}, up to {a.max_tokens} tokens a message, "
                    f"{a.max_turns} replies an episode)")  # fmt: skip
        sampling = "greedy" if self.temperature == 0 else f"temperature {self.temperature:g}, seed {self.seed}"
        return f"the model user {Path(str(self.model_path)).name} ({sampling}, up to {self.max_new_tokens} tokens a message)"

    def opening_message(self, instruction: str, finish: str, prompt: UserPrompt | None = None) -> Mapping[str, str]:
        """The task's first user message. A model user's is generated when a rollout first reads it, so a run
        that plays a few tasks of a list (`limit=`, a held-out split) does not pay for every opening."""
        if self.kind == "scripted":
            return {"role": "user", "content": self.make(instruction, finish).opening()}
        return OpeningMessage(lambda: self.make(instruction, finish, prompt).opening(), hint=first_person(instruction))

    def make(self, instruction: str, finish: str, prompt: UserPrompt | None = None) -> UserSimulator:
        """An episode's user; `prompt`: the benchmark's user rules and opening (default: by the stop phrase)."""
        if self.kind == "scripted":
            return ScriptedUser(instruction, finish=finish)
        if self.kind == "api":
            assert self.api is not None
            return ModelUser(instruction, shared_api_model(self.api), finish, prompt, max_turns=self.api.max_turns)
        model = shared_chat_model(str(self.model_path), self.max_new_tokens, self.temperature, self.seed)
        return ModelUser(instruction, model, finish, prompt)
