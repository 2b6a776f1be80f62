"""The dual-relation task graph: intra-environment (shared tools, state, verifier) and
cross-environment (similar execution pattern and reward structure) edges over env-task nodes.

Both relations are sparse kNN graphs found by LSH, never by a dense O(N^2) pass. Cross edges are
rebuilt online from static pattern features plus observed reward statistics, so two tasks in
different environments become neighbours once their rollouts behave alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from .cross_lsh import CrossEnvLSH
from .features import pattern_vectors, static_features
from .heap import retained_heap
from .history import TaskHistory
from .similarity import SimilarityUnion, SparseSimilarity, task_similarity
from .types import TaskSpec

if TYPE_CHECKING:
    from torch_geometric.data import Data

INTRA, CROSS = 0, 1
# up to this many edges (about 100k tasks, 48 MB), readers keep one merged copy of both relations:
# fewer lookups per step; above it they read the relations in place (at 1M tasks a copy is 260 MB)
MERGE_MAX_EDGES = 4_000_000


class TaskGraph:
    """Owns the two relations and the static node features; `to_data()` gives the PyG view."""

    def __init__(self, specs: Sequence[TaskSpec], env_ids: np.ndarray, k_intra: int = 10, k_cross: int = 5, seed: int = 0):
        self.num_nodes = len(specs)
        self.env_ids = env_ids
        self.k_intra, self.k_cross, self.seed = k_intra, k_cross, seed
        self.specs = specs
        self._static_x: np.ndarray | None = None
        with retained_heap(self.num_nodes):  # a large build frees and reallocates big blocks: keep them (heap.py)
            self.pattern_x = pattern_vectors(specs)  # [N, NUM_DIM + RT_DIM]
            self.intra = task_similarity(specs, k=k_intra, seed=seed, patterns=self.pattern_x)
            self.refreshes = 0
            self._lsh = CrossEnvLSH(self.pattern_x, env_ids, k_cross)
            self.cross = self._cross(None)

    @property
    def static_x(self) -> np.ndarray:
        """float32[N, STATIC_DIM] node features, computed when first asked for (the GNN's input):
        at 1M tasks they are 108 MB a scheduler without the GNN never needs."""
        if self._static_x is None:
            self._static_x = static_features(self.specs)
        return self._static_x

    def _cross_vectors(self, history: TaskHistory | None) -> np.ndarray:
        """[N, pattern + 4]: static pattern, observed flag, and (observed tasks only) reward mean,
        2 x std and log length, weighted so observed behaviour outweighs the static pattern."""
        n = self.num_nodes
        if history is None:
            return np.concatenate([self.pattern_x, np.zeros((n, 4), np.float32)], 1)
        obs = history.observed.astype(np.float32)[:, None]
        stats = np.stack([history.ema_mean, 2 * history.ema_std, np.log1p(history.ema_len)], 1).astype(np.float32)
        return np.concatenate([self.pattern_x, obs, 2.0 * stats * obs], 1)

    def _cross(self, history: TaskHistory | None, changed: np.ndarray | None = None) -> SparseSimilarity:
        if self.k_cross == 0:  # the relation switched off (ablation): no edges, nothing to refresh
            return SparseSimilarity.empty(self.num_nodes)
        rng = np.random.default_rng(self.seed + self.refreshes)
        previous = self.cross if changed is not None else None
        return self._lsh.build(self._cross_vectors(history), rng, changed=changed, previous=previous)

    def refresh_cross(self, history: TaskHistory, changed: np.ndarray | None = None) -> None:
        """Rebuild cross-environment edges from static patterns plus observed reward statistics.
        `changed`: the tasks whose statistics moved since the last build (only they draw new
        candidates); None rebuilds from scratch. With ``k_cross == 0`` the relation stays empty."""
        self.refreshes += 1
        with retained_heap(self.num_nodes):
            self.cross = self._cross(history, changed)

    def state_dict(self) -> dict:
        """What a refresh changed: the cross relation as built from the history *at* that refresh,
        which a later history cannot reproduce. Static parts are rebuilt from the specs."""
        cross = None if not self.refreshes else {k: getattr(self.cross, k).copy() for k in ("indptr", "indices", "weights")}
        return {"refreshes": self.refreshes, "cross": cross}

    def load_state_dict(self, state: dict) -> None:
        self.refreshes = int(state["refreshes"])
        if state["cross"] is None:
            self.cross = self._cross(None)
            return
        cross = SparseSimilarity(**{k: np.asarray(v).copy() for k, v in state["cross"].items()})
        if cross.num_nodes != self.num_nodes:
            raise ValueError(f"graph state for {cross.num_nodes} tasks, this graph has {self.num_nodes}")
        self.cross = cross

    def relation(self, r: int) -> SparseSimilarity:
        return self.intra if r == INTRA else self.cross

    def edge_index(self, r: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(edge_index [2, E_r], edge_weight [E_r]) in PyG's source -> target convention."""
        s = self.relation(r)
        ei = torch.from_numpy(np.stack([s.indices, s.sources()]))
        return ei, torch.from_numpy(s.weights)

    def to_data(self) -> Data:
        """A `torch_geometric.data.Data` with `edge_type` (0 intra, 1 cross) and `edge_weight`."""
        from torch_geometric.data import Data  # PyG only where its view is wanted (the GNN)

        (e0, w0), (e1, w1) = self.edge_index(INTRA), self.edge_index(CROSS)
        return Data(
            x=torch.from_numpy(self.static_x),
            edge_index=torch.cat([e0, e1], 1),
            edge_weight=torch.cat([w0, w1]),
            edge_type=torch.cat([torch.zeros(e0.shape[1], dtype=torch.long), torch.ones(e1.shape[1], dtype=torch.long)]),
            num_nodes=self.num_nodes,
        )

    def combined_similarity(self) -> SparseSimilarity:
        """Both relations as one similarity (a copy of every edge). They never share a pair (intra
        joins tasks of one environment, cross of two), so rows are simply joined."""
        return SparseSimilarity.concat_rows([self.intra, self.cross])

    @property
    def num_edges(self) -> int:
        return int(self.intra.indices.shape[0] + self.cross.indices.shape[0])

    def similarity_view(self) -> SparseSimilarity | SimilarityUnion:
        """Both relations read as one, for the batch similarity penalty: one merged copy while the
        graph is small (one row lookup per pick), a view over both relations once a copy would cost
        more than `MERGE_MAX_EDGES` edges' worth of memory."""
        if self.num_edges <= MERGE_MAX_EDGES:  # native index and value types: a pick's update is 3x cheaper
            merged = self.combined_similarity()
            return SparseSimilarity(merged.indptr, merged.indices, merged.weights, wide=True)
        return SimilarityUnion((self.intra, self.cross))
