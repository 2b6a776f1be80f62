"""Rollouts with transformers' `generate` on the training model itself (CPU default, works on GPU).

Sharing the model means `sync_weights` has nothing to do and sampling always uses the current
weights. Prompts are left-padded so every row's new tokens start at the same column.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import DynamicCache, PreTrainedTokenizerBase, StaticCache
from transformers.cache_utils import Cache

from .engine import Completion, SamplingConfig


def stop_token_ids(tokenizer: PreTrainedTokenizerBase, model: torch.nn.Module | None = None) -> set[int]:
    """Ids that end an assistant turn: the tokenizer's EOS plus the model's generation EOS ids."""
    ids = {tokenizer.eos_token_id}
    gen = getattr(model, "generation_config", None)
    extra = getattr(gen, "eos_token_id", None)
    ids.update(extra if isinstance(extra, list) else [extra])
    return {int(i) for i in ids if i is not None}


def make_completion(tokenizer: PreTrainedTokenizerBase, ids: list[int], stops: set[int], logprobs=None) -> Completion:
    """Cut `ids` after the first stop token (kept: the model must learn to stop) and decode the rest."""
    for pos, tok in enumerate(ids):
        if tok in stops:
            ids = ids[: pos + 1]
            break
    body = ids[:-1] if ids and ids[-1] in stops else ids
    lp = None if logprobs is None else list(logprobs[: len(ids)])
    return Completion(ids, tokenizer.decode(body, skip_special_tokens=False), lp)


class HFEngine:
    """`RolloutEngine` over `model.generate`; `micro_batch` bounds memory for large G * B.

    `return_logprobs` keeps each step's processed logits to report sampling log-probabilities
    (after temperature / top-k / top-p); it costs [n, L, V] memory, so it is off by default: the
    trainer recomputes log-probabilities with the training forward pass anyway.
    `cache="static"` preallocates each call's key/value cache (prompt width + max_new_tokens) instead of
    growing it by concatenation at every step: the same tokens, about a quarter less time on CPU.
    `share_prefill` runs the forward pass over a prompt once however many rows repeat it (a GRPO
    group's first turn is G copies of one prompt) and copies its key/value cache to every copy.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: PreTrainedTokenizerBase,
        micro_batch: int = 64,
        return_logprobs: bool = False,
        cache: str = "dynamic",
        share_prefill: bool = True,
    ) -> None:
        if tokenizer.pad_token_id is None:
            raise ValueError("HFEngine needs a tokenizer with a pad token")
        if cache not in ("dynamic", "static"):
            raise ValueError(f"rollout.cache={cache!r}: expected 'dynamic' or 'static'")
        self.cache = cache
        self.share_prefill = share_prefill
        self.model = model
        self.tokenizer = tokenizer
        self.micro_batch = micro_batch
        self.return_logprobs = return_logprobs
        self._calls = 0  # generate calls so far: offsets a set seed so successive turns draw differently

    def sync_weights(self, module: torch.nn.Module) -> None:
        """Nothing to copy: generation runs on the training model."""

    def exact_logprobs(self, sampling: SamplingConfig) -> str | None:
        """Why the reported log-probs are not the training model's own at the sampling temperature, or
        None when they are (same model and weights, eval mode, no top-p / top-k truncation)."""
        if not self.return_logprobs:
            return "the engine does not report log-probs (rollout.return_logprobs=false)"
        if sampling.temperature <= 0 or sampling.top_p < 1.0 or sampling.top_k:
            return "greedy, top-p or top-k sampling reports a truncated distribution"
        dtype = next(self.model.parameters()).dtype
        if dtype in (torch.bfloat16, torch.float16):
            return (f"{dtype} weights: cached decoding and the training forward pass round differently (SmolLM2-135M: "
                    "measured in docs/results.md); recompute pi_old")  # fmt: skip
        return None

    @torch.no_grad()
    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingConfig) -> list[Completion]:
        was_training = self.model.training
        self.model.eval()  # no dropout while sampling
        try:
            out: list[Completion] = []
            for start in range(0, len(prompts), self.micro_batch):
                out += self._generate(prompts[start : start + self.micro_batch], sampling)
            return out
        finally:
            self.model.train(was_training)

    def _generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingConfig) -> list[Completion]:
        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.full((len(prompts), width), pad, dtype=torch.long)  # [n, P]
        attention = torch.zeros((len(prompts), width), dtype=torch.long)  # [n, P]
        for row, p in enumerate(prompts):
            input_ids[row, width - len(p) :] = torch.tensor(list(p), dtype=torch.long)
            attention[row, width - len(p) :] = 1
        greedy = sampling.temperature <= 0.0
        stops = stop_token_ids(self.tokenizer, self.model)
        kwargs = dict(do_sample=False) if greedy else dict(
            do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k
        )
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed + self._calls)
        self._calls += 1
        input_ids, attention = input_ids.to(device), attention.to(device)
        past = self._shared_prefill(input_ids, attention, width + sampling.max_new_tokens) if self.share_prefill else None
        gen = self.model.generate(
            input_ids=input_ids,
            attention_mask=attention,
            max_new_tokens=sampling.max_new_tokens,
            eos_token_id=sorted(stops),
            pad_token_id=pad,
            output_scores=self.return_logprobs,
            return_dict_in_generate=True,
            use_cache=True,
            past_key_values=past,
            cache_implementation=None if self.cache == "dynamic" or past is not None else self.cache,
            **kwargs,
        )
        new = gen.sequences[:, width:].cpu()  # [n, L]
        logprobs: list[list[float] | None] = [None] * len(prompts)
        if self.return_logprobs:
            scores = torch.stack(gen.scores, dim=1).float().cpu()  # [n, L, V] processed logits of each step
            picked = scores.log_softmax(-1).gather(-1, new[..., None]).squeeze(-1)  # [n, L]
            logprobs = picked.tolist()
        return [make_completion(self.tokenizer, new[r].tolist(), stops, logprobs[r]) for r in range(len(prompts))]

    def _shared_prefill(self, input_ids: torch.Tensor, attention: torch.Tensor, max_len: int) -> Cache | None:
        """The key/value cache of every row's prompt but its last token, computed once per distinct prompt
        and copied to the rows that repeat it; None when no prompt repeats (`generate` prefills as usual).

        input_ids, attention: [n, P] left-padded. The positions are `generate`'s own (count of real
        tokens so far), so the rows continue exactly as if `generate` had prefilled them."""
        n, width = input_ids.shape
        first: dict[tuple[int, ...], int] = {}  # distinct prompt -> the first row holding it
        for r, row in enumerate(input_ids.tolist()):
            first.setdefault(tuple(row), r)
        if len(first) == n or width < 2:
            return None
        slot_of = {row: s for s, row in enumerate(first.values())}  # first row -> its distinct prompt's slot
        slot = [slot_of[first[tuple(row)]] for row in input_ids.tolist()]  # row -> slot
        rows = torch.tensor(list(first.values()), device=input_ids.device)
        ids, mask = input_ids[rows, :-1], attention[rows, :-1]  # [U, P-1]
        positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)  # [U, P-1]
        config = self.model.config
        past = DynamicCache(config=config) if self.cache == "dynamic" else StaticCache(config=config, max_cache_len=max_len)
        # only the cache is wanted: one position's logits, not [U, P-1, vocab] (a 49k vocabulary over 8 x 1,000
        # prompt tokens is 1.5 GB and a third of the prefill's arithmetic)
        self.model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=past, use_cache=True,
                   logits_to_keep=1)  # fmt: skip
        past.reorder_cache(torch.tensor(slot, device=input_ids.device))  # [U, ...] -> [n, ...]
        return past
