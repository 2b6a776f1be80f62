"""With a sampling seed set, the G rollouts of one prompt still differ (each request gets its own seed),
and the same seed gives the same rollouts from a fresh engine."""

from __future__ import annotations

from tests.vllm.helpers import close, load_policy, make_engine

from envsched_lightning.rollout import SamplingConfig


def prompt(tok) -> list[int]:
    messages = [{"role": "user", "content": "What is my balance?"}]
    return tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, enable_thinking=False)["input_ids"]


def sample_group(checkpoint_dir, policy, sampling) -> list[tuple[int, ...]]:
    """The group from a freshly started engine, as a new run of the same config would draw it."""
    fresh = make_engine(checkpoint_dir, policy)
    fresh.sync_weights(policy.model)
    try:
        return [tuple(c.token_ids) for c in fresh.generate([prompt(policy.tokenizer)] * 8, sampling)]
    finally:
        close(fresh)


def test_rollouts_of_one_prompt_differ_under_a_seed_and_repeat_with_it(engine, checkpoint_dir):
    close(engine)  # one in-process engine at a time; the shared one restarts when next used
    policy = load_policy(checkpoint_dir)
    sampling = SamplingConfig(max_new_tokens=32, temperature=1.0, seed=7)
    first = sample_group(checkpoint_dir, policy, sampling)
    assert len(set(first)) > 1, "all 8 rollouts of the group are identical"
    assert sample_group(checkpoint_dir, policy, sampling) == first


def test_seeded_requests_with_long_prompts_do_not_crash_the_cpu_engine(engine, checkpoint_dir):
    """More prompt tokens than one scheduler step takes (4,096): a chunked prefill would rewind a
    CPU generator, which vLLM's CPU build cannot do. Distinct prompts, so the prefix cache cannot
    shrink the prefill."""
    policy = load_policy(checkpoint_dir)
    engine.sync_weights(policy.model)
    base = prompt(policy.tokenizer)
    prompts = [([(t + i) % 1000 + 10 for t in base] * 100)[:1000] + base for i in range(12)]  # 12 x ~1,000 tokens
    assert sum(map(len, prompts)) > 2 * 4096
    outs = engine.generate(prompts, SamplingConfig(max_new_tokens=8, temperature=1.0, seed=3))
    assert len(outs) == 12 and all(o.token_ids for o in outs)
