"""A turn ends on every end token of the model's generation config (Qwen3: `<|im_end|>` and
`<|endoftext|>`), and nothing after an end token is trained on.

The model here is built to make end tokens frequent: every input embedding is the same vector and
the attention and MLP outputs are zero, so the final hidden state, and with it the next-token
distribution, is the same at every position. Its LM head gives three tokens equal logits (the two
end tokens and `<tool_call>`) and every other token a much lower one. Each sampled token is then an
end token with probability about 2/3; a turn of bare `<tool_call>` tokens is a malformed call, which
the loop answers with an error tool turn, so episodes run several turns and end on either token.
"""

from __future__ import annotations

import pytest
import torch

from tests.vllm.helpers import close, load_policy, make_engine

from envsched_lightning.models import load_pretrained_qwen3
from envsched_lightning.models.checkpoint import REHEARSAL_TEMPLATE_KW
from envsched_lightning.rollout import SamplingConfig, run_agent_loop
from envsched_lightning.rollout.types import pack_sequences

END_TOKENS = ("<|im_end|>", "<|endoftext|>")


@pytest.fixture(scope="module")
def stuttering_checkpoint(checkpoint_dir, tmp_path_factory):
    model, tok = load_pretrained_qwen3(str(checkpoint_dir), dtype="float32", lora=None, gradient_checkpointing=False)
    favoured = [tok.convert_tokens_to_ids(t) for t in (*END_TOKENS, "<tool_call>")]
    with torch.no_grad():
        hidden = model.config.hidden_size
        model.model.embed_tokens.weight.fill_(1.0)  # RMS-normed to all ones at every position
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.lm_head.weight.zero_()
        model.lm_head.weight[favoured] = 12.0 / hidden  # logit 12 for the three, 0 for the rest
    out = tmp_path_factory.mktemp("stuttering-qwen3")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def stuttering_engine(stuttering_checkpoint, engine):
    close(engine)  # one in-process vLLM engine at a time
    eng = make_engine(stuttering_checkpoint, load_policy(stuttering_checkpoint))
    yield eng
    close(eng)


def test_turns_end_on_every_generation_config_end_token(stuttering_checkpoint, stuttering_engine, worlds):
    policy = load_policy(stuttering_checkpoint)
    tok = policy.tokenizer
    ends = {tok.convert_tokens_to_ids(t) for t in END_TOKENS}
    assert stuttering_engine.stops == ends
    stuttering_engine.sync_weights(policy.model)

    sampling = SamplingConfig(max_new_tokens=24, temperature=1.0, seed=0)
    outs = stuttering_engine.generate([[tok.convert_tokens_to_ids("<|im_start|>")]] * 32, sampling)
    assert all(o.token_ids[-1] in ends and not ends & set(o.token_ids[:-1]) for o in outs)
    assert {o.token_ids[-1] for o in outs} == ends  # both end tokens end turns

    env = worlds[0]
    batch = run_agent_loop(stuttering_engine, tok, [(t, env) for t in env.tasks()[:4]], 8, sampling,
                           max_seq_len=4096, chat_template_kwargs=REHEARSAL_TEMPLATE_KW)  # fmt: skip
    assert any(e.turns >= 2 for e in batch.episodes)
    seen_ends = set()
    for ep in batch.episodes:
        generated = [(i, t) for i, (t, m) in enumerate(zip(ep.token_ids, ep.loss_mask)) if m]
        runs = _runs(i for i, _ in generated)
        assert len(runs) == ep.turns
        for start, stop in runs:  # one run of trained tokens per model turn
            turn = ep.token_ids[start:stop]
            assert turn[-1] in ends and not ends & set(turn[:-1]), "a turn continues past its end token"
            seen_ends.add(turn[-1])
            if stop < len(ep.token_ids):  # what follows (a tool turn) is context, never trained on
                assert ep.loss_mask[stop] == 0
                if turn[-1] != tok.eos_token_id:  # ended on <|endoftext|>: the template's <|im_end|> follows
                    assert ep.token_ids[stop] == tok.eos_token_id
    assert seen_ends == ends
    seqs = pack_sequences(batch.episodes, tok.pad_token_id)
    assert int(seqs.loss_mask.sum()) == sum(e.gen_tokens for e in batch.episodes)


def _runs(positions) -> list[tuple[int, int]]:
    """Maximal [start, stop) runs of consecutive positions."""
    runs: list[list[int]] = []
    for p in positions:
        if runs and runs[-1][1] == p:
            runs[-1][1] = p + 1
        else:
            runs.append([p, p + 1])
    return [(a, b) for a, b in runs]
