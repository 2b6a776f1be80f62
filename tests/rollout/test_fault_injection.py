"""No model turn, tool or verifier stops a batch: adversarial turns inside a real batch of the agent loop.

One episode of each group writes the adversarial turns below (the cases that once killed a step);
its group-mates play the task's ground truth. The batch must finish, every episode with a reward
in [0, 1] and a reason, tool results bounded in size, and the honest episodes unharmed. Multi-turn
BFCL tasks get every user turn through the loop, so a perfect scripted policy scores as through
the environment's own protocol.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from envsched_lightning.envs import make_env
from envsched_lightning.envs.base import MAX_RESULT_CHARS, ToolCall, Verdict
from envsched_lightning.envs.parsing import render_tool_call
from envsched_lightning.models import build_offline_tokenizer
from envsched_lightning.rollout import INVALID_REWARD, Completion, default_oracle, oracle_rollouts, rollout_episodes

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "bfcl_v3").is_dir(), reason=f"benchmark data not found at {DATA}")


def call(name: str, **arguments) -> str:
    return render_tool_call(ToolCall(name, arguments))


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


ADVERSARIAL = {
    "tau_retail": [
        call("calculate", expression="1" + "0" * 400 + "/3"),
        call("calculate", expression="-" * 100_000 + "1"),
        '<tool_call>{"name": "calculate", "arguments": {"expression": NaN}}</tool_call>',
        '<tool_call>{"name": "think", "arguments": {"thought": ' + nested(985) + "}}</tool_call>",
    ],
    "bfcl_multi_turn_base": [
        call("cd", folder=123),
        call("search_messages", keyword=5),
        call("search_tweets", keyword=None),
        call("power", base=10, exponent=5000),
        call("power", base=7, exponent=1e8),
        call("multiply", a="ab", b=10**7),
        call("multiply", a="ab", b=1e12),
        '<tool_call>{"name": "echo", "arguments": {"content": ' + nested(985) + "}}</tool_call>",
        "<tool_call>" * 20_000,
    ],
}


def adversarial_batch(env, turns: list[str], n_tasks: int = 3, group: int = 3):
    tok = build_offline_tokenizer([env], vocab_size=512)
    tasks = [t for t in env.tasks() if _has_oracle(t, env)][:n_tasks]
    scripts = {}
    for b, task in enumerate(tasks):
        for g in range(group):
            scripts[b * group + g] = list(turns) if g == 0 else default_oracle(task, env)
    turn_of = dict.fromkeys(scripts, 0)

    def generate(ids, _prompts):
        out = []
        for i in ids:
            script = scripts[i]
            text = script[turn_of[i]] if turn_of[i] < len(script) else "Done."
            turn_of[i] += 1
            out.append(Completion(tok.encode(text, add_special_tokens=False)[:4096] + [tok.eos_token_id], text))
        return out

    t0 = time.perf_counter()
    batch = rollout_episodes(generate, tok, [(t, env) for t in tasks], group, max_new_tokens=4097, max_seq_len=10**6)
    return batch, time.perf_counter() - t0


def _has_oracle(task, env) -> bool:
    try:
        return bool(default_oracle(task, env))
    except ValueError:
        return False


@needs_data
@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_turns_never_stop_the_batch(name):
    env = make_env(name, data_dir=str(DATA))
    batch, seconds = adversarial_batch(env, ADVERSARIAL[name])
    assert seconds < 60, f"adversarial turns took {seconds:.0f} s"
    for e in batch.episodes:
        assert 0.0 <= e.reward <= 1.0 and e.reason
        for m in e.messages:
            if m["role"] == "tool":
                assert len(m["content"]) <= MAX_RESULT_CHARS + 100
    attacked = batch.episodes[:: batch.group_size]
    assert all(e.reward == 0.0 and e.turns >= 4 for e in attacked)
    honest = [e for i, e in enumerate(batch.episodes) if i % batch.group_size]
    assert all(e.reward == 1.0 for e in honest), [e.reason for e in honest if e.reward < 1.0]


class BrokenVerifierEnv:
    """A real world whose verifier misbehaves (test double: no shipped verifier returns NaN)."""

    def __init__(self, env, outcome) -> None:
        self._env, self._outcome = env, outcome
        self.name = env.name

    def __getattr__(self, attr):
        return getattr(self._env, attr)

    def reset(self, task):
        episode = self._env.reset(task)
        outcome = self._outcome

        def verify(answer: str) -> Verdict:
            if isinstance(outcome, Exception):
                raise outcome
            return Verdict(outcome, "broken")

        episode.verify = verify
        return episode


@pytest.mark.parametrize("outcome", [math.nan, math.inf, 1.5, -0.1, "x", KeyError("boom")], ids=repr)
def test_a_misbehaving_verifier_scores_zero_with_the_reason(outcome):
    env = BrokenVerifierEnv(make_env("banking", num_tasks=4), outcome)
    tok = build_offline_tokenizer([env._env], vocab_size=512)
    batch = oracle_rollouts(tok, [(t, env) for t in env.tasks()[:2]], oracle=lambda t, e: default_oracle(t, e._env))
    for e in batch.episodes:
        assert e.reward == 0.0 and e.reason.startswith(INVALID_REWARD), e.reason


@needs_data
def test_multi_turn_bfcl_gets_every_user_turn_and_a_perfect_script_scores_one():
    env = make_env("bfcl_multi_turn_base", data_dir=str(DATA))
    tasks = env.tasks()
    assert sum(len(t.ground_truth["record"]["question"]) > 1 for t in tasks) == 44
    tok = build_offline_tokenizer([env], vocab_size=1024)
    batch = oracle_rollouts(tok, [(t, env) for t in tasks])
    rewards = [e.reward for e in batch.episodes]
    assert sum(rewards) == len(tasks), [e.reason for e in batch.episodes if e.reward < 1][:3]
    for task, ep in zip(tasks, batch.episodes):
        questions = task.ground_truth["record"]["question"]
        users = [m for m in ep.messages if m["role"] == "user"]
        assert len(users) == sum(len(q) for q in questions)
        full = tok.decode(ep.token_ids)
        generated = tok.decode([t for t, m in zip(ep.token_ids, ep.loss_mask) if m])
        for q in questions[1:]:  # later user turns are in the episode as context, never trained on
            for msg in q:
                assert full.count(msg["content"]) > generated.count(msg["content"])


def test_a_prompt_with_no_room_to_generate_scores_zero_and_the_batch_goes_on():
    """A task whose prompt alone passes max_seq_len - max_new_tokens is scored 0 with the reason, its
    group never reaches the engine, and the other groups of the batch play as usual."""
    from envsched_lightning.rollout import PROMPT_TOO_LONG
    from envsched_lightning.envs.base import Task

    env = make_env("banking", num_tasks=4)
    tok = build_offline_tokenizer([env], vocab_size=512)
    short = env.tasks()[0]
    long = Task(short.spec.__class__(env="banking", task_id="huge"), ({"role": "user", "content": "deposit " * 400},),
                short.ground_truth, short.max_turns)  # fmt: skip
    asked: list[int] = []

    def generate(ids, prompts):  # every turn answers in prose: one turn per playable episode
        asked.extend(len(p) for p in prompts)
        return [Completion(tok.encode("Done.", add_special_tokens=False) + [tok.eos_token_id], "Done.") for _ in prompts]

    batch = rollout_episodes(generate, tok, [(long, env), (short, env)], 2, max_new_tokens=32, max_seq_len=256)
    too_long, ok = batch.episodes[:2], batch.episodes[2:]
    assert all(e.reward == 0.0 and e.reason.startswith(PROMPT_TOO_LONG) and e.turns == 0 for e in too_long)
    assert "= 224; scored 0" in too_long[0].reason  # max_seq_len 256 - max_new_tokens 32
    assert [e.turns for e in ok] == [1, 1] and len(asked) == 2 and max(asked) <= 224  # only the short task's
