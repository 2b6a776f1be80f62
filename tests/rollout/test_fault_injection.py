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

import pytest

from envsched_lightning.envs import make_env
from envsched_lightning.envs.base import MAX_RESULT_CHARS, ToolCall, Verdict
from envsched_lightning.envs.parsing import render_tool_call
from envsched_lightning.models import build_offline_tokenizer
from envsched_lightning.rollout import INVALID_REWARD, Completion, default_oracle, oracle_rollouts, rollout_episodes
from tests.data_roots import needs, root_with

DATA = root_with("bfcl_v3", "tau_bench")
needs_data = needs("bfcl_v3", "tau_bench")  # the adversarial turns play tau_retail too


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
    assert len(tasks) == 200 and sum(len(t.ground_truth["record"]["question"]) > 1 for t in tasks) == 197
    tok = build_offline_tokenizer([env], vocab_size=1024)
    batch = oracle_rollouts(tok, [(t, env) for t in tasks], max_seq_len=16384)  # the longest episodes: 8 classes of docs
    # v3's multi_turn_base_154 has 6 ground-truth turns for 5 user turns: no conversation can play the
    # sixth, so upstream scores it "force terminated" for every model (fixed in v4)
    failed = {t.spec.task_id: e.reason for t, e in zip(tasks, batch.episodes) if e.reward < 1}
    assert failed.keys() == {"multi_turn_base_154"} and "force terminated: 5 of 6" in failed["multi_turn_base_154"], failed
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


class SlowOrHugeToolEnv:
    """A real world whose tools misbehave in time or size (test double: no shipped tool loops or floods)."""

    def __init__(self, env, step) -> None:
        self._env, self._step = env, step
        self.name = env.name

    def __getattr__(self, attr):
        return getattr(self._env, attr)

    def reset(self, task):
        episode = self._env.reset(task)
        episode.step = self._step
        return episode


def scripted(tok, turns: list[str]):
    """Every episode plays `turns`, then answers "Done."."""
    played: dict[int, int] = {}

    def generate(ids, _prompts):
        out = []
        for i in ids:
            n = played[i] = played.get(i, -1) + 1
            text = turns[n] if n < len(turns) else "Done."
            out.append(Completion(tok.encode(text, add_special_tokens=False) + [tok.eos_token_id], text))
        return out

    return generate


def test_a_tool_turn_that_would_pass_max_seq_len_is_not_appended_and_the_reason_says_so():
    """64 calls returning 8,000 characters each, and the built-in banking world's own tools called
    many times in a turn: no episode grows past max_seq_len; the verifier's reward stands."""
    from envsched_lightning.envs.base import ToolResult
    from envsched_lightning.rollout import CONTEXT_FULL, pack_sequences

    banking = make_env("banking", num_tasks=4)
    tok = build_offline_tokenizer([banking], vocab_size=512)
    task = banking.tasks()[0]
    flood = SlowOrHugeToolEnv(banking, lambda calls: [ToolResult(c.name, "x" * 8000) for c in calls])
    many = "".join(call("get_balance", account_id=f"A{i}") for i in range(64))
    for env in (flood, banking):
        batch = rollout_episodes(scripted(tok, [many, many, many]), tok, [(task, env)], 2, max_new_tokens=2048,
                                 max_seq_len=2560)  # fmt: skip
        for e in batch.episodes:
            assert len(e.token_ids) <= 2560  # never past max_seq_len
            assert CONTEXT_FULL in e.reason and e.truncated and 0.0 <= e.reward <= 1.0, e.reason
            assert "not appended" in e.reason and e.tool_calls == 64 * e.turns
        seqs = pack_sequences(batch.episodes, tok.pad_token_id, 2560)
        assert seqs.tokens.shape[1] <= 2560


def test_pack_sequences_never_returns_more_than_max_seq_len():
    from envsched_lightning.rollout import pack_sequences

    env = make_env("banking", num_tasks=4)
    tok = build_offline_tokenizer([env], vocab_size=512)
    episodes = oracle_rollouts(tok, [(t, env) for t in env.tasks()[:3]]).episodes
    longest = max(len(e.token_ids) for e in episodes)
    seqs = pack_sequences(episodes, tok.pad_token_id, longest - 10)
    assert seqs.tokens.shape[1] == longest - 10 and seqs.loss_mask.shape[1] == longest - 11


def test_a_tool_that_runs_too_long_is_interrupted_and_answered_with_an_error():
    """A Python loop that never ends, and one that swallows every Exception: both stop at the limit."""
    banking = make_env("banking", num_tasks=4)
    tok = build_offline_tokenizer([banking], vocab_size=512)
    task = banking.tasks()[0]

    def forever(calls):
        while True:
            try:
                sum(range(1000))
            except Exception:  # noqa: BLE001 - a tool that swallows errors cannot swallow the time limit
                pass

    env = SlowOrHugeToolEnv(banking, forever)
    t0 = time.perf_counter()
    batch = rollout_episodes(scripted(tok, [call("get_balance", account_id="A1")]), tok, [(task, env)], 2,
                             max_new_tokens=64, max_seq_len=4096, tool_time_limit=0.5)  # fmt: skip
    assert time.perf_counter() - t0 < 30  # two calls of 0.5 s each, not forever
    for e in batch.episodes:
        tool = [m["content"] for m in e.messages if m["role"] == "tool"]
        assert tool and "timed out" in tool[0] and "0.5 s" in tool[0]
        assert e.turns == 2 and 0.0 <= e.reward <= 1.0  # the episode went on to its answer


def test_calculate_refuses_floor_division_too_big_to_interrupt():
    """One `//` of two huge integers is a single C call no time limit can stop: refused by size."""
    from envsched_lightning.envs.tau.backends.common import calculate

    t0 = time.perf_counter()
    assert calculate("(9**600000)//(7**300000)") == "Error: integer result too large to evaluate"
    assert calculate(" + ".join(["(9**600000)//(7**300000)"] * 100)).startswith("Error:")
    assert time.perf_counter() - t0 < 20
    assert calculate("7//2") == "3.0" and calculate("(10**30)//(10**28)") == "100.0"  # ordinary use unchanged


def test_the_warm_start_skips_prompts_with_no_room_and_says_how_many(caplog):
    from envsched_lightning.envs.base import Task
    from envsched_lightning.models import tiny_qwen3_policy
    from envsched_lightning.module import GRPOModule

    env = make_env("banking", num_tasks=6)
    short = env.tasks()[0]
    long = Task(short.spec.__class__(env="banking", task_id="huge"), ({"role": "user", "content": "deposit " * 400},),
                short.ground_truth, short.max_turns)  # fmt: skip
    module = GRPOModule(tiny_qwen3_policy(envs=[env], vocab_size=512), grpo=dict(max_seq_len=256),
                        sampling=dict(max_new_tokens=32), warm_start=dict(steps=1, batch_size=2))  # fmt: skip
    with caplog.at_level("WARNING"):
        losses = module.warm_start([(long, env), (short, env)])
    assert len(losses) == 1 and "warm start: 1 task(s) skipped" in caplog.text and "banking/huge" in caplog.text
