"""`GRPOModule`: GRPO over multi-turn tool-use episodes, as a LightningModule with manual optimisation.

One training step takes a `TaskBatch` of B scheduled tasks, runs G rollouts of each through the
agent loop, scores them with group-relative advantages, drops the zero-variance groups (they carry
no gradient), and runs ``ppo_epochs x num_mini_batches`` clipped-surrogate updates on the rest.
With `grpo.dynamic_sampling` = R > 0 (DAPO's dynamic sampling) up to R refill rounds first replace
the zero-variance groups with fresh tasks from the scheduler (``trainer.datamodule.refill(n)``,
reported like the first round) and the step trains on at most B informative groups.

Hand-off to the scheduler (the DataModule's side): after the rollouts, the step builds one
`RolloutGroup(index, rewards, lengths=turns, tokens=episode tokens)` per scheduled task, stores the list in
`self.last_groups`, calls ``trainer.datamodule.report(groups)`` once if the DataModule has a
`report` method, and returns ``{"groups": groups}`` as the step output (callbacks see it in
`on_train_batch_end`). The optional SFT warm start reads ``trainer.datamodule.warm_start_items()``.

Long work reports itself: before each turn's generation (training rollouts and evaluation), and after
each warm-start step, every callable in `work_hooks` gets a `WorkProgress` (the console prints a
heartbeat from it). A hook may raise there (`StopRequested`) to abandon the work, and while
`droppable` is true (a training step before its first optimiser step, an evaluation, the warm start)
a stop may raise anywhere: an abandoned step has changed no weight and no optimiser state, and the
DataModule's `abandon_step` takes back what the scheduler heard of it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from lightning.pytorch import LightningModule
from lightning.pytorch.loggers import CSVLogger
from torch import Tensor
from torch.nn.parallel import DistributedDataParallel

from envsched_lightning.distributed import gather_lists
from envsched_lightning.envs.base import Environment, Task
from envsched_lightning.envs.time_limit import DEFAULT_TOOL_TIME_LIMIT
from envsched_lightning.eval_log import append_eval, grpo_step, scores_every_task
from envsched_lightning.evaluation import aggregate, greedy_rollouts
from envsched_lightning.grpo import (
    GRPOConfig,
    GRPOLossOutput,
    WarmStartConfig,
    average_gradients,
    global_loss_counts,
    group_advantages,
    grpo_loss,
    masked_token_logprobs,
    sft_loss,
    truncated_importance_weights,
)
from envsched_lightning.grpo.config import coerce
from envsched_lightning.models import Policy
from envsched_lightning.rollout import (
    INVALID_REWARD,
    PROMPT_TOO_LONG,
    ChatRenderer,
    EpisodeRecord,
    HFEngine,
    RolloutBatch,
    RolloutEngine,
    SamplingConfig,
    Sequences,
    default_oracle,
    engine_awake,
    oracle_rollouts,
    pack_sequences,
    run_agent_loop,
)
from envsched_lightning.scheduling import RolloutGroup
from envsched_lightning.stopping import WorkProgress

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class TaskBatch:
    """B scheduled tasks of one step; `indices[i]` is the scheduler's index of `tasks[i]`, run in `envs[i]`."""

    indices: list[int]
    tasks: list[Task]
    envs: list[Environment]

    @classmethod
    def collate(cls, items: Sequence[tuple[int, Task, Environment]]) -> TaskBatch:
        """`collate_fn` for a DataLoader over (index, task, env) items."""
        return cls([int(i) for i, _, _ in items], [t for _, t, _ in items], [e for _, _, e in items])

    def pairs(self) -> list[tuple[Task, Environment]]:
        return list(zip(self.tasks, self.envs))

    def __len__(self) -> int:
        return len(self.indices)


def rollout_groups(indices: Sequence[int], rollouts: RolloutBatch) -> list[RolloutGroup]:
    """One `RolloutGroup` per scheduled task, with per-rollout turn counts as `lengths` and each
    episode's whole sequence length (prompt, model turns, tool outputs) as `tokens`."""
    g = rollouts.group_size
    groups = []
    for b, idx in enumerate(indices):
        eps = rollouts.episodes[b * g : (b + 1) * g]
        groups.append(RolloutGroup(int(idx), tuple(e.reward for e in eps), tuple(float(e.turns) for e in eps),
                                   tuple(float(len(e.token_ids)) for e in eps)))  # fmt: skip
    return groups


def combine_micro_batches(parts: list[GRPOLossOutput], shares: Tensor) -> GRPOLossOutput:
    """Losses add up (micro-batches share the mini-batch normaliser); diagnostics are share-weighted means."""
    fields = []
    for name in GRPOLossOutput._fields:
        values = torch.stack([getattr(p, name).detach().float().cpu() for p in parts])  # [M]
        fields.append(values.sum() if name in ("loss", "pg_loss") else (values * shares).sum())
    return GRPOLossOutput(*fields)


def _has_oracle(task: Task, env: Environment) -> bool:
    try:
        return bool(default_oracle(task, env))
    except ValueError:  # a task without a scripted ground truth
        return False


def check_options(sampling: SamplingConfig | Mapping[str, Any] | None, grpo: GRPOConfig | Mapping[str, Any] | None,
                  warm_start: WarmStartConfig | Mapping[str, Any] | None,
                  prefix: str = "model") -> tuple[SamplingConfig, GRPOConfig, WarmStartConfig]:  # fmt: skip
    """The module's option records, checked alone and together, with the config key in any error
    (``model.sampling: ...``). train.py calls it before any model loads; the module builds from it."""
    checked = {}
    for key, cls, value in (("sampling", SamplingConfig, sampling), ("grpo", GRPOConfig, grpo),
                            ("warm_start", WarmStartConfig, warm_start)):  # fmt: skip
        try:
            checked[key] = cls.coerce(value) if cls is SamplingConfig else coerce(cls, value)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{prefix}.{key}: {err}") from None
    max_seq_len, new_tokens = checked["grpo"].max_seq_len, checked["sampling"].max_new_tokens
    if max_seq_len <= new_tokens:
        raise ValueError(f"{prefix}.grpo.max_seq_len ({max_seq_len}) must exceed {prefix}.sampling.max_new_tokens "
                         f"({new_tokens}): no prompt would fit")  # fmt: skip
    return checked["sampling"], checked["grpo"], checked["warm_start"]


class GRPOModule(LightningModule):
    """GRPO trainer for a (LoRA-wrapped) causal LM; see the module docstring for the DataModule contract."""

    def __init__(
        self,
        policy: Policy,
        engine: Callable[..., RolloutEngine] | None = None,
        optimizer: Callable[[Iterable[torch.nn.Parameter]], torch.optim.Optimizer] | None = None,
        sampling: SamplingConfig | Mapping[str, Any] | None = None,
        grpo: GRPOConfig | Mapping[str, Any] | None = None,
        warm_start: WarmStartConfig | Mapping[str, Any] | None = None,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        tool_format: str = "auto",
        tool_schemas: str = "json",
        tool_time_limit: float | None = DEFAULT_TOOL_TIME_LIMIT,
    ) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.model, self.tokenizer = policy
        self.sampling, self.grpo, self.warm = check_options(sampling, grpo, warm_start)
        if self.grpo.kl_coef > 0 and not hasattr(self.model, "disable_adapter"):
            raise ValueError("kl_coef > 0 needs a LoRA model: its reference policy is the base with adapters off")
        self.engine: RolloutEngine = (engine or HFEngine)(self.model, self.tokenizer)
        if self.grpo.reuse_sampling_logprobs:
            if hasattr(self.engine, "return_logprobs"):
                self.engine.return_logprobs = True  # the sampler must report what it drew with
            exact = getattr(self.engine, "exact_logprobs", None)
            why = exact(self.sampling) if callable(exact) else f"{type(self.engine).__name__} samples from its own weights"
            if why:
                raise ValueError(f"model.grpo.reuse_sampling_logprobs: the sampler's log-probs are not pi_old here: {why}")
        self.optimizer_factory = optimizer or partial(torch.optim.AdamW, lr=1e-5)
        config = getattr(self.model, "config", None)
        positions = getattr(config, "max_position_embeddings", None) or self.grpo.max_seq_len
        self.loop_kwargs = dict(
            max_seq_len=min(self.grpo.max_seq_len, positions),  # never sample past the model's positions
            chat_template_kwargs=dict(chat_template_kwargs or {}),
            tool_format=tool_format,
            tool_schemas=tool_schemas,
            tool_time_limit=tool_time_limit,  # seconds per tool call; past it the call gets an error result
        )
        # how the template carries tools (`rollout.chat`), resolved once here so a bad choice fails
        # before any rollout and the progress line can say which was taken
        self.tool_protocol = ChatRenderer.for_loop(self.tokenizer, self.loop_kwargs).protocol
        self._lora = hasattr(self.model, "peft_config")
        self.strict_loading = not self._lora  # LoRA checkpoints hold the adapter, not the frozen base
        self.last_groups: list[RolloutGroup] = []
        self.warm_started = False
        self.warm_losses: list[float] = []  # SFT loss per warm-start step, when this process ran it
        self._eval_rewards: list[tuple[str, float, str]] = []  # (env, reward, task key) per held-out task this validation
        self.last_eval: dict[str, float] = {}  # task key -> reward, of the latest validation
        self.work_hooks: list[Callable[[WorkProgress], None]] = []  # see the module docstring
        self.droppable = False  # the work in progress may be abandoned anywhere (see the module docstring)

    @contextlib.contextmanager
    def _may_drop(self) -> Iterator[None]:
        self.droppable = True
        try:
            yield
        finally:
            self.droppable = False

    def _work_point(self, phase: str, done: int, total: int, detail: str = "") -> None:
        """Long work reports progress here; only here may a hook raise to abandon it (see the module docstring)."""
        progress = WorkProgress(phase, done, total, detail)
        for hook in self.work_hooks:
            hook(progress)

    # ------------------------------------------------------------------ training
    def training_step(self, batch: TaskBatch, batch_idx: int = 0) -> dict[str, Any]:
        with self._may_drop():  # until `_optimise` takes the first optimiser step
            t0 = time.perf_counter()
            rollouts = self._rollouts(batch, self.grpo.group_size, self.sampling)  # [B * G] episodes
            groups = rollout_groups(batch.indices, rollouts)
            self._report(groups)  # the scheduler hears about each round exactly once, before any update
            rollouts, groups, rounds = self._dynamic_sampling(len(batch), rollouts, groups)  # [B' * G], B' >= B
            gen_s = time.perf_counter() - t0
            self.last_groups = groups
            adv = group_advantages(rollouts.rewards(), self.grpo.scale_rewards)  # [B', G] advantages, [B'] zero_var
            keep = (~adv.zero_var).nonzero().flatten().tolist()  # informative groups; the rest carry no gradient
            if rounds:
                keep = keep[: len(batch)]  # DAPO trains on a batch of B informative groups, never more
            t1 = time.perf_counter()
            stepped = self._any_rank(bool(keep))  # under DDP a rank with nothing to learn still joins the step
            stats = self._optimise(rollouts.select(keep), adv.advantages[keep].flatten()) if stepped else {}
            train_s = time.perf_counter() - t1
        if stepped:
            self.engine.sync_weights(self.model)  # the next rollouts sample from the updated policy
        self._log_step(rollouts, adv.zero_var, stats, gen_s, train_s, kept=len(keep), rounds=rounds)
        return {"groups": self.last_groups}

    def _dynamic_sampling(self, size: int, rollouts: RolloutBatch,
                          groups: list[RolloutGroup]) -> tuple[RolloutBatch, list[RolloutGroup], int]:  # fmt: skip
        """Refill rounds until every rank holds `size` informative groups or `grpo.dynamic_sampling`
        rounds ran; returns every round's rollouts and groups (all paid for) and the rounds run.

        Each round is a whole batch from the scheduler, as DAPO draws whole generation batches (a
        round of only the missing tasks would mostly come back short again). Every rank takes the
        same decision from the gathered counts."""
        rounds = 0
        while rounds < self.grpo.dynamic_sampling:
            short = sum(g.informative for g in groups) < size
            if not any(gather_lists([short])):
                break
            datamodule = self.trainer.datamodule
            extra_batch = datamodule.refill(datamodule.batch_size)
            extra = self._rollouts(extra_batch, self.grpo.group_size, self.sampling)
            extra_groups = rollout_groups(extra_batch.indices, extra)
            self._report(extra_groups)
            rollouts = RolloutBatch(rollouts.episodes + extra.episodes, rollouts.group_size)
            groups = groups + extra_groups
            rounds += 1
        return rollouts, groups, rounds

    def _rollouts(self, batch: TaskBatch, group_size: int, sampling: SamplingConfig) -> RolloutBatch:
        with engine_awake(self.engine):  # a sleeping vLLM gives the GPU back to training in between
            return run_agent_loop(self.engine, self.tokenizer, batch.pairs(), group_size, sampling,
                                  on_turn=self._turn_points("rollouts"), **self.loop_kwargs)  # fmt: skip

    def _turn_points(self, phase: str, offset: int = 0, total: int | None = None) -> Callable[[int, int], None]:
        """The agent loop's `on_turn` as work points: episodes finished (plus `offset`) of `total`, and the turn."""
        turns = itertools.count(1)

        def on_turn(finished: int, episodes: int) -> None:
            self._work_point(phase, offset + finished, total or episodes, f"turn {next(turns)}")

        return on_turn

    def _optimise(self, episodes: list[EpisodeRecord], advantages: Tensor) -> dict[str, float]:
        """`ppo_epochs` x `num_mini_batches` optimiser steps over random mini-batches; mean diagnostics.

        The step count never depends on how many groups were kept, and gradients are averaged across
        ranks once per optimiser step (backward passes run under `no_sync`), so DDP ranks with
        different numbers of informative groups, or none, stay in lock-step."""
        cfg = self.grpo
        n = len(episodes)
        seqs, is_weights, mismatch = None, None, {}
        if n:
            seqs = pack_sequences(episodes, self.tokenizer.pad_token_id, self.loop_kwargs["max_seq_len"]).to(self.device)
            advantages = advantages.to(self.device)  # [N]
            with torch.no_grad():
                if cfg.reuse_sampling_logprobs and seqs.sample_logprobs is not None:  # exact (checked at init)
                    old_logprobs = seqs.sample_logprobs * seqs.loss_mask  # [N, L-1]
                else:
                    old_logprobs = self._logprobs(seqs)  # [N, L-1] the trainer's view of the sampling policy
                ref_logprobs = self._ref_logprobs(seqs) if cfg.kl_coef > 0 else None  # [N, L-1]
            self._work_point("update", 0, cfg.ppo_epochs * cfg.num_mini_batches)  # the last point before any change
            if seqs.sample_logprobs is not None and cfg.off_policy_correction and not cfg.reuse_sampling_logprobs:
                is_weights, mismatch = truncated_importance_weights(
                    old_logprobs, seqs.sample_logprobs, seqs.loss_mask, cfg.importance_sampling_cap
                )  # [N, L-1] weights and rollout/ mismatch metrics
        opt = self.optimizers()
        records: list[tuple[GRPOLossOutput, Tensor]] = []
        for _ in range(cfg.ppo_epochs):
            for mb in torch.randperm(n).tensor_split(cfg.num_mini_batches):
                if not len(mb) and self._world_size() == 1:
                    continue  # alone, an empty mini-batch is no step at all
                local_tokens = float(seqs.loss_mask[mb].sum()) if len(mb) else 0.0
                num_seqs, num_tokens = global_loss_counts(len(mb), local_tokens)  # every rank joins
                opt.zero_grad()
                with self._no_sync():
                    out = None
                    if len(mb):
                        out = self._accumulate(seqs, mb, old_logprobs, ref_logprobs, advantages, is_weights,
                                               num_seqs=num_seqs, num_tokens=num_tokens)  # fmt: skip
                average_gradients(self._trainable())
                grad_norm = torch.nn.utils.clip_grad_norm_(self._trainable(), cfg.max_grad_norm)
                self.droppable = False  # from the first optimiser step on, the step runs to its end
                opt.step()
                if out is not None:
                    records.append((out, grad_norm))
        if not records:
            return {}
        tokens = float(seqs.attention_mask.sum()) * cfg.ppo_epochs
        fields = GRPOLossOutput._fields
        means = {f"train/{k}": torch.stack([getattr(out, k) for out, _ in records]).mean().item() for k in fields}
        grad_norm = torch.stack([g.detach().float().cpu() for _, g in records]).mean().item()
        return means | mismatch | {"train/grad_norm": grad_norm, "train/tokens": tokens}

    def _any_rank(self, flag: bool) -> bool:
        if self._world_size() == 1:
            return flag
        return bool(self.trainer.strategy.reduce_boolean_decision(flag, all=False))

    def _world_size(self) -> int:
        return self.trainer.world_size if self._trainer is not None else 1

    def _no_sync(self) -> contextlib.AbstractContextManager:
        """Skip DDP's per-backward all-reduce: the number of backward passes differs between ranks."""
        wrapped = self.trainer.strategy.model if self._trainer is not None else None
        return wrapped.no_sync() if isinstance(wrapped, DistributedDataParallel) else contextlib.nullcontext()

    def _accumulate(
        self, seqs: Sequences, mb: Tensor, old_lp: Tensor, ref_lp: Tensor | None, adv: Tensor,
        is_weights: Tensor | None = None, *, num_seqs: float | None = None, num_tokens: float | None = None,
    ) -> GRPOLossOutput:
        """Backward the loss of mini-batch `mb` in micro-batches whose losses sum to the mini-batch loss.

        `num_seqs` / `num_tokens` are the normalisers (default: this mini-batch's own counts; under DDP
        the global counts over the world size, see `global_loss_counts`)."""
        cfg = self.grpo
        counts = dict(
            num_seqs=len(mb) if num_seqs is None else num_seqs,
            num_tokens=float(seqs.loss_mask[mb].sum()) if num_tokens is None else num_tokens,
        )
        parts = []
        for micro in mb.split(cfg.micro_batch_size):
            width = int(seqs.attention_mask[micro].sum(1).max())  # trim padding shared by the micro-batch
            sub = seqs.rows(micro, width)  # [m, W] tokens, [m, W-1] masks
            out = grpo_loss(
                self._logprobs(sub), old_lp[micro, : width - 1], adv[micro], sub.loss_mask,
                None if ref_lp is None else ref_lp[micro, : width - 1],
                clip_eps_low=cfg.clip_eps_low, clip_eps_high=cfg.clip_eps_high, kl_coef=cfg.kl_coef,
                loss_agg=cfg.loss_agg, max_tokens=cfg.max_tokens,
                is_weights=None if is_weights is None else is_weights[micro, : width - 1], **counts,
            )  # fmt: skip
            self.manual_backward(out.loss)
            parts.append(out)
        shares = torch.tensor([len(m) for m in mb.split(cfg.micro_batch_size)], dtype=torch.float32) / len(mb)  # [M]
        return combine_micro_batches(parts, shares)

    def _logprobs(self, seqs: Sequences, temperature: float | None = None) -> Tensor:
        """Log-probs [N, L-1] of generated tokens (0 elsewhere) at the sampling temperature, in micro-batches
        when no grad is needed; the LM head runs only where the loss mask is 1 (`masked_token_logprobs`)."""
        t = self.sampling.temperature if temperature is None else temperature
        t = t if t > 0 else 1.0  # greedy sampling has no distribution to match: plain log-probs
        fn = partial(masked_token_logprobs, self.model, temperature=t, chunk_size=self.grpo.logprob_chunk_size)
        if torch.is_grad_enabled():
            return fn(seqs.tokens, seqs.attention_mask, seqs.loss_mask)  # [N, L-1]
        was_training = self.model.training
        self.model.eval()  # reference numbers for the ratio: no dropout noise
        chunks = []
        for rows in torch.arange(seqs.tokens.shape[0]).split(self.grpo.micro_batch_size):
            chunks.append(fn(seqs.tokens[rows], seqs.attention_mask[rows], seqs.loss_mask[rows]))  # [n, L-1]
        self.model.train(was_training)
        return torch.cat(chunks)  # [N, L-1]

    def _ref_logprobs(self, seqs: Sequences) -> Tensor:
        """The reference policy is the base model: the same weights with the LoRA adapters switched off."""
        with self.model.disable_adapter():
            return self._logprobs(seqs)  # [N, L-1]

    def _trainable(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def _report(self, groups: list[RolloutGroup]) -> None:
        datamodule = getattr(self._trainer, "datamodule", None) if self._trainer is not None else None
        report = getattr(datamodule, "report", None)
        if callable(report):
            report(groups)

    def _log_step(self, rollouts: RolloutBatch, zero_var: Tensor, stats: dict[str, float], gen_s: float,
                  train_s: float, kept: int, rounds: int) -> None:  # fmt: skip
        eps = rollouts.episodes
        turns = sum(e.turns for e in eps)
        gen_tokens = sum(e.gen_tokens for e in eps)
        metrics = {
            "rollout/reward_mean": sum(e.reward for e in eps) / len(eps),
            "rollout/zero_var_frac": zero_var.float().mean().item(),
            "rollout/num_rollouts": float(len(eps)),
            "rollout/tokens": float(gen_tokens),
            "rollout/episode_tokens": float(sum(len(e.token_ids) for e in eps)),  # what the step's rollouts cost
            "rollout/turns": turns / len(eps),
            "rollout/tool_calls": sum(e.tool_calls for e in eps) / len(eps),
            "rollout/parse_error_rate": sum(e.parse_errors for e in eps) / max(turns, 1),
            "rollout/truncated_frac": sum(e.truncated for e in eps) / len(eps),
            "rollout/invalid_reward_frac": sum(e.reason.startswith(INVALID_REWARD) for e in eps) / len(eps),
            "rollout/prompt_too_long_frac": sum(e.reason.startswith(PROMPT_TOO_LONG) for e in eps) / len(eps),
            "rollout/gen_tokens_per_s": gen_tokens / max(gen_s, 1e-9),
            "train/skipped": float(not stats),
            "train/groups": float(kept),  # the informative groups the update used
        }
        if self.grpo.dynamic_sampling:
            metrics["rollout/dynamic_rounds"] = float(rounds)  # refill rounds; their rollouts count in num_rollouts
        by_env: dict[str, list[float]] = defaultdict(list)
        for e in eps:
            by_env[e.env].append(e.reward)
        metrics |= {f"rollout/reward_mean/{env}": sum(r) / len(r) for env, r in by_env.items()}
        if stats:
            metrics |= {k: v for k, v in stats.items() if k != "train/tokens"}
            metrics["train/train_tokens_per_s"] = stats["train/tokens"] / max(train_s, 1e-9)
        self.log_dict(metrics | self._step_metric(), on_step=True, on_epoch=False, batch_size=rollouts.num_groups)

    def _step_metric(self) -> dict[str, float]:
        """Lightning logs at its own 0-based batch count; a `step` metric is the x value it logs at instead,
        so GRPO step k is logged at step k in every logger (a resumed run goes on counting)."""
        step = grpo_step(self._trainer) if self._trainer is not None else None
        return {} if step is None else {"step": float(step)}

    # ------------------------------------------------------------------ warm start
    def on_fit_start(self) -> None:
        """Check that dynamic sampling has a DataModule to refill from, warm start if configured, then
        hand the engine the current weights.

        Lightning restores a `ckpt_path` before this hook and runs the sanity-check validation
        after it, so every rollout of the fit (sanity check included) samples the resumed or
        warm-started adapter, never the base model."""
        if self.grpo.dynamic_sampling and not callable(getattr(self.trainer.datamodule, "refill", None)):
            raise ValueError("model.grpo.dynamic_sampling > 0 needs a DataModule with refill(n) -> TaskBatch "
                             "(EnvSchedDataModule has one)")
        self._warm_start_once()
        self.model.train()  # a loader may hand the model over in eval mode, and a resumed run skips the warm start
        self.engine.sync_weights(self.model)

    def _warm_start_once(self) -> None:
        if self.warm.steps > 0 and not self.warm_started:
            source = getattr(self.trainer.datamodule, "warm_start_items", None)
            if not callable(source):
                raise ValueError("warm_start.steps > 0 needs a DataModule with warm_start_items() -> [(task, env)]")
            losses = self.warm_losses = self.warm_start(source())
            if self.logger is not None:
                self.logger.log_metrics({"warm_start/loss_first": losses[0], "warm_start/loss_last": losses[-1]}, 0)

    def warm_start(self, items: Sequence[tuple[Task, Environment]]) -> list[float]:
        """`warm.steps` AdamW steps of SFT on the successful oracle episodes of `items` (see `default_oracle`)."""
        with self._may_drop():  # a stopped warm start is not saved: it runs again
            return self._warm_start(items)

    def _warm_start(self, items: Sequence[tuple[Task, Environment]]) -> list[float]:
        items = [(t, e) for t, e in items if _has_oracle(t, e)]
        scripted = oracle_rollouts(self.tokenizer, items, **self.loop_kwargs).episodes
        if too_long := [ep.task_key for ep in scripted if ep.reason.startswith(PROMPT_TOO_LONG)]:
            log.warning("warm start: %d task(s) skipped, their prompts leave no room within max_seq_len=%d: %s",
                        len(too_long), self.loop_kwargs["max_seq_len"], ", ".join(too_long[:5]))  # fmt: skip
        episodes = [ep for ep in scripted if ep.reward > 0]
        if not episodes:
            raise ValueError("warm start found no successful oracle episode")
        opt = torch.optim.AdamW(self._trainable(), lr=self.warm.lr)
        gen = torch.Generator().manual_seed(self.warm.seed)
        losses: list[float] = []
        self.model.train()
        self._work_point("warm start", 0, self.warm.steps)
        for _ in range(self.warm.steps):
            pick = torch.randint(len(episodes), (self.warm.batch_size,), generator=gen).tolist()
            seqs = pack_sequences([episodes[i] for i in pick], self.tokenizer.pad_token_id,
                                  self.loop_kwargs["max_seq_len"]).to(self.device)  # fmt: skip
            loss = sft_loss(self._logprobs(seqs, temperature=1.0), seqs.loss_mask)  # []
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self._trainable(), self.grpo.max_grad_norm)
            opt.step()
            losses.append(loss.item())
            self._work_point("warm start", len(losses), self.warm.steps, f"SFT loss {losses[-1]:.3f}")
        self.warm_started = True
        return losses

    # ------------------------------------------------------------------ evaluation
    def validation_step(self, batch: TaskBatch, batch_idx: int = 0) -> None:
        """Greedy, one rollout per held-out task: the rollouts `evaluate.py` runs (`evaluation.greedy_rollouts`)."""
        on_turn = self._turn_points("eval", len(self._eval_rewards), self._eval_tasks(len(batch)))
        with self._may_drop():  # a stopped evaluation is not saved
            episodes = greedy_rollouts(self.engine, self.tokenizer, batch.pairs(), self.sampling, on_turn=on_turn,
                                       **self.loop_kwargs)  # fmt: skip
        self._eval_rewards += [(e.env, e.reward, e.task_key) for e in episodes]

    def _eval_tasks(self, default: int) -> int:
        """Held-out tasks this rank evaluates in this validation (its loader's sampler), for progress."""
        loader = self.trainer.val_dataloaders if self._trainer is not None else None
        sampler = getattr(loader, "sampler", None)
        try:
            return len(sampler) if sampler is not None else default
        except TypeError:  # a sampler without a length
            return default

    def on_validation_epoch_start(self) -> None:
        self._eval_rewards = []

    def on_validation_epoch_end(self) -> None:
        """`eval/score` (task-weighted), `eval/score/<env>`, `eval/benchmark/<name>`, `eval/benchmark_mean`;
        `last_eval` keeps each task's reward (what a paired before/after comparison needs)."""
        results = gather_lists(self._eval_rewards)  # each rank evaluated its shard of the held-out tasks
        self.last_eval = {key: reward for _, reward, key in results}
        rewards = [(env, reward) for env, reward, _ in results]
        if not rewards:
            return
        metrics = aggregate(rewards).metrics("eval")
        # identical on every rank after the gather: the max over ranks only says so to Lightning
        self.log_dict(metrics | self._step_metric(), on_epoch=True, sync_dist=True, reduce_fx="max")
        if self.trainer.sanity_checking and not scores_every_task(self.trainer):
            return  # a partial sanity check only tries the loop out: no score of the run
        step = grpo_step(self.trainer)
        if self.trainer.is_global_zero and step is not None and self.trainer.state.fn == "fit":  # not trainer.validate()
            beside_csv = next((lg.log_dir for lg in self.loggers if isinstance(lg, CSVLogger)), None)  # `compare` reads both
            append_eval(beside_csv or self.trainer.default_root_dir, step, self.last_eval)
            if self.trainer.sanity_checking:  # Lightning logs nothing then: the score before training, by hand
                for logger in self.loggers:
                    logger.log_metrics(metrics, step=step)
                    logger.save()

    # ------------------------------------------------------------------ plumbing
    def configure_optimizers(self) -> torch.optim.Optimizer:
        return self.optimizer_factory(self._trainable())

    def transfer_batch_to_device(self, batch: Any, device: torch.device, dataloader_idx: int) -> Any:
        """Task batches hold Python objects, not tensors: leave them where they are (no deep copy)."""
        if isinstance(batch, TaskBatch):
            return batch
        return super().transfer_batch_to_device(batch, device, dataloader_idx)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """LoRA runs checkpoint the adapter only: the frozen base (16 GB for Qwen3-8B) is on disk already."""
        checkpoint["warm_started"] = self.warm_started
        if self._lora:
            frozen = {f"model.{n}" for n, p in self.model.named_parameters() if not p.requires_grad}
            checkpoint["state_dict"] = {k: v for k, v in checkpoint["state_dict"].items() if k not in frozen}

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.warm_started = checkpoint.get("warm_started", False)
