"""A real pretrained chat model as the simulated user (SmolLM2-135M-Instruct): ACEBench-Agent multi_turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from envsched_lightning.envs.acebench.agent import AceBenchAgentEnvironment
from envsched_lightning.envs.base import next_turn

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.mark.skipif(not (DATA / "acebench").is_dir(), reason=f"benchmark data not found at {DATA}")
def test_smollm2_plays_the_user_of_acebench_multi_turn(smollm2_dir):
    env = AceBenchAgentEnvironment("agent_multi_turn", data_dir=DATA, user="model", user_model_path=str(smollm2_dir),
                                   user_max_new_tokens=8)  # fmt: skip  (30 openings are generated when the tasks are built)
    task = env.tasks()[0]
    instruction, opening = task.ground_truth["record"]["question"], task.messages[-1]["content"]
    assert opening.strip() and opening != instruction  # the model wrote the user's first line itself
    episode = env.reset(task)
    reply, failed = next_turn(episode, "Sure. Who should the message go to, and what should it say?")
    assert failed is None
    cost = episode.user.cost
    assert cost.turns == 1 and 0 < cost.new_tokens <= 8 and cost.prompt_tokens > 100
    if reply is not None:  # the user went on (it may also have finished, which ends the episode)
        assert reply[0]["role"] == "user" and reply[0]["content"].strip()
    verdict = episode.verify("")
    assert verdict.scores["user_turns"] == 1.0 and verdict.scores["user_tokens"] == cost.new_tokens
