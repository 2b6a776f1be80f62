"""Multi-turn tool-use rollouts: G independent episodes per scheduled task, generated in lock-step.

Each episode is built token by token. The prompt is the chat template applied to the task's
messages and tool schemas; each model turn is appended exactly as sampled (loss mask 1); tool
results are rendered by the same chat template and appended as tokens (loss mask 0), without
re-tokenising past turns. The tool turn is the template's rendering of the tool messages after a
marker assistant turn, cut after that turn's end token: templates need not be append-only (Qwen3's
gives the last assistant turn an empty think block and earlier ones none, so "conversation plus
tool messages" is not "conversation so far" plus a suffix), only consistent in what follows a turn.

Every episode gets its own `env.reset(task)`, so rollouts of one group never share state. All
still-running episodes of the batch (G * B of them) are generated together, one turn at a time.

Each model turn goes through `Episode.turn(text)` (parse, execute valid calls, error results for
malformed blocks, which the model sees so it can recover). A turn with no tool call and no
malformed block is an answer: multi-turn tasks (episodes with `end_turn()`) then get their next
user turn appended as context, and the episode ends at the answer after the last user turn. It
also ends after `task.max_turns` model turns (the last turn's calls still run, so state-based
verifiers see them), or when the context would leave no room for another turn: a tool or user
turn that would pass `max_seq_len - max_new_tokens` is not appended (the calls did run) and the
reason says so (`CONTEXT_FULL`), so no episode is ever longer than `max_seq_len`. Tool calls run
under a time limit (`tool_time_limit` seconds per call). The verdict goes
through `checked_verdict`: a verifier that raises, or a reward that is not a finite number in
[0, 1], scores 0 with the reason recorded (prefix `INVALID_REWARD`), never stopping the batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from transformers import PreTrainedTokenizerBase

from envsched_lightning.envs.base import (  # noqa: F401 - checked_verdict and INVALID_REWARD are re-exported
    INVALID_REWARD,
    Environment,
    Episode,
    Task,
    Verdict,
    checked_verdict,
    play_turn,
)
from envsched_lightning.envs.time_limit import DEFAULT_TOOL_TIME_LIMIT
from envsched_lightning.envs.tool_formats import translate

from .chat import MARKER, ChatRenderer, tool_message  # noqa: F401 - MARKER and tool_message are re-exported
from .engine import Completion, RolloutEngine, SamplingConfig
from .types import EpisodeRecord, RolloutBatch

GenerateFn = Callable[[list[int], list[list[int]]], list[Completion]]
"""(episode ids, prompts) -> one completion per prompt; ids let scripted policies replay per episode."""


@dataclass
class _Running:
    """Mutable state of one episode while it runs."""

    group: int
    task: Task
    env: Environment
    episode: Episode
    messages: list[dict[str, Any]]
    token_ids: list[int]
    prompt_len: int
    loss_mask: list[int] = field(default_factory=list)
    turns: int = 0
    tool_calls: int = 0
    parse_errors: int = 0
    truncated: bool = False
    done: bool = False
    final_answer: str = ""
    sample_logprobs: list[float] | None = None  # engine log-probs, 0 on context tokens; None once a turn lacks them
    unplayable: str | None = None  # why the episode was scored 0 without a turn (its prompt leaves no room)
    cut: str | None = None  # why the episode ended before the task did (the context is full)


def _start(groups: Sequence[tuple[Task, Environment]], group_size: int, renderer: ChatRenderer) -> list[_Running]:
    running = []
    for b, (task, env) in enumerate(groups):
        prompt = renderer.prompt(task, env)
        for _ in range(group_size):
            running.append(
                _Running(b, task, env, env.reset(task), [dict(m) for m in task.messages], list(prompt), len(prompt),
                         loss_mask=[0] * len(prompt), sample_logprobs=[0.0] * len(prompt))
            )
    return running


def _append(ep: _Running, token_ids: list[int], generated: bool, logprobs: list[float] | None = None) -> None:
    ep.token_ids += token_ids
    ep.loss_mask += [int(generated)] * len(token_ids)
    if ep.sample_logprobs is not None:
        if generated and (logprobs is None or len(logprobs) != len(token_ids)):
            ep.sample_logprobs = None  # this engine did not report them: no off-policy correction
        else:
            ep.sample_logprobs += list(logprobs) if generated else [0.0] * len(token_ids)


def _append_context(ep: _Running, token_ids: list[int], what: str, budget: int) -> None:
    """Append a tool or user turn, unless it would leave no room for another model turn: then end the episode."""
    if len(ep.token_ids) + len(token_ids) > budget:
        ep.done = ep.truncated = True
        ep.cut = (f"{CONTEXT_FULL}: the {what} turn ({len(token_ids)} tokens) after {len(ep.token_ids)} tokens would "
                  f"pass max_seq_len - max_new_tokens = {budget}; not appended, episode ended")  # fmt: skip
        return
    _append(ep, token_ids, False)


def _advance(ep: _Running, completion: Completion, renderer: ChatRenderer, budget: int,
             tool_time_limit: float | None = DEFAULT_TOOL_TIME_LIMIT) -> None:  # fmt: skip
    """Append one model turn, run it (`play_turn`: its tool calls, or the next user turn after an answer), and
    append what comes back, or finish the episode."""
    _append(ep, list(completion.token_ids), True, completion.logprobs)
    ep.turns += 1
    out = play_turn(ep.episode, ep.task, completion.text, ep.turns, renderer.parse, tool_time_limit)
    ep.parse_errors += len(out.parsed.errors)
    ep.messages.append({"role": "assistant", "content": completion.text})
    ep.final_answer = out.answer
    if not out.is_answer:
        ep.tool_calls += len(out.parsed.calls)
    if out.done:
        ep.done, ep.truncated = True, out.truncated
        return
    if out.is_answer:
        assert out.user_messages is not None
        ep.messages += out.user_messages
        _append_context(ep, renderer.continuation(out.user_messages, _ended(completion, renderer)), "user", budget)
        return
    tool_msgs = renderer.tool_messages(out.results)
    ep.messages += tool_msgs  # the calls ran; their results stay in the record even when not appended
    _append_context(ep, renderer.tool_turn(tool_msgs, _ended(completion, renderer)), "tool", budget)


def _ended(completion: Completion, renderer: ChatRenderer) -> bool:
    """Whether the turn closed with the template's own end token (else the continuation adds it)."""
    return bool(completion.token_ids) and completion.token_ids[-1] == renderer.eos_id


CONTEXT_FULL = "context full"
"""Reason suffix of an episode ended because its next tool or user turn would not fit `max_seq_len`."""

PROMPT_TOO_LONG = "prompt too long"
"""Reason prefix of an episode whose prompt leaves no room to generate within `max_seq_len`: scored 0,
never a crash (a benchmark counts a task the model cannot answer as failed; GRPO gets a zero-variance group)."""

def prompt_too_long(tokens: int, budget: int) -> str:
    """The recorded reason of an episode whose prompt of `tokens` exceeds `budget` (max_seq_len - max_new_tokens)."""
    return f"{PROMPT_TOO_LONG}: {tokens} tokens, more than max_seq_len - max_new_tokens = {budget}; scored 0"


def rollout_episodes(
    generate: GenerateFn,
    tokenizer: PreTrainedTokenizerBase,
    groups: Sequence[tuple[Task, Environment]],
    group_size: int,
    *,
    max_new_tokens: int,
    max_seq_len: int = 4096,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    tool_format: str = "auto",
    tool_schemas: str = "json",
    tool_time_limit: float | None = DEFAULT_TOOL_TIME_LIMIT,
    on_turn: Callable[[int, int], None] | None = None,
) -> RolloutBatch:
    """Run `group_size` episodes for each (task, env) with any turn generator; see `run_agent_loop`.

    `tool_format` says how the policy's template carries tools (`chat.ChatRenderer`): ``auto``
    detects it, ``prompt`` puts the schemas in the system prompt (`tool_schemas` ``json`` or ``compact``),
    a format name forces it. `tool_time_limit`: seconds per tool call (None: none). `on_turn(finished,
    episodes)` is called before each turn's generation: a long batch reports progress there, and may
    raise there to drop the batch (nothing of it has left this function)."""
    renderer = ChatRenderer(tokenizer, chat_template_kwargs, tool_format, tool_schemas)
    running = _start(groups, group_size, renderer)
    budget = max_seq_len - max_new_tokens  # a sequence longer than this could not take another turn
    for ep in running:  # a prompt with no room for a turn scores 0 with the reason; the batch goes on
        if len(ep.token_ids) > budget:
            ep.done = ep.truncated = True
            ep.unplayable = prompt_too_long(len(ep.token_ids), budget)
    while active := [i for i, ep in enumerate(running) if not ep.done]:
        if on_turn is not None:
            on_turn(len(running) - len(active), len(running))
        completions = generate(active, [running[i].token_ids for i in active])
        for i, completion in zip(active, completions, strict=True):
            _advance(running[i], completion, renderer, budget, tool_time_limit)
    return RolloutBatch([_finish(ep, tool_time_limit) for ep in running], group_size)


def _finish(ep: _Running, tool_time_limit: float | None) -> EpisodeRecord:
    verdict = Verdict(0.0, ep.unplayable) if ep.unplayable else checked_verdict(ep.episode, ep.final_answer, tool_time_limit)
    if ep.cut:  # the verifier's reward stands; the record says why the episode stopped early
        verdict = Verdict(verdict.reward, f"{verdict.reason} [{ep.cut}]", verdict.scores)
    return EpisodeRecord(
        group=ep.group, env=ep.env.name, task_key=ep.task.spec.key, token_ids=ep.token_ids,
        loss_mask=ep.loss_mask, prompt_len=ep.prompt_len, reward=float(verdict.reward), reason=verdict.reason,
        turns=ep.turns, tool_calls=ep.tool_calls, parse_errors=ep.parse_errors, gen_tokens=sum(ep.loss_mask),
        truncated=ep.truncated, final_answer=ep.final_answer, messages=tuple(ep.messages),
        sample_logprobs=ep.sample_logprobs, scores=dict(verdict.scores) or None,
    )  # fmt: skip


def run_agent_loop(
    engine: RolloutEngine,
    tokenizer: PreTrainedTokenizerBase,
    groups: Sequence[tuple[Task, Environment]],
    group_size: int,
    sampling: SamplingConfig,
    **kwargs: Any,
) -> RolloutBatch:
    """G sampled rollouts of each (task, env) with `engine`; batched across all running episodes per turn."""
    return rollout_episodes(
        lambda _ids, prompts: engine.generate(prompts, sampling),
        tokenizer, groups, group_size, max_new_tokens=sampling.max_new_tokens, **kwargs,
    )  # fmt: skip


def default_oracle(task: Task, env: Environment) -> list[str]:
    """``env.oracle_turns(task)`` when the environment scripts its own, else the shared ground-truth script."""
    own = getattr(env, "oracle_turns", None)
    if callable(own):
        return list(own(task))
    from envsched_lightning.envs.oracle import oracle_turns

    return oracle_turns(task)


def oracle_rollouts(
    tokenizer: PreTrainedTokenizerBase,
    groups: Sequence[tuple[Task, Environment]],
    oracle: Callable[[Task, Environment], Sequence[str]] | None = None,
    **kwargs: Any,
) -> RolloutBatch:
    """One scripted episode per (task, env) replaying the oracle's assistant turns: SFT data with GRPO's masks.

    `oracle` defaults to `default_oracle`; its turns (written as ``<tool_call>`` blocks) are rewritten in
    the policy's tool-call format. Each turn is tokenised and closed with the template's turn end.
    """
    oracle = oracle or default_oracle
    renderer = ChatRenderer.for_loop(tokenizer, kwargs)
    scripts = [[translate(t, renderer.protocol.format) for t in oracle(task, env)] for task, env in groups]
    eos = renderer.eos_id  # the template's turn end
    turn_of = [0] * len(groups)
    # a scripted turn's text is the model's: its call markup as the model samples it, and any other
    # special-token string in it (dataset text quoting "<|im_end|>") plain text, never a turn end
    encoded = [[renderer.encode_text(t) for t in script] for script in scripts]

    def replay(ids: list[int], _prompts: list[list[int]]) -> list[Completion]:
        out = []
        for i in ids:
            n = turn_of[i]
            text, tokens = (scripts[i][n], encoded[i][n]) if n < len(scripts[i]) else ("", [])
            turn_of[i] += 1
            out.append(Completion(tokens + [eos], text))
        return out

    longest = max((len(t) for script in encoded for t in script), default=1)
    return rollout_episodes(replay, tokenizer, groups, 1, max_new_tokens=longest + 1, **kwargs)
