"""The first rollout of a fit samples the current adapter, never the base model: at a fresh start with
a loaded adapter, after a `ckpt_path` resume and after the SFT warm start, with the adapter handed over in
memory and through a folder (test_full_weights.py: the same for a model trained without LoRA).

A real Lightning Trainer runs `GRPOModule` with the real `VLLMEngine`. `AgreementProbe` passes every
call through to that engine and, for each sampled turn, compares vLLM's log-probs with the training
model's at that moment (the model the turn should have come from).
"""

from __future__ import annotations

import random
from functools import partial

import lightning as L
import torch
from torch.utils.data import DataLoader, IterableDataset

from tests_vllm.helpers import TOL, load_policy, logprob_gap

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


def test_first_rollout_at_start_samples_the_loaded_adapter(synced_engine, checkpoint_dir, worlds, tmp_path):
    engine = synced_engine
    policy = load_policy(checkpoint_dir, adapter_scale=0.05, seed=1)  # as loaded from an adapter on disk
    probe = fit(engine, policy, items_of(worlds), 1, tmp_path)
    print(f"first rollout: gap to the model {probe.gaps[0]:.2e}, to the base {probe.base_gaps[0]:.2e}")
    assert probe.gaps[0] < TOL < 10 * TOL < probe.base_gaps[0]


def test_first_rollout_after_resume_samples_the_restored_adapter(synced_engine, checkpoint_dir, worlds, tmp_path):
    engine = synced_engine
    items = items_of(worlds)
    first = fit(engine, load_policy(checkpoint_dir, adapter_scale=0.05, seed=2), items, 1, tmp_path / "a")
    ckpt = tmp_path / "step1.ckpt"
    first.trainer.save_checkpoint(ckpt)

    fresh = load_policy(checkpoint_dir)  # a new process: zero adapter until the checkpoint loads
    probe = fit(engine, fresh, items, 2, tmp_path / "b", ckpt_path=str(ckpt))
    print(f"first rollout after resume: gap {probe.gaps[0]:.2e}, to the base {probe.base_gaps[0]:.2e}")
    assert probe.gaps[0] < TOL < 10 * TOL < probe.base_gaps[0]


def test_first_rollout_after_the_warm_start_samples_the_warm_adapter(synced_engine, checkpoint_dir, worlds, tmp_path):
    engine = synced_engine
    policy = load_policy(checkpoint_dir)  # zero adapter: the warm start alone moves it
    probe = fit(engine, policy, items_of(worlds), 1, tmp_path, warm_steps=15)
    print(f"first rollout after warm start: gap {probe.gaps[0]:.2e}, to the base {probe.base_gaps[0]:.2e}")
    assert probe.gaps[0] < TOL < 10 * TOL < probe.base_gaps[0]
