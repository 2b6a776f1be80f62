"""Checks of an episode's tokens against a chat template, shared by the template tests and the real-model chat check."""

from __future__ import annotations

# SmolLM2-Instruct's own template (ChatML with a default system prompt, no tool support)
CHATML_NO_TOOLS = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def spans(ep):
    """Alternating (generated?, token ids) runs of one episode after its prompt."""
    out, cur, flag = [], [], None
    for t, m in zip(ep.token_ids[ep.prompt_len :], ep.loss_mask[ep.prompt_len :]):
        if m != flag and cur:
            out.append((flag, cur))
            cur = []
        flag = m
        cur.append(t)
    return out + ([(flag, cur)] if cur else [])


def check_family_episode(renderer, env, task, ep):
    """One episode rendered by `renderer`: its prompt, each model turn closed by the turn end, each appended
    context piece what the template renders at that point."""
    decode = lambda ids: renderer.tokenizer.decode(ids, skip_special_tokens=False)  # noqa: E731
    render = lambda msgs: renderer.render(msgs, env.tools_for(task), gen_prompt=True)  # noqa: E731
    assert decode(ep.token_ids[: ep.prompt_len]) == render(task.messages)
    assistant_at = [i for i, m in enumerate(ep.messages) if m["role"] == "assistant"]
    runs = spans(ep)
    generated = [ids for flag, ids in runs if flag == 1]
    context = [ids for flag, ids in runs if flag == 0]
    assert len(generated) == ep.turns == len(assistant_at)
    for ids, at in zip(generated, assistant_at):
        assert decode(ids) == ep.messages[at]["content"] + renderer.eos_text
    for k, ids in enumerate(context):
        assert render(ep.messages[: assistant_at[k + 1]]).endswith(decode(ids))
