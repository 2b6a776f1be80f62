"""The agent loop on the hand-built counter world: tokens, masks, turns, tool calls, isolation."""

from __future__ import annotations

from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.parsing import render_tool_call
from envsched_lightning.rollout import (
    Completion,
    HFEngine,
    SamplingConfig,
    oracle_rollouts,
    rollout_episodes,
    run_agent_loop,
)


def scripted(tokenizer, scripts):
    """A turn generator replaying `scripts[episode id]` turn by turn (what a model would have written)."""
    turn = {}

    def generate(ids, prompts):
        out = []
        for i in ids:
            k = turn.get(i, 0)
            turn[i] = k + 1
            text = scripts[i][k]
            out.append(Completion(tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id], text))
        return out

    return generate


def decode(tokenizer, ids):
    return tokenizer.decode(ids, skip_special_tokens=False)


def test_oracle_episode_tokens_are_the_chat_template_rendering(counter_env, tiny_policy):
    tok = tiny_policy.tokenizer
    task = counter_env.tasks()[0]
    (ep,) = oracle_rollouts(tok, [(task, counter_env)]).episodes
    assert ep.reward == 1.0 and ep.turns == 2 and ep.tool_calls == 1 and not ep.truncated
    full = tok.apply_chat_template(list(ep.messages), tools=counter_env.tool_schemas(), tokenize=False)
    assert decode(tok, ep.token_ids) + "\n" == full  # the template closes the last turn with a newline
    assert ep.token_ids[: ep.prompt_len] == tok.apply_chat_template(
        list(task.messages), tools=counter_env.tool_schemas(), add_generation_prompt=True
    )["input_ids"]


def test_loss_mask_covers_exactly_the_model_turns(counter_env, tiny_policy):
    tok = tiny_policy.tokenizer
    (ep,) = oracle_rollouts(tok, [(counter_env.tasks()[0], counter_env)]).episodes
    generated = [t for t, m in zip(ep.token_ids, ep.loss_mask) if m]
    first, final = counter_env.oracle_turns(counter_env.tasks()[0])
    assert decode(tok, generated) == first + "<|im_end|>" + final + "<|im_end|>"
    assert ep.gen_tokens == len(generated)
    assert ep.loss_mask[: ep.prompt_len] == [0] * ep.prompt_len
    # every tool-result token, the <tool_response> tags and the next turn's header are context (mask 0)
    masked_tail = [t for t, m in zip(ep.token_ids[ep.prompt_len :], ep.loss_mask[ep.prompt_len :]) if not m]
    text = decode(tok, masked_tail)
    assert '<tool_response>\n{"count": 2}\n</tool_response>' in text and text.endswith("<|im_start|>assistant\n")
    for special in ("<tool_response>", "</tool_response>"):
        (pos,) = [i for i, t in enumerate(ep.token_ids) if t == tok.convert_tokens_to_ids(special)]
        assert ep.loss_mask[pos] == 0


def test_multi_turn_with_a_tool_result_and_isolated_rollouts(counter_env, tiny_policy):
    tok = tiny_policy.tokenizer
    task = counter_env.tasks()[1]  # target 3
    inc = lambda n: render_tool_call(ToolCall("increment", {"by": n}))  # noqa: E731
    scripts = [
        [inc(1), inc(2), "The counter is 3."],  # two tool turns, then the answer: solved
        [inc(2), "The counter is 3."],  # wrong state: a shared counter would have made this 3 + 2
        ["I think it is 3."],  # answers without a tool: final on turn 1
    ]
    batch = rollout_episodes(scripted(tok, scripts), tok, [(task, counter_env)], 3, max_new_tokens=64)
    a, b, c = batch.episodes
    assert [e.reward for e in batch.episodes] == [1.0, 0.0, 0.0]
    assert (a.turns, a.tool_calls) == (3, 2) and (b.turns, b.tool_calls) == (2, 1) and (c.turns, c.tool_calls) == (1, 0)
    assert "count=2" in b.reason  # its own fresh episode: it never saw episode a's increments
    assert [m["role"] for m in a.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert a.messages[4]["content"] == '{"count": 3}'
    assert batch.rewards().shape == (1, 3)


def test_malformed_calls_are_shown_as_errors_and_counted(counter_env, tiny_policy):
    tok = tiny_policy.tokenizer
    task = counter_env.tasks()[0]
    broken = '<tool_call>\n{"name": "increment", "arguments": {"by": 2}\n</tool_call>'  # one closing brace short
    scripts = [[broken, render_tool_call(ToolCall("increment", {"by": 2})), "The counter is 2."]]
    (ep,) = rollout_episodes(scripted(tok, scripts), tok, [(task, counter_env)], 1, max_new_tokens=64).episodes
    assert ep.parse_errors == 1 and ep.turns == 3 and ep.reward == 1.0
    assert ep.messages[2]["content"].startswith("Error:")


def test_max_turns_stops_and_still_runs_the_last_calls(counter_env, tiny_policy):
    tok = tiny_policy.tokenizer
    task = counter_env.tasks()[0]  # target 2, max_turns 3
    scripts = [[render_tool_call(ToolCall("increment", {"by": 1}))] * 5]
    (ep,) = rollout_episodes(scripted(tok, scripts), tok, [(task, counter_env)], 1, max_new_tokens=64).episodes
    assert ep.turns == 3 and ep.tool_calls == 3 and ep.truncated
    assert "count=3" in ep.reason


def test_sampled_rollouts_with_the_real_tiny_model(counter_env, tiny_policy):
    model, tok = tiny_policy
    engine = HFEngine(model, tok)
    tasks = counter_env.tasks()[:2]
    batch = run_agent_loop(engine, tok, [(t, counter_env) for t in tasks], 3, SamplingConfig(max_new_tokens=12, seed=0))
    assert len(batch.episodes) == 6 and [e.group for e in batch.episodes] == [0, 0, 0, 1, 1, 1]
    for ep in batch.episodes:
        assert len(ep.token_ids) == len(ep.loss_mask) and 1 <= ep.turns <= 3
        assert 0 < ep.gen_tokens <= 12 * ep.turns and 0.0 <= ep.reward <= 1.0
