"""`GRPOModule` with real parts: tiny Qwen3, offline tokenizer, the banking world, a Lightning Trainer."""

from __future__ import annotations

from functools import partial

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from envsched_lightning.envs import make_env
from envsched_lightning.grpo import grpo_loss, token_logprobs
from envsched_lightning.models import build_tiny_qwen3, tiny_qwen3_policy
from envsched_lightning.module import GRPOModule, TaskBatch
from envsched_lightning.rollout import oracle_rollouts, pack_sequences
from envsched_lightning.scheduling import RolloutGroup


@pytest.fixture(scope="module")
def banking():
    return make_env("banking", num_tasks=12, seed=0)


class RecordingData(L.LightningDataModule):
    """The DataModule side of the contract: batches of (index, task, env), `report`, `warm_start_items`."""

    def __init__(self, env, steps: int = 2, batch_size: int = 2):
        super().__init__()
        self.env, self.steps, self.batch_size = env, steps, batch_size
        self.reports: list[list[RolloutGroup]] = []

    def train_dataloader(self):
        tasks = self.env.tasks()
        items = [(i, tasks[i], self.env) for i in range(self.steps * self.batch_size)]
        return DataLoader(items, batch_size=self.batch_size, collate_fn=TaskBatch.collate)

    def val_dataloader(self):
        tasks = self.env.tasks()
        return DataLoader([(i, tasks[i], self.env) for i in (10, 11)], batch_size=2, collate_fn=TaskBatch.collate)

    def report(self, groups):
        self.reports.append(list(groups))

    def warm_start_items(self):
        return [(t, self.env) for t in self.env.tasks()]


def trainer(**kw) -> L.Trainer:
    opts = dict(max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
                enable_model_summary=False, num_sanity_val_steps=0)  # fmt: skip
    return L.Trainer(**(opts | kw))


def module(env, **kw) -> GRPOModule:
    opts = dict(sampling=dict(max_new_tokens=16), grpo=dict(group_size=3, max_seq_len=384),
                optimizer=partial(torch.optim.AdamW, lr=1e-3))  # fmt: skip
    return GRPOModule(tiny_qwen3_policy(envs=[env], seed=0), **(opts | kw))


def test_training_step_reports_groups_once_and_logs_every_metric(banking):
    data = RecordingData(banking, steps=2)
    m = module(banking, warm_start=dict(steps=5, batch_size=4))
    t = trainer(limit_val_batches=1)
    t.fit(m, datamodule=data)
    assert m.warm_started
    assert [[g.index for g in step] for step in data.reports] == [[0, 1], [2, 3]]  # exactly once per step
    assert data.reports[-1] == m.last_groups
    for g in m.last_groups:
        assert len(g.rewards) == 3 and len(g.lengths) == 3 and all(1 <= n <= 5 for n in g.lengths)
    logged = set(t.logged_metrics)
    for name in ("rollout/reward_mean", "rollout/reward_mean/banking", "rollout/zero_var_frac",
                 "rollout/num_rollouts", "rollout/tokens", "rollout/turns", "rollout/parse_error_rate",
                 "rollout/gen_tokens_per_s", "train/skipped", "eval/score", "eval/score/banking"):  # fmt: skip
        assert name in logged, name
    assert t.logged_metrics["rollout/num_rollouts"] == 6
    if not t.logged_metrics["train/skipped"]:
        for name in ("train/loss", "train/pg_loss", "train/kl", "train/clip_frac", "train/grad_norm",
                     "train/approx_kl", "train/train_tokens_per_s"):  # fmt: skip
            assert name in logged, name


def test_zero_variance_groups_are_counted_and_skip_the_update(banking):
    # greedy sampling makes the G rollouts of a task identical: every group has zero variance
    m = module(banking, sampling=dict(max_new_tokens=8, temperature=0.0))
    before = [p.detach().clone() for p in m.parameters()]
    t = trainer()
    t.fit(m, datamodule=RecordingData(banking, steps=1))
    out = t.logged_metrics
    assert out["rollout/zero_var_frac"] == 1.0 and out["train/skipped"] == 1.0 and "train/loss" not in out
    assert all(torch.equal(a, b) for a, b in zip(before, m.parameters()))
    assert len(m.last_groups) == 2 and all(not g.informative for g in m.last_groups)


def test_lora_reference_kl_is_exactly_zero_at_step_zero(banking):
    lora = dict(r=4, alpha=8, dropout=0.1, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    policy = tiny_qwen3_policy(envs=[banking], seed=0, lora=lora)
    m = GRPOModule(policy, grpo=dict(group_size=2, kl_coef=0.1))
    n_params = sum(p.numel() for p in m.parameters())
    assert n_params == sum(p.numel() for p in policy.model.parameters())  # no second copy of the weights
    episodes = oracle_rollouts(policy.tokenizer, [(t, banking) for t in banking.tasks()[:4]]).episodes
    seqs = pack_sequences(episodes, policy.tokenizer.pad_token_id)
    m.train()  # LoRA dropout is on in training mode: the ref pass must still match exactly
    with torch.no_grad():
        ref = m._ref_logprobs(seqs)  # [N, L-1]
    logprobs = m._logprobs(seqs)  # [N, L-1] with grad, train mode
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5])  # [N]
    out = grpo_loss(logprobs, logprobs.detach(), adv, seqs.loss_mask, ref, kl_coef=0.1)
    assert out.kl.item() == 0.0 and torch.equal(logprobs.detach(), ref)

    tok = policy.tokenizer
    base = build_tiny_qwen3(vocab_size=len(tok), seed=0, pad_token_id=tok.pad_token_id).eval()  # the same base, rebuilt
    with torch.no_grad():
        lora_b = next(p for n, p in policy.model.named_parameters() if "lora_B" in n)
        lora_b.add_(0.5)  # the adapter moves, as after an update
        moved = m._logprobs(seqs)
        ref_after = m._ref_logprobs(seqs)
        base_logits = base(input_ids=seqs.tokens, attention_mask=seqs.attention_mask).logits
    assert torch.equal(ref_after, ref)  # the reference is the frozen base, untouched by the adapter
    assert not torch.allclose(moved, ref)
    generated = seqs.loss_mask.bool()  # [N, L-1] log-probs are computed where tokens were generated only
    torch.testing.assert_close(ref[generated], token_logprobs(base_logits, seqs.tokens)[generated])  # the base model
    assert not ref[~generated].any()


def test_kl_without_lora_is_refused(banking):
    with pytest.raises(ValueError, match="LoRA"):
        module(banking, grpo=dict(group_size=2, kl_coef=0.1))


def test_warm_start_without_the_datamodule_hook_fails_clearly(banking):
    class NoHook(RecordingData):
        warm_start_items = None

    m = module(banking, warm_start=dict(steps=2))
    with pytest.raises(ValueError, match="warm_start_items"):
        trainer().fit(m, datamodule=NoHook(banking, steps=1))


@pytest.mark.parametrize("agg", ["token_mean", "seq_mean", "dr_grpo"])
def test_micro_batched_backward_equals_the_full_batch_gradient(banking, agg, monkeypatch):
    m = module(banking, grpo=dict(group_size=2, micro_batch_size=3, loss_agg=agg, max_tokens=64))
    monkeypatch.setattr(m, "manual_backward", lambda loss: loss.backward())  # no Trainer attached here
    episodes = oracle_rollouts(m.tokenizer, [(t, banking) for t in banking.tasks()[:7]]).episodes
    seqs = pack_sequences(episodes, m.tokenizer.pad_token_id)
    adv = torch.linspace(-1.0, 1.0, len(episodes))  # [N]
    with torch.no_grad():
        old = m._logprobs(seqs) - 0.05  # [N, L-1] a slightly different sampling policy: ratios != 1
    rows = torch.arange(len(episodes))
    m._accumulate(seqs, rows, old, None, adv)
    micro = [p.grad.clone() for p in m._trainable()]
    m.zero_grad()
    full = grpo_loss(m._logprobs(seqs), old, adv, seqs.loss_mask, loss_agg=agg, max_tokens=64).loss
    full.backward()
    for a, p in zip(micro, m._trainable()):
        torch.testing.assert_close(a, p.grad, atol=1e-6, rtol=1e-4)


def test_lora_checkpoints_hold_the_adapter_only(banking):
    lora = dict(r=4, alpha=8, target_modules=["q_proj", "v_proj"])
    m = GRPOModule(tiny_qwen3_policy(envs=[banking], seed=0, lora=lora), grpo=dict(group_size=2))
    checkpoint = {"state_dict": m.state_dict()}
    m.on_save_checkpoint(checkpoint)
    assert checkpoint["state_dict"] and all("lora_" in k for k in checkpoint["state_dict"])
    fresh = GRPOModule(tiny_qwen3_policy(envs=[banking], seed=1, lora=lora), grpo=dict(group_size=2))
    assert not fresh.strict_loading
    fresh.load_state_dict(checkpoint["state_dict"], strict=False)
    a = dict(m.model.named_parameters())
    assert all(torch.equal(p, a[n]) for n, p in fresh.model.named_parameters() if "lora_" in n)


def test_hf_engine_generates_with_a_lora_model(banking):
    from envsched_lightning.rollout import HFEngine, SamplingConfig

    model, tok = tiny_qwen3_policy(envs=[banking], seed=0, lora=dict(r=4, alpha=8, target_modules=["q_proj"]))
    (c,) = HFEngine(model, tok).generate([tok.encode("<|im_start|>assistant\n")], SamplingConfig(max_new_tokens=4))
    assert 1 <= len(c.token_ids) <= 4


def test_reused_sampling_logprobs_are_the_recomputed_old_policy(banking):
    """`reuse_sampling_logprobs` skips a forward pass only where it changes nothing: the HF engine's
    reported log-probs equal the training model's own at the sampling temperature."""
    from envsched_lightning.rollout import HFEngine, SamplingConfig, run_agent_loop

    m = module(banking, engine=HFEngine, sampling=dict(max_new_tokens=16, temperature=0.8),
               grpo=dict(group_size=3, max_seq_len=384, reuse_sampling_logprobs=True))  # fmt: skip
    torch.manual_seed(0)
    batch = run_agent_loop(m.engine, m.tokenizer, [(t, banking) for t in banking.tasks()[:2]], 3, m.sampling,
                           **m.loop_kwargs).episodes  # fmt: skip
    seqs = pack_sequences(batch, m.tokenizer.pad_token_id)
    with torch.no_grad():
        recomputed = m._logprobs(seqs)  # [N, L-1]
    assert seqs.sample_logprobs is not None and seqs.loss_mask.sum() > 0
    torch.testing.assert_close(seqs.sample_logprobs * seqs.loss_mask, recomputed, atol=2e-4, rtol=0)


def test_reusing_sampling_logprobs_where_they_are_not_exact_is_refused(banking):
    from envsched_lightning.rollout import VLLMEngine

    with pytest.raises(ValueError, match="truncated distribution"):
        module(banking, sampling=dict(max_new_tokens=16, top_p=0.9), grpo=dict(group_size=3, reuse_sampling_logprobs=True))
    vllm = partial(VLLMEngine, model_path="unused")  # never started: the check comes first
    with pytest.raises(ValueError, match="VLLMEngine samples from its own weights"):
        module(banking, engine=vllm, grpo=dict(group_size=3, reuse_sampling_logprobs=True))
