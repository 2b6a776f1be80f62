"""Grouped-query attention without copying the keys and values, for CPU generation and training.

transformers' ``sdpa`` attention hands a padding mask to torch's SDPA only after expanding K and V from
their few key/value heads to every query head (`repeat_kv`), because CUDA's fast kernels refuse a mask
with grouped heads. On CPU torch's SDPA takes the mask and ``enable_gqa=True`` together, so the copy is
pure cost: with left-padded batches it is made for every layer at every decoding step, over the whole
cache (12% of SmolLM2-135M's rollout time on 2 cores, whose 9 query heads share 3 key/value heads).

``attn_implementation="sdpa_gqa"`` (`GQA_SDPA`) is transformers' sdpa with that copy skipped on CPU; on
any other device, or for a model without grouped heads, it is transformers' own sdpa unchanged. The
numbers are the same kernel's: a test checks the logits equal ``sdpa``'s on a left-padded batch.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

GQA_SDPA = "sdpa_gqa"


def gqa_sdpa_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """transformers' sdpa attention, but grouped K/V heads go to SDPA as they are on CPU.

    query [B, H, Q, D]; key, value [B, H_kv, K, D]; attention_mask a boolean or additive [B, 1, Q, K]
    mask (or None for plain causal attention). Returns ([B, Q, H, D], None) like the original."""
    groups = getattr(module, "num_key_value_groups", 1)
    plain = kwargs.get("position_bias") is None and kwargs.get("cache") is None and not kwargs.get("output_attentions")
    if query.device.type != "cpu" or groups == 1 or not plain:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)  # fmt: skip
    q_len = query.shape[2]
    causal = q_len > 1 and attention_mask is None and (is_causal if is_causal is not None else getattr(module, "is_causal", True))
    if causal and key.shape[2] > q_len:  # prefill into an empty static cache: only the first q_len keys are filled
        key, value = key[:, :, :q_len], value[:, :, :q_len]
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling, is_causal=bool(causal), enable_gqa=True
    )  # [B, H, Q, D]
    return out.transpose(1, 2).contiguous(), None


def register_gqa_sdpa() -> str:
    """Make ``attn_implementation="sdpa_gqa"`` known to transformers (idempotent); returns the name."""
    AttentionInterface.register(GQA_SDPA, gqa_sdpa_forward)
    AttentionMaskInterface.register(GQA_SDPA, sdpa_mask)  # the same masks as sdpa
    return GQA_SDPA
