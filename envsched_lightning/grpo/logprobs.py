"""Log-probabilities of generated tokens without ever materialising the full [N, L, vocab] logits.

A Qwen3-8B micro-batch of 4 x 8192 tokens would need 4 x 8192 x 151,936 fp32 logits (20 GB) for
the textbook ``log_softmax(model(x).logits)``. Only model-generated tokens carry loss, so the
policy's backbone runs once, and the LM head runs only at positions whose next token was generated
(``loss_mask == 1``), `chunk_size` positions at a time. With gradients on, each chunk is
checkpointed: backward recomputes its logits instead of keeping them, so peak logit memory is one
chunk, [chunk_size, vocab], whatever the sequence length.

Sampling divides logits by the temperature before softmax; the training side must do the same,
or the ratio pi / pi_old (and the importance weight against the sampler) is biased whenever T != 1.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint


def split_causal_lm(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module]:
    """(backbone, lm_head) of a transformers causal LM, LoRA-wrapped or not (peft injects in place)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder(), base.get_output_embeddings()


def _chunk_logprobs(head: torch.nn.Module, hidden: Tensor, targets: Tensor, temperature: float) -> Tensor:
    logits = head(hidden).float() / temperature  # [C, V]
    picked = logits.gather(-1, targets[:, None]).squeeze(-1)  # [C]
    return picked - torch.logsumexp(logits, dim=-1)  # [C]


def masked_token_logprobs(
    model: torch.nn.Module,
    tokens: Tensor,
    attention_mask: Tensor,
    loss_mask: Tensor,
    temperature: float = 1.0,
    chunk_size: int = 1024,
) -> Tensor:
    """Next-token log-probs [N, L-1] at positions where `loss_mask` [N, L-1] is 1; exactly 0 elsewhere.

    `tokens` and `attention_mask` are [N, L]. Values equal ``token_logprobs(model(tokens).logits / T,
    tokens)`` at the masked positions.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for log-probabilities, got {temperature}")
    backbone, head = split_causal_lm(model)
    hidden = backbone(input_ids=tokens, attention_mask=attention_mask, use_cache=False).last_hidden_state  # [N, L, H]
    rows, cols = loss_mask.nonzero(as_tuple=True)  # [M], [M] position t predicts token t+1
    picked_hidden = hidden[rows, cols]  # [M, H]
    targets = tokens[rows, cols + 1]  # [M]
    parts = []
    for h, t in zip(picked_hidden.split(chunk_size), targets.split(chunk_size)):
        if torch.is_grad_enabled():
            parts.append(checkpoint(_chunk_logprobs, head, h, t, temperature, use_reentrant=False))  # [C]
        else:
            parts.append(_chunk_logprobs(head, h, t, temperature))  # [C]
    out = hidden.new_zeros(loss_mask.shape, dtype=torch.float32)  # [N, L-1]
    if parts:
        return out.index_put((rows, cols), torch.cat(parts))  # [N, L-1], differentiable
    return out + 0.0 * hidden.sum() if torch.is_grad_enabled() else out  # nothing generated: still in the graph
