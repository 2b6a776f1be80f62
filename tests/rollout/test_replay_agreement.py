"""`envs.score.replay` (offline scoring of saved outputs) and the agent loop end an episode at the same turn with the
same verdict: both follow `envs.base.play_turn`. The loop plays the same texts through `oracle_rollouts`."""

from __future__ import annotations

import pytest

from envsched_lightning.envs import make_env
from envsched_lightning.envs.score import replay
from envsched_lightning.rollout.agent_loop import default_oracle, oracle_rollouts
from tests.data_roots import data_root


def scripts(task, env) -> dict[str, list[str]]:
    truth = default_oracle(task, env)
    return {
        "oracle": truth,
        "oracle, then answers": [*truth, "Anything else?", "Done."],
        "a malformed call, then an answer": ['<tool_call>{"name": broken</tool_call>', "I could not do it."],
        "answers past max_turns": [f"Answer {i}?" for i in range(task.max_turns + 3)],
        "calls past max_turns": [truth[0] if truth else "<tool_call>{}</tool_call>"] * (task.max_turns + 3),
    }


@pytest.mark.parametrize("env_name", ["banking", "acebench_agent_multi_turn"])
def test_replay_and_the_agent_loop_agree_turn_by_turn(tiny_policy, env_name):
    env = make_env(env_name, data_dir=str(data_root("acebench"))) if env_name.startswith("acebench") else make_env(env_name)
    checked = 0
    for task in env.tasks()[:3]:
        for name, texts in scripts(task, env).items():
            padded = texts + [""] * (task.max_turns + 3)  # the loop plays "" once a script runs out: so does replay
            verdict, played = replay(env, task, padded)
            (episode,) = oracle_rollouts(tiny_policy.tokenizer, [(task, env)], oracle=lambda _t, _e, x=texts: x,
                                         max_seq_len=10**7).episodes  # no context limit: replay has none  # fmt: skip
            assert (episode.turns, episode.reward, episode.reason) == (played, verdict.reward, verdict.reason), name
            checked += 1
    assert checked == 15
