"""`envsched`: graph-propagated variance prediction plus coverage, under quotas and a similarity penalty.

Per step: predict every task's next-group informativeness (2 x reward std) by a closed-form PPR
smoothing of observed variance whose relations (none / intra / intra + cross) are mixed by weights
earned on held-back groups (each step's first observations are scored before anything learns from
them), optionally blended with an online-trained relation-aware GNN (`use_gnn`, off by default:
it did not beat the closed form over the world family) whose weight is earned the same way; add
a coverage bonus for rarely or long-ago tried tasks whose weight decays over training; fill the
batch greedily under environment quotas and the similarity penalty, the k-th near-copy of a group
in one batch counting `copy_decay`^(k-1) of its priority (`near_copies.py`). Every signal comes from groups
the trainer already ran: no exploratory rollouts. `progress` (on) discounts tasks whose reward shows
no trend over their picks, as far as their environment has more of them than the least flat one
(chance: a flaky verifier, a stochastic user); the `dependence` option those whose reward has no link
to the trajectory. Environment effects are estimated always and used with `env_effects`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..constraints import EnvQuota, SimilarityPenalty
from ..features import HISTORY_DIM, STATIC_DIM, history_features
from ..graph import INTRA, TaskGraph
from ..heap import retained_heap
from ..dependence import DependenceTracker
from ..env_effects import EnvEffects
from ..progress import ProgressTracker
from ..cost import RolloutCost
from ..propagation import IncrementalPPR, RowNormalizedGraph
from ..additive import AdditiveModel
from ..base import Scheduler
from ..calibration import OutcomeCalibration
from ..checks import check_bool, check_number
from ..registry import register_scheduler
from ..similarity import SimilarityUnion, SparseSimilarity
from ..types import group_stats


@register_scheduler("envsched")
class EnvSchedScheduler(Scheduler):
    def __init__(
        self,
        specs,
        seed: int = 0,
        k_intra: int = 10,
        k_cross: int = 5,
        cross_edges: bool = True,
        cross_weight: float = 0.5,
        cross_refresh_every: int = 10,
        cross_refresh_fraction: float = 0.05,
        use_gnn: bool = False,
        gnn_min_observations: int = 64,
        gnn_hidden: int = 16,
        gnn_train_steps: int = 2,
        ppr_alpha: float = 0.5,
        ppr_iters: int = 2,
        coverage: float = 0.3,
        coverage_halflife: float = 40.0,
        sibling_halflife: float = 5.0,
        quota: bool | dict = True,
        penalty: float = 1.0,
        copy_decay: float = 0.85,
        copy_threshold: float = 0.6,
        jitter: float = 1e-3,
        graph_seed: int = 0,
        gnn_refresh_period: int = 200,
        gnn_full_graph_max: int = 5_000,
        calibrate: bool = True,
        own_weight: float = 0.7,
        prior_strength: float = 8.0,
        gate: bool = True,
        gate_temperature: float = 0.05,
        gate_decay: float = 0.95,
        explore_untried: float = 0.0,
        progress: bool = True,
        progress_min_picks: int = 4,
        progress_floor: float = 0.05,
        progress_share: str = "environment",
        dependence: bool = False,
        dependence_min_groups: int = 1,
        additive: bool = False,
        additive_ridge: float = 2.0,
        cost: float = 0.0,
        cost_floor: float = 0.25,
        env_effects: bool = False,
        env_effects_floor: float = 0.5,
        env_effects_alpha: float = 0.05,
        **kw: Any,
    ) -> None:
        for name, value in dict(k_intra=k_intra, k_cross=k_cross, cross_refresh_every=cross_refresh_every,
                                gnn_min_observations=gnn_min_observations, gnn_refresh_period=gnn_refresh_period,
                                gnn_full_graph_max=gnn_full_graph_max).items():  # fmt: skip
            check_number(name, value, 0, integer=True)
        for name, value in dict(gnn_hidden=gnn_hidden, gnn_train_steps=gnn_train_steps, ppr_iters=ppr_iters,
                                dependence_min_groups=dependence_min_groups).items():
            check_number(name, value, 1, integer=True)
        for name, value in dict(cross_weight=cross_weight, coverage=coverage, own_weight=own_weight,
                                ppr_alpha=ppr_alpha).items():  # fmt: skip
            check_number(name, value, 0.0, 1.0)
        for name, value in dict(penalty=penalty, jitter=jitter, prior_strength=prior_strength).items():
            check_number(name, value, 0.0)
        check_number("coverage_halflife", coverage_halflife, 0.0, low_open=True)
        check_number("gate_temperature", gate_temperature, 0.0, low_open=True)
        check_number("gate_decay", gate_decay, 0.0, 1.0)
        check_number("explore_untried", explore_untried, 0.0)
        check_number("additive_ridge", additive_ridge, 0.0, low_open=True)
        for name, value in dict(cross_edges=cross_edges, use_gnn=use_gnn, calibrate=calibrate, gate=gate,
                                progress=progress, dependence=dependence, additive=additive,
                                env_effects=env_effects).items():  # fmt: skip
            check_bool(name, value)
        super().__init__(specs, seed=seed, **kw)
        self.cross_edges, self.cross_weight, self.cross_refresh_every = cross_edges, cross_weight, cross_refresh_every
        if not 0.0 <= cross_refresh_fraction <= 1.0:
            raise ValueError(f"cross_refresh_fraction must be in [0, 1], got {cross_refresh_fraction}")
        self.cross_refresh_fraction = cross_refresh_fraction
        self.last_refresh_step = 0
        self.use_gnn, self.gnn_min_observations = use_gnn, gnn_min_observations
        self.ppr_alpha, self.ppr_iters = ppr_alpha, ppr_iters
        self.coverage, self.coverage_halflife, self.jitter = coverage, coverage_halflife, jitter
        if sibling_halflife < 0:
            raise ValueError(f"sibling_halflife must be >= 0 (0 switches it off), got {sibling_halflife}")
        self.sibling_halflife = sibling_halflife
        self._sibling_last = np.full(self.num_tasks, -1, dtype=np.int64)  # see _recompute_sibling_last
        # the graph is a function of the specs alone (not of the run's seed), so a checkpoint from
        # any run of this task pool resumes onto an identical graph
        self.graph = TaskGraph(self.specs, self.env_ids, k_intra=k_intra, k_cross=k_cross if cross_edges else 0,
                               seed=graph_seed)
        self.gnn = None
        if use_gnn:  # PyG (about 180 MB of imports) is loaded only by a scheduler that uses the GNN
            from ..predictor import OnlineGNN

            self.gnn = OnlineGNN(STATIC_DIM + HISTORY_DIM + 1, seed=seed, hidden=gnn_hidden, train_steps=gnn_train_steps,
                                 full_graph_max=gnn_full_graph_max)  # fmt: skip
        self._cache: dict[str, tuple[tuple[int, int], np.ndarray]] = {}
        self.gnn_refresh_period = gnn_refresh_period
        self.calibration = OutcomeCalibration() if calibrate else None
        self.own_weight = own_weight
        self.prior_strength = prior_strength
        self._gnn_correction: np.ndarray | None = None  # large graphs: GNN logit corrections, refreshed locally
        self._last_nodes = np.zeros(0, dtype=np.int64)
        # relation gating: closed-form candidates, from no relation to both, each scored on held-back groups
        self.gate, self.gate_temperature, self.gate_decay = gate, gate_temperature, gate_decay
        self.explore_untried = explore_untried
        # learning progress: a task whose reward scatters without a trend over its picks is discounted
        if progress_share not in ("pool", "environment"):
            raise ValueError(f"progress_share must be 'pool' or 'environment', got {progress_share!r}")
        self.progress = ProgressTracker(self.num_tasks, progress_min_picks, progress_floor,
                                        env_ids=self.env_ids if progress_share != "pool" else None) if progress else None
        # reward dependence: a task whose reward ignores the trajectory (a coin-flip verifier) is discounted
        self.dependence = DependenceTracker(self.num_tasks, dependence_min_groups, progress_floor) if dependence else None
        self.relations = (("none", "intra", "cross") if cross_edges else ("none", "intra")) if gate else \
            (("cross",) if cross_edges else ("intra",))
        # composition: an additive model over metadata tokens, one more candidate for the gate to weigh
        self.additive = AdditiveModel(self.specs, ridge=additive_ridge) if additive else None
        # rollout cost: predicted informativeness per token, as far as `cost` (a power) says
        check_number("cost", cost, 0.0, 2.0)
        check_number("cost_floor", cost_floor, 0.0, 1.0, low_open=True)
        self.cost = RolloutCost(self.env_ids, self.num_envs, cost, cost_floor) if cost > 0 else None
        # environment effects: always estimated (the logger draws them), used in priorities with `env_effects`
        check_number("env_effects_floor", env_effects_floor, 0.0, 1.0)
        check_number("env_effects_alpha", env_effects_alpha, 0.0, 1.0, low_open=True)
        self.env_effects = EnvEffects(self.env_ids, self.num_envs, alpha=env_effects_alpha, floor=env_effects_floor)
        self.use_env_effects = env_effects
        if additive:
            if not gate:
                raise ValueError("additive=true needs gate=true: the gate weighs it against the graph's candidates")
            self.relations = (*self.relations, "additive")
        self.group_size = 8  # rollouts per group, as last reported (the additive candidate's scale)
        self.gate_err = {r: 0.0 for r in self.relations}  # EMA squared error on held-back groups
        self.ppr_intra: IncrementalPPR | None = None
        if gate and cross_edges:  # intra-only propagation next to the mixed one; intra edges never change
            self.ppr_intra = IncrementalPPR(RowNormalizedGraph(self.graph, 0.0), ppr_alpha, ppr_iters)
            self.ppr_intra.reset(2 * self.history.ema_std.astype(np.float64), self.history.observed)
        self._rebuild_edges()
        self.err = {"ppr": 0.0, "gnn": 0.0}  # EMA squared error on held-back groups
        # per environment: (count, sum of informativeness) over first observations
        self.first_seen = np.zeros((2, self.num_envs))
        self.evaluated = 0
        if quota:
            self.install(EnvQuota(**(quota if isinstance(quota, dict) else {})))
        if penalty > 0 or copy_decay < 1.0:
            self.install(SimilarityPenalty(lam=penalty, scale=1.0, copy_decay=copy_decay, copy_threshold=copy_threshold))

    # -- graph plumbing ----------------------------------------------------------------------
    def _rebuild_edges(self) -> None:
        with retained_heap(self.num_tasks):  # full propagation passes over every edge: see heap.py
            self._rebuild_edges_now()

    def _rebuild_edges_now(self) -> None:
        adj = RowNormalizedGraph(self.graph, self.cross_weight)
        self.ppr = IncrementalPPR(adj, self.ppr_alpha, self.ppr_iters)
        h = self.history
        self.ppr.reset(2 * h.ema_std.astype(np.float64), h.observed)
        self._similarity = self.graph.similarity_view()
        if self.gnn is not None:  # the PyG view (int64 edge index, edge types) only where the GNN reads it
            data = self.graph.to_data()  # without cross edges the cross relation is simply empty
            self.gnn.set_graph(data.edge_index, data.edge_weight, data.edge_type, self.num_tasks)
        self._cache.clear()
        if self.penalty is not None:
            self.penalty.similarity = self._similarity

    def _similarity_source(self) -> SparseSimilarity | SimilarityUnion:
        return self._similarity

    def _inputs(self) -> torch.Tensor:
        """[N, STATIC_DIM + HISTORY_DIM + 1] GNN inputs (last: the closed-form estimate), once per step."""
        return torch.from_numpy(self._cached("inputs", lambda: np.concatenate(
            [self.graph.static_x, history_features(self.history), self.predict_ppr()[:, None]], 1)))

    # -- prediction --------------------------------------------------------------------------
    def _prior(self) -> np.ndarray:
        """float[N]: what a never-tried task is worth before its neighbours say more: the mean
        informativeness of first observations in its environment, shrunk toward the mean over
        all environments (itself shrunk toward 0.5) while the environment has few of them.

        Not the mean over all observed tasks: those are mostly re-picked because they were
        informative, which would make every untried task look better than it is."""
        n, total = self.first_seen
        overall = (total.sum() + 0.5) / (n.sum() + 1.0)
        per_env = (total + self.prior_strength * overall) / (n + self.prior_strength)
        return per_env[self.env_ids]

    def _cached(self, key: str, compute) -> np.ndarray:
        """Predictions are a function of (history step, GNN version): computed once between updates."""
        version = (self.history.step, 0 if self.gnn is None else self.gnn.updates)
        hit = self._cache.get(key)
        if hit is None or hit[0] != version:
            hit = self._cache[key] = (version, compute())
        return hit[1]

    def predict_ppr(self) -> np.ndarray:
        """Closed form: PPR over the graph, and for tried tasks the calibrated own outcome."""
        return self._cached("ppr", self._closed_form)

    def _closed_form(self) -> np.ndarray:
        w = self.relation_weights()
        cands = self._candidates()
        ppr = sum(w[r] * cands[i] for i, r in enumerate(self.relations) if w[r] > 0).astype(np.float32)
        return self._with_own_outcome(ppr)

    def _with_own_outcome(self, ppr: np.ndarray) -> np.ndarray:
        """For tried tasks, blend the propagated value with the calibrated own last outcome."""
        if self.calibration is None:
            return ppr
        h = self.history
        tried = np.flatnonzero(h.observed)  # only tried tasks have an own outcome: O(tried), not O(N)
        out = np.array(ppr, dtype=np.float32, copy=True)
        own = self.calibration.lookup(h.last_mean[tried], h.last_std[tried], ppr[tried])
        out[tried] = self.own_weight * own + (1 - self.own_weight) * ppr[tried]
        return out

    def _candidates(self) -> np.ndarray:
        """float32[R, N]: the propagated value with each relation set of `self.relations`: "none"
        (the environment prior alone), "intra" (PPR over intra edges), "cross" (PPR over both);
        with `additive`, also the additive model's prediction over metadata tokens."""
        def compute() -> np.ndarray:
            prior = self._prior()
            out = {"none": lambda: prior.astype(np.float32),
                   "intra": lambda: (self.ppr_intra or self.ppr).estimate(prior),
                   "cross": lambda: self.ppr.estimate(prior),
                   "additive": lambda: self.additive.informativeness(self.group_size)}
            return np.stack([out[r]() for r in self.relations])
        return self._cached("candidates", compute)

    def relation_weights(self) -> dict[str, float]:
        """Weight of each relation set in the closed form, earned on held-back groups: a softmax of
        minus each candidate's relative excess error over the best (10% worse -> e^-2 as much at the
        default temperature). Until `gnn_min_observations` groups were scored, the full graph."""
        if len(self.relations) == 1 or self.evaluated < self.gnn_min_observations:
            return {r: float(r == self.relations[-1]) for r in self.relations}
        e = np.array([self.gate_err[r] for r in self.relations])
        z = -(e / max(float(e.min()), 1e-12) - 1.0) / self.gate_temperature
        w = np.exp(z - z.max())
        w /= w.sum()
        return {r: float(x) for r, x in zip(self.relations, w)}

    def predict_gnn(self) -> np.ndarray:
        return self._cached("gnn", self._gnn_refresh)

    def _gnn_refresh(self) -> np.ndarray:
        """Full-graph inference while the graph is small. On large graphs the GNN's logit
        correction of the closed form is re-run only for the nodes whose inputs just changed (the
        last groups) plus a rotating slice, and every node's value is its latest correction applied
        to the *current* closed form, so propagation reaches a never-tried neighbour in the same
        step while a step costs O(batch x fanout^2 + N / gnn_refresh_period), not O(N + E)."""
        x = self._inputs()
        if self.gnn.full_edges is not None:
            return self.gnn.predict(x).numpy()
        n, period = self.num_tasks, self.gnn_refresh_period
        if self._gnn_correction is None:
            self._gnn_correction = np.zeros(n, dtype=np.float32)  # until a node is re-run, the closed form
        chunk = -(-n // period)
        start = (self.history.step % period) * chunk
        nodes = np.unique(np.concatenate([self._last_nodes, np.arange(start, min(n, start + chunk))]))
        self._gnn_correction[nodes] = self.gnn.predict_correction(x, torch.from_numpy(nodes)).numpy()
        from ..predictor import VariancePredictor

        return torch.sigmoid(VariancePredictor.base_logit(x[:, -1]) + torch.from_numpy(self._gnn_correction)).numpy()

    def gnn_trust(self) -> float:
        """Blend weight of the GNN, from both predictors' error on groups they had not trained on."""
        if self.gnn is None or self.evaluated < self.gnn_min_observations:
            return 0.0
        e_ppr, e_gnn = self.err["ppr"], self.err["gnn"]
        if e_ppr <= 0:
            return 0.0
        # equal error -> half weight; 10% worse -> none; 10% better -> full
        return float(np.clip(0.5 + 5.0 * (e_ppr - e_gnn) / e_ppr, 0.0, 1.0))

    def predict(self) -> np.ndarray:
        """float32[N]: predicted informativeness of each task's next group."""
        ppr = self.predict_ppr()
        w = self.gnn_trust()
        return ppr if w == 0.0 else (1 - w) * ppr + w * self.predict_gnn()

    def coverage_bonus(self) -> np.ndarray:
        """Exploration bonus: rare and long-unseen tasks first, with a weight that decays over
        training. A never-tried task whose same-environment neighbour was just observed gets up to
        half less: propagation already carries its class's current state, so the exploration goes
        to classes nobody has looked at lately."""
        h = self.history
        weight = self.coverage * 0.5 ** (h.step / self.coverage_halflife)
        if not h.step:
            return np.full(h.num_tasks, weight, dtype=np.float32)
        if self.sibling_halflife <= 0:
            rarity = 1.0 / np.sqrt(1.0 + h.count)
            stale = np.minimum(1.0, np.log1p(h.staleness()) / math.log1p(h.step + 1))
            return (weight * rarity * stale).astype(np.float32)
        # never-seen tasks (rarity 1) by their siblings; rarity and logarithms for the seen ones only
        out = np.multiply(1.0 - 0.5 * self._sibling_freshness(), weight, dtype=np.float64).astype(np.float32)
        seen = np.flatnonzero(h.observed)
        stale = np.minimum(1.0, np.log1p(h.step - h.last_step[seen]) / math.log1p(h.step + 1))
        out[seen] = weight * (1.0 / np.sqrt(1.0 + h.count[seen])) * stale
        return out

    def _sibling_freshness(self) -> np.ndarray:
        """float[N] in [0, 1]: 0.5 ** (updates since any intra-environment neighbour was last
        observed / `sibling_halflife`); 0 where none ever was, or so long ago that it rounds to 0
        (beyond 20 half-lives), which keeps the power to the few recent ones on a large pool."""
        step, half = self.history.step, self.sibling_halflife
        fresh = np.zeros(self.num_tasks, dtype=np.float32)
        recent = np.flatnonzero(self._sibling_last > max(step - 20 * half, -1))
        fresh[recent] = np.exp2(-(step - self._sibling_last[recent]) / half)
        return fresh

    def _recompute_sibling_last(self) -> None:
        """The latest observation step over each task's intra neighbours, from the history: O(E),
        for a resume. `update` keeps it current in O(batch x k) (the relation is symmetric, so
        marking the neighbours of the observed tasks is the same)."""
        self._sibling_last = self.graph.relation(INTRA).neighbour_max(self.history.last_step, fill=-1.0).astype(np.int64)

    def _priorities(self, batch_size: int) -> dict[str, np.ndarray]:
        pred = self.predict()
        bonus = self.coverage_bonus()
        noise = self.jitter * self.rng.random(self.num_tasks)
        learnable = (pred >= 0.05) | ~self.history.observed
        if self.explore_untried > 0:
            noise = noise + self._posterior_draw(pred)
        out = {"eligible": learnable, "predicted": pred, "coverage": bonus}
        value = pred
        trackers = [t for t in (self.progress, self.dependence) if t is not None]
        if trackers:
            out["learnability"] = np.prod([t.learnability() for t in trackers], axis=0).astype(np.float32)
            value = value * out["learnability"]
        if self.cost is not None:
            out["cost_factor"] = self.cost.factor().astype(np.float32)
            value = value * out["cost_factor"]
        if self.use_env_effects:
            out["env_factor"] = self.env_effects.factor().astype(np.float32)
            value = value * out["env_factor"]
        return {"priority": value + bonus + noise, **out}

    def _posterior_draw(self, pred: np.ndarray) -> np.ndarray:
        """Experimental (`explore_untried`, off by default): Thompson-style exploration of never-tried
        tasks. Each one's prediction is read as the mean of a Beta posterior whose strength is the
        evidence propagation brought it (one group's worth at most); the draw's deviation from
        that mean, times `explore_untried`, is added to its priority, so classes little is known
        about get tried by chance rather than in prediction order."""
        untried = np.flatnonzero(~self.history.observed)
        out = np.zeros(self.num_tasks)
        if untried.size:
            den = np.maximum(self.ppr.f[untried, 1], 0.0)
            k = 8.0 * den / (den + 0.05)  # pseudo-rollouts of evidence
            p = np.clip(pred[untried].astype(np.float64), 0.0, 1.0)
            a, b = 1.0 + k * p, 1.0 + k * (1.0 - p)
            out[untried] = self.explore_untried * (self.rng.beta(a, b) - a / (a + b))
        return out

    # -- learning ----------------------------------------------------------------------------
    def _observe(self, groups) -> None:
        for tracker in (self.progress, self.dependence, self.cost):
            if tracker is not None:
                tracker.observe(groups)
        self.env_effects.observe(groups, self.history)
        nodes, _, std, _ = group_stats(groups)
        y = np.minimum(1.0, 2 * std).astype(np.float32)
        first = self.history.count[nodes] == 0
        d = self.gate_decay if self.evaluated else 0.0
        if len(self.relations) > 1 and first.any():
            # every relation set's prediction for the never-tried tasks among these groups, made
            # before they were seen: where relations decide (a tried task has its own outcome)
            for r, c in zip(self.relations, self._candidates()[:, nodes[first]]):
                self.gate_err[r] = d * self.gate_err[r] + (1 - d) * float(np.mean((c - y[first]) ** 2))
        if self.calibration is not None and (~first).any():
            seen = nodes[~first]
            self.calibration.observe(self.history.last_mean[seen], self.history.last_std[seen], y[~first])
        env = self.env_ids[nodes[first]]
        self.first_seen[0] += np.bincount(env, minlength=self.num_envs)
        self.first_seen[1] += np.bincount(env, weights=y[first], minlength=self.num_envs)
        ppr = self.predict_ppr()[nodes]  # scored before anything learns from these groups
        d = 0.9 if self.evaluated else 0.0
        self.err["ppr"] = d * self.err["ppr"] + (1 - d) * float(np.sqrt(np.mean((ppr - y) ** 2)))
        if self.gnn is not None:
            # on large graphs this is the (locally refreshed) value selection acted on: still a
            # prediction made before these groups were seen
            gnn = self.predict_gnn()[nodes]
            self.err["gnn"] = d * self.err["gnn"] + (1 - d) * float(np.sqrt(np.mean((gnn - y) ** 2)))
            self.gnn.fit(self._inputs(), nodes, y)
        self.evaluated += len(groups)

    def update(self, groups) -> None:
        super().update(groups)
        nodes = np.unique([g.index for g in groups])
        self._last_nodes = nodes
        h = self.history
        if self.additive is not None:
            self.group_size = len(groups[-1].rewards)
            index, mean, _, _ = group_stats(groups)
            self.additive.observe(index, mean, self.group_size)
        self._sibling_last[self.graph.relation(INTRA).neighbour_ids(nodes)] = h.step
        self.ppr.update(nodes, 2 * h.ema_std[nodes].astype(np.float64), h.observed[nodes])
        if self.ppr_intra is not None:
            self.ppr_intra.update(nodes, 2 * h.ema_std[nodes].astype(np.float64), h.observed[nodes])
        changed = self._refresh_due()
        if changed is not None:
            self.graph.refresh_cross(self.history, changed)
            self.last_refresh_step = self.history.step
            self._rebuild_edges()

    def _refresh_due(self) -> np.ndarray | None:
        """The tasks with new statistics since the last cross-edge rebuild, if a rebuild is due.

        Cross edges follow observed statistics, so they are rebuilt once `cross_refresh_every`
        updates have passed *and* at least `cross_refresh_fraction` of the tasks have changed: on a
        large pool a batch moves a sliver of the graph, and a rebuild is paid per that much change,
        not per step."""
        h = self.history
        if not self.cross_edges or h.step - self.last_refresh_step < self.cross_refresh_every:
            return None
        changed = np.flatnonzero(h.last_step > self.last_refresh_step)
        return changed if changed.size >= self.cross_refresh_fraction * self.num_tasks else None

    # -- checkpointing -----------------------------------------------------------------------
    def _extra_state(self) -> dict:
        return {
            "err": dict(self.err),
            "gate_err": dict(self.gate_err),
            "first_seen": self.first_seen.copy(),
            "calibration": None if self.calibration is None else self.calibration.state_dict(),
            "evaluated": self.evaluated,
            "graph": self.graph.state_dict(),
            "last_refresh_step": self.last_refresh_step,
            "gnn": None if self.gnn is None else self.gnn.state_dict(),
            # large graphs: the locally refreshed GNN corrections and the nodes the next refresh re-runs
            "gnn_correction": None if self._gnn_correction is None else self._gnn_correction.copy(),
            "last_nodes": self._last_nodes.copy(),
            "progress": None if self.progress is None else self.progress.state_dict(),
            "dependence": None if self.dependence is None else self.dependence.state_dict(),
            # the propagated sums as the run has them (incrementally updated): a resume continues from
            # these exact values instead of recomputing them over every edge
            "ppr": [(p.s.copy(), p.f.copy()) for p in (self.ppr, self.ppr_intra) if p is not None],
            "additive": None if self.additive is None else self.additive.state_dict() | {"group_size": self.group_size},
            "cost": None if self.cost is None else self.cost.state_dict(),
            "env_effects": self.env_effects.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        """As `Scheduler.load_state_dict`, after checking that the checkpoint has the state of every
        option that is on now, so a refused checkpoint leaves this scheduler as it was."""
        extra = state.get("extra") or {}
        for option, what, part in _OPTION_STATES:
            if getattr(self, option) is not None and extra.get(option) is None:
                raise ValueError(f"this scheduler {what} ({option}=true) but the checkpoint has no {part} (written "
                                 f"with {option}=false or before it existed): resume with scheduler.{option}=false")
        super().load_state_dict(state)

    def _load_extra_state(self, state: dict) -> None:
        with retained_heap(self.num_tasks):  # full propagation passes: see heap.py
            self._load_extra_state_now(state)

    def _load_extra_state_now(self, state: dict) -> None:
        self.err, self.evaluated = dict(state["err"]), int(state["evaluated"])
        self.gate_err.update({r: float(v) for r, v in state.get("gate_err", {}).items() if r in self.gate_err})
        self.first_seen = np.asarray(state["first_seen"], dtype=np.float64).reshape(2, self.num_envs).copy()
        if self.calibration is not None:
            self.calibration.load_state_dict(state["calibration"])
        self.last_refresh_step = int(state["last_refresh_step"])
        if state["graph"]["refreshes"] or self.graph.refreshes:
            self.graph.load_state_dict(state["graph"])
            self._rebuild_edges()
        if self.gnn is not None:
            self.gnn.load_state_dict(state["gnn"])
        h = self.history
        saved = state.get("ppr")  # absent in checkpoints written before it was saved: recomputed from history
        for k, ppr in enumerate(p for p in (self.ppr, self.ppr_intra) if p is not None):
            if saved is not None and k < len(saved) and np.shape(saved[k][1]) == ppr.f.shape:
                ppr.s, ppr.f = (np.asarray(a, dtype=np.float64).copy() for a in saved[k])
            else:
                ppr.reset(2 * h.ema_std.astype(np.float64), h.observed)  # PPR state is a function of history
        self._recompute_sibling_last()
        correction = state.get("gnn_correction")
        self._gnn_correction = None if correction is None else np.asarray(correction, dtype=np.float32).copy()
        if self._gnn_correction is not None and self._gnn_correction.shape != (self.num_tasks,):
            raise ValueError(f"gnn_correction has shape {self._gnn_correction.shape}, expected ({self.num_tasks},)")
        self._last_nodes = np.asarray(state.get("last_nodes", ()), dtype=np.int64).copy()
        if self.progress is not None and state.get("progress") is not None:
            self.progress.load_state_dict(state["progress"])
        elif self.progress is not None:  # written with progress off or before it existed: trends from here on
            self.progress = ProgressTracker(self.num_tasks, self.progress.min_picks, self.progress.floor,
                                            self.progress.t_full, self.progress.env_ids)  # fmt: skip
        if self.dependence is not None:
            self.dependence.load_state_dict(state["dependence"])
        if self.additive is not None:
            self.additive.load_state_dict(state["additive"])
            self.group_size = int(state["additive"]["group_size"])
        if self.cost is not None and state.get("cost") is not None:
            # a checkpoint without it (cost=0, or written before it existed) resumes with costs
            # learned afresh from the next rollouts: an estimate, not a decision already taken
            self.cost.load_state_dict(state["cost"])
        saved = state.get("env_effects")
        if saved is not None and np.shape(saved["mass"])[0] == h.step + 1:
            self.env_effects.load_state_dict(saved)
        else:  # written before it existed: an estimate, not a decision, so it starts afresh from here
            self.env_effects.restart(h.step)
        self._cache.clear()


# options whose state a checkpoint must hold when they are on: (option, what it does, what is saved)
# (learning progress is not among them: a trend is an estimate, judged afresh from the resume on)
_OPTION_STATES = (("dependence", "tracks reward dependence", "dependence state"),
                  ("additive", "has the additive candidate", "additive model"))
