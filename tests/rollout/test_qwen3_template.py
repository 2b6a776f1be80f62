"""The agent loop with Qwen3's own chat template (the `qwen3.jinja` trl ships), not our offline one.

Qwen3's template is not append-only: the last assistant turn gets an empty think block, earlier
ones none. Episodes are built append-only anyway (tokens exactly as sampled); these tests check
that every piece the loop appends is what the template renders for that point of the
conversation, over every built-in world and the multi-turn benchmark environments.
"""

from __future__ import annotations

import pytest

from envsched_lightning.envs import make_env
from envsched_lightning.envs.base import ToolCall
from envsched_lightning.envs.parsing import render_tool_call
from envsched_lightning.models import build_offline_tokenizer, reference_chat_template
from envsched_lightning.rollout import oracle_rollouts

from tests.data_roots import data_root
from tests.envs.helpers import build, builtin_yamls
from tests.rollout.helpers import spans

KW = {"enable_thinking": False}  # as conf/model/qwen3_8b.yaml
THINK_OFF = "<|im_start|>assistant\n<think>\n\n</think>\n\n"


def qwen3_tokenizer(env):
    tok = build_offline_tokenizer([env], vocab_size=512)
    tok.chat_template = reference_chat_template("qwen3")
    return tok


def check_episode(tok, env, task, ep):
    render = lambda msgs, gen: tok.apply_chat_template(list(msgs), tools=env.tools_for(task), tokenize=False,  # noqa: E731
                                                       add_generation_prompt=gen, **KW)
    decode = lambda ids: tok.decode(ids, skip_special_tokens=False)  # noqa: E731
    assert decode(ep.token_ids[: ep.prompt_len]) == render(task.messages, True)
    assert decode(ep.token_ids[: ep.prompt_len]).endswith(THINK_OFF)
    assistant_at = [i for i, m in enumerate(ep.messages) if m["role"] == "assistant"]
    runs = spans(ep)
    generated = [ids for flag, ids in runs if flag == 1]
    context = [ids for flag, ids in runs if flag == 0]
    assert len(generated) == ep.turns == len(assistant_at)
    for ids, at in zip(generated, assistant_at):  # each model turn exactly as written, closed by <|im_end|>
        assert decode(ids) == ep.messages[at]["content"] + "<|im_end|>"
    for k, ids in enumerate(context):  # each tool turn is how the template renders that point, plus the next prompt
        upto = assistant_at[k + 1]  # the tool messages up to the next assistant turn
        assert render(ep.messages[:upto], True).endswith(decode(ids))
        after = ep.messages[assistant_at[k] + 1]["role"]  # tool results, or a multi-turn task's next user turn
        opening = "\n<|im_start|>user\n<tool_response>\n" if after == "tool" else "\n<|im_start|>user\n"
        assert decode(ids).startswith(opening) and decode(ids).endswith(THINK_OFF)


@pytest.mark.parametrize("path", builtin_yamls(), ids=lambda p: p.stem)
def test_oracle_episodes_of_every_built_in_world(path):
    env = build(path)
    tok = qwen3_tokenizer(env)
    tasks = env.tasks()[:6]
    batch = oracle_rollouts(tok, [(t, env) for t in tasks], chat_template_kwargs=KW)
    assert any(ep.tool_calls for ep in batch.episodes)
    for task, ep in zip(tasks, batch.episodes):
        check_episode(tok, env, task, ep)
        assert ep.reward == 1.0, ep.reason  # the scripted solution still solves it under Qwen3's template


def benchmark_script(task, env):
    """One tool call per turn from the benchmark's ground truth (the first user turn for BFCL), then prose."""
    truth = task.ground_truth
    calls = ([ToolCall(a["name"], a["kwargs"]) for a in truth["actions"]] if "actions" in truth
             else list(truth["calls"][0]))  # fmt: skip
    return [render_tool_call(c) for c in calls] + ["Done."]


@pytest.mark.parametrize("name", ["bfcl_multi_turn_base", "tau_retail", "tau_airline"])
def test_scripted_episodes_of_multi_turn_benchmarks(name):
    env = make_env(name, data_dir=str(data_root("tau_bench" if name.startswith("tau_") else "bfcl_v3")))
    tok = qwen3_tokenizer(env)
    tasks = [t for t in env.tasks() if benchmark_script(t, env)[:-1]][:5]
    batch = oracle_rollouts(tok, [(t, env) for t in tasks], oracle=benchmark_script, chat_template_kwargs=KW,
                           max_seq_len=32768)  # the offline tokenizer spells long BFCL prompts out
    assert sum(ep.tool_calls for ep in batch.episodes) >= len(tasks)
    for task, ep in zip(tasks, batch.episodes):
        check_episode(tok, env, task, ep)


def test_a_template_that_never_closes_assistant_turns_is_refused(counter_env):
    from envsched_lightning.rollout import ChatRenderer

    tok = build_offline_tokenizer([counter_env], vocab_size=512)
    tok.chat_template = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    with pytest.raises(ValueError, match="does not close an assistant turn"):
        ChatRenderer(tok).tool_turn([{"role": "tool", "name": "f", "content": "1"}], True)
