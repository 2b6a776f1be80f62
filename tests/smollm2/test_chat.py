"""The agent loop with SmolLM2's real tokenizer and chat template (the ones its GGUF carries).

Its template has no tool support: the protocol is detected as the system-prompt fallback, and the
same per-turn guarantees as for every other family hold (`tests/rollout/test_family_templates.py`):
the prompt is the template's rendering, each appended piece is what the template renders at that
point, model turns end with ``<|im_end|>``, and the scripted episodes of every built-in world score 1.
"""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from envsched_lightning.rollout import ChatRenderer, oracle_rollouts
from tests.envs.helpers import build, builtin_yamls
from tests.rollout.helpers import CHATML_NO_TOOLS, check_family_episode


@pytest.fixture(scope="module")
def tokenizer(smollm2_dir):
    return AutoTokenizer.from_pretrained(smollm2_dir)


def test_the_copy_in_the_default_suite_is_the_real_template(tokenizer):
    assert tokenizer.chat_template == CHATML_NO_TOOLS


@pytest.mark.parametrize("schemas", ["json", "compact"])
@pytest.mark.parametrize("path", builtin_yamls(), ids=lambda p: p.stem)
def test_scripted_episodes_under_smollm2s_template(tokenizer, path, schemas):
    env = build(path)
    renderer = ChatRenderer(tokenizer, {}, tool_schemas=schemas)
    assert renderer.protocol.name == "prompt" and renderer.eos_text == "<|im_end|>"
    tasks = env.tasks()[:4]
    batch = oracle_rollouts(tokenizer, [(t, env) for t in tasks], tool_schemas=schemas)
    for task, ep in zip(tasks, batch.episodes):
        assert ep.reward == 1.0 and ep.parse_errors == 0, ep.reason
        check_family_episode(renderer, env, task, ep)
