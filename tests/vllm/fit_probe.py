"""A real Lightning fit of `GRPOModule` on the real `VLLMEngine`, through `AgreementProbe`, which compares
every sampled turn's vLLM log-probs with the training model's at that moment: shared by the adapter
and full-weight sync tests."""

from __future__ import annotations

import random
from functools import partial

import lightning as L
import torch
from torch.utils.data import DataLoader, IterableDataset

from tests.vllm.helpers import load_policy, logprob_gap

from envsched_lightning.models.checkpoint import REHEARSAL_TEMPLATE_KW
from envsched_lightning.module import GRPOModule, TaskBatch
from envsched_lightning.rollout.types import Sequences

BATCH, GROUP = 2, 2


class AgreementProbe:
    """The real engine plus, per sampled `generate`, the max |vLLM - training model| log-prob gap."""

    def __init__(self, engine, model, base=None) -> None:
        """`base`: the base model to tell apart (None: `model` with its adapter disabled)."""
        self.engine, self.model, self.base, self.gaps, self.base_gaps = engine, model, base, [], []

    def sync_weights(self, module) -> None:
        self.engine.sync_weights(module)

    def generate(self, prompts, sampling):
        out = self.engine.generate(prompts, sampling)
        if sampling.temperature > 0:
            seqs = completion_sequences(prompts, out)
            self.gaps.append(logprob_gap(self.model, seqs, sampling.temperature).max().item())
            if self.base is not None:
                self.base_gaps.append(logprob_gap(self.base, seqs, sampling.temperature).max().item())
            else:
                with self.model.disable_adapter():
                    self.base_gaps.append(logprob_gap(self.model, seqs, sampling.temperature).max().item())
        return out


def completion_sequences(prompts, completions) -> Sequences:
    """Prompt + completion rows, loss mask and vLLM log-probs on the completion tokens."""
    width = max(len(p) + len(c.token_ids) for p, c in zip(prompts, completions))
    n = len(prompts)
    tokens, attn = torch.zeros(n, width, dtype=torch.long), torch.zeros(n, width, dtype=torch.long)
    mask, lps = torch.zeros(n, width), torch.zeros(n, width)
    for i, (p, c) in enumerate(zip(prompts, completions)):
        row = list(p) + list(c.token_ids)
        tokens[i, : len(row)] = torch.tensor(row)
        attn[i, : len(row)] = 1
        mask[i, len(p) : len(row)] = 1
        lps[i, len(p) : len(row)] = torch.tensor(c.logprobs)
    return Sequences(tokens, attn, mask[:, 1:], lps[:, 1:])


class Batches(IterableDataset):
    def __init__(self, items, steps: int) -> None:
        self.items, self.steps = items, steps

    def __iter__(self):
        rng = random.Random(0)
        for _ in range(self.steps):
            idx = rng.sample(range(len(self.items)), BATCH)
            yield TaskBatch(idx, [self.items[i][0] for i in idx], [self.items[i][1] for i in idx])


class Data(L.LightningDataModule):
    def __init__(self, items, steps: int) -> None:
        super().__init__()
        self.items, self.steps = items, steps

    def train_dataloader(self):
        return DataLoader(Batches(self.items, self.steps), batch_size=None)

    def report(self, groups) -> None:
        pass

    def warm_start_items(self):
        return self.items


def fit(engine, policy, items, steps: int, tmp_path, warm_steps: int = 0, ckpt_path=None) -> AgreementProbe:
    """A real fit; the engine first serves the base weights, as in a new process, until the module syncs."""
    base = load_policy(engine.llm_args["model"], full=not engine.peft).model  # LoRA: a zero adapter
    engine.sync_weights(base)
    probe = AgreementProbe(engine, policy.model, base=None if engine.peft else base)
    module = GRPOModule(policy, engine=lambda _model, _tok: probe, optimizer=partial(torch.optim.AdamW, lr=5e-2),
                        sampling=dict(max_new_tokens=48, seed=0), grpo=dict(group_size=GROUP, max_seq_len=2048),
                        warm_start=dict(steps=warm_steps, lr=2e-2, batch_size=8),
                        chat_template_kwargs=REHEARSAL_TEMPLATE_KW)  # fmt: skip
    trainer = L.Trainer(max_steps=steps, accelerator="cpu", logger=False, enable_progress_bar=False,
                        enable_model_summary=False, default_root_dir=tmp_path, num_sanity_val_steps=0)  # fmt: skip
    trainer.fit(module, datamodule=Data(items, steps), ckpt_path=ckpt_path)
    probe.trainer = trainer
    return probe


def items_of(worlds):
    return [(task, env) for env in worlds for task in env.tasks()[:4]]
