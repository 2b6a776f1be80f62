"""The learned propagation model: a two-layer relation-aware GNN that predicts each task's next
group informativeness (2 x group reward std, in [0, 1]) from its own features and history and its
neighbours' along both relations, trained online on the groups the trainer already ran.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing


class RelEdges(NamedTuple):
    """All relations' edges in one list, so a layer aggregates every relation in one pass.

    `edge_index` [2, E] runs source -> ``relation * num_nodes + target``; `edge_weight` [E] is
    normalised to sum 1 per (relation, target), making each aggregate a weighted mean.
    """

    edge_index: Tensor
    edge_weight: Tensor
    num_nodes: int
    num_relations: int


def split_relations(edge_index: Tensor, edge_weight: Tensor, edge_type: Tensor, num_nodes: int, num_relations: int = 2) -> RelEdges:
    """Offset each edge's target by its relation and normalise weights into a weighted mean."""
    target = edge_type * num_nodes + edge_index[1]  # [E]
    deg = torch.zeros(num_relations * num_nodes, dtype=edge_weight.dtype).index_add_(0, target, edge_weight).clamp_min(1e-6)
    return RelEdges(torch.stack([edge_index[0], target]), edge_weight / deg[target], num_nodes, num_relations)


def unique_ids(ids: np.ndarray, size: int) -> np.ndarray:
    """Sorted distinct values of `ids` (all in [0, size)): a mark-and-scan over `size` when `ids`
    is not much shorter than that, which beats sorting or hashing for the dense frontiers of
    2-hop blocks; np.unique otherwise."""
    if ids.size * 16 < size:
        return np.unique(ids)
    mark = np.zeros(size, dtype=bool)
    mark[ids] = True
    return np.flatnonzero(mark)


class RelationalMeanConv(MessagePassing):
    r"""Weighted mean aggregation per relation with a separate transform for each:

    .. math::
        h_i' = W_0 h_i + \sum_r W_r \frac{\sum_{j \in N_r(i)} w_{ji} h_j}{\sum_{j \in N_r(i)} w_{ji}} + b

    Shapes: x [N, F_in], rel_edges from `split_relations` -> [N, F_out].
    """

    def __init__(self, in_channels: int, out_channels: int, num_relations: int = 2) -> None:
        super().__init__(aggr="add")
        self.num_relations = num_relations
        self.root = nn.Linear(in_channels, out_channels)
        self.rel = nn.ModuleList(nn.Linear(in_channels, out_channels, bias=False) for _ in range(num_relations))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.root.reset_parameters()
        for lin in self.rel:
            lin.reset_parameters()

    def forward(self, x: Tensor, rel_edges: RelEdges) -> Tensor:
        n, r = rel_edges.num_nodes, rel_edges.num_relations
        # one aggregation for all relations (W_r is linear: the mean of W_r h_j is W_r of the mean)
        agg = self.propagate(rel_edges.edge_index, x=x, edge_weight=rel_edges.edge_weight, size=(n, r * n))  # [R*N, F_in]
        out = self.root(x)  # [N, F_out]
        for lin, part in zip(self.rel, agg.view(r, n, -1)):
            out = out + lin(part)
        return out

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight[:, None] * x_j


class VariancePredictor(nn.Module):
    """x [N, F] -> logit of informativeness [N], as a learned correction of a base prediction.

    The last input column is the closed-form estimate p0; the output is ``logit(p0) + head(h)``
    with `head` initialised to zero, so an untrained model is exactly the closed form and training
    can only move it where neighbours' history says the closed form is wrong.
    """

    def __init__(self, in_channels: int, hidden: int = 16, num_relations: int = 2) -> None:
        super().__init__()
        self.conv1 = RelationalMeanConv(in_channels, hidden, num_relations)
        self.conv2 = RelationalMeanConv(hidden, hidden, num_relations)
        self.head = nn.Linear(hidden, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    @staticmethod
    def base_logit(p0: Tensor) -> Tensor:
        """The logit the learned correction is added to (clamped so 0 and 1 stay finite)."""
        return torch.logit(p0.clamp(1e-3, 1 - 1e-3))

    def forward(self, x: Tensor, rel_edges: RelEdges) -> Tensor:
        base = self.base_logit(x[:, -1])  # [N]
        h = torch.relu(self.conv1(x, rel_edges))  # [N, H]
        h = torch.relu(self.conv2(h, rel_edges))  # [N, H]
        return base + self.head(h).squeeze(-1)  # [N]


class OnlineGNN:
    """Trains `VariancePredictor` on observed groups. Training always, and inference once the graph
    exceeds `full_graph_max` nodes, run on 2-hop blocks with `fanout` sampled neighbours per node
    and hop, so cost follows the nodes asked about, not the size of the graph."""

    def __init__(self, in_channels: int, seed: int = 0, hidden: int = 16, lr: float = 1e-2, train_steps: int = 2,
                 full_graph_max: int = 5_000, fanout: int = 8, max_train_nodes: int = 128) -> None:
        with torch.random.fork_rng():  # seeded init without touching the global RNG
            torch.manual_seed(seed)
            self.model = VariancePredictor(in_channels, hidden)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.train_steps, self.full_graph_max = train_steps, full_graph_max
        self.fanout, self.max_train_nodes = fanout, max_train_nodes
        self.np_rng = np.random.default_rng(seed)  # neighbour sampling for training blocks
        self.updates = 0

    def set_graph(self, edge_index: Tensor, edge_weight: Tensor, edge_type: Tensor, num_nodes: int) -> None:
        """Call when the graph changes; relations are split and normalised once, not per forward."""
        self.graph = (edge_index, edge_weight, edge_type, num_nodes)
        self.full_edges = split_relations(edge_index, edge_weight, edge_type, num_nodes) if num_nodes <= self.full_graph_max else None
        dst = edge_index[1].numpy()
        order = np.argsort(dst, kind="stable")  # incoming edges grouped by target, for sampling
        self.in_edges = order
        self._local = np.full(num_nodes, -1, dtype=np.int64)
        self.in_ptr = np.zeros(num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(dst, minlength=num_nodes), out=self.in_ptr[1:])

    def _sampled_block(self, nodes: np.ndarray) -> tuple[Tensor, RelEdges, Tensor]:
        """A 2-hop block with at most `fanout` sampled incoming edges per node and hop, so a
        training step costs O(len(nodes) * fanout^2) whatever the size of the graph."""
        edge_index, edge_weight, edge_type, n = self.graph
        src_all = edge_index[0].numpy()
        frontier, picked = unique_ids(nodes, n), []
        for _ in range(2):
            starts = self.in_ptr[frontier]
            lens = self.in_ptr[frontier + 1] - starts
            take = np.minimum(lens, self.fanout)
            seg = np.repeat(np.arange(frontier.size), take)
            off = (self.np_rng.random(seg.size) * lens[seg]).astype(np.int64)
            e = self.in_edges[starts[seg] + off]
            picked.append(e)
            frontier = unique_ids(src_all[e], n)
        e = unique_ids(np.concatenate(picked), edge_index.shape[1])
        ei = edge_index.numpy()[:, e]
        subset = unique_ids(np.concatenate([nodes, ei.ravel()]), n)
        self._local[subset] = np.arange(subset.size)  # global -> block position, reset below
        local, pos = self._local[ei], self._local[nodes]
        self._local[subset] = -1
        e = torch.from_numpy(e)
        rel = split_relations(torch.from_numpy(local), edge_weight[e], edge_type[e], subset.size)
        return torch.from_numpy(subset), rel, torch.from_numpy(pos)

    def _subgraph(self, nodes: Tensor) -> tuple[Tensor, RelEdges, Tensor]:
        """(node subset, its relation edges, positions of `nodes` in the subset)."""
        edge_index, edge_weight, edge_type, n = self.graph
        if self.full_edges is not None:
            return torch.arange(n), self.full_edges, nodes
        return self._sampled_block(nodes.numpy())

    @torch.no_grad()
    def predict(self, x: Tensor, nodes: Tensor | None = None) -> Tensor:
        """Informativeness in [0, 1] for `nodes` (all nodes if None)."""
        nodes = torch.arange(x.shape[0]) if nodes is None else nodes
        subset, rel, pos = self._subgraph(nodes)
        return torch.sigmoid(self.model(x[subset], rel)[pos])

    @torch.no_grad()
    def predict_correction(self, x: Tensor, nodes: Tensor) -> Tensor:
        """The learned logit correction to the closed-form estimate (input's last column) at
        `nodes`: what stays valid when the closed form moves but the node was not re-run."""
        subset, rel, pos = self._subgraph(nodes)
        return self.model(x[subset], rel)[pos] - VariancePredictor.base_logit(x[nodes, -1])

    def fit(self, x: Tensor, nodes: np.ndarray, targets: np.ndarray) -> float:
        """A few gradient steps on this step's groups, with the inputs they had before the update.

        No replay of older observations: their current inputs already contain the outcome to be
        predicted, which would teach the model to copy it. First observations of never-tried tasks
        are among these groups, so the model also learns to predict a task from its neighbours.
        """
        if len(nodes) > self.max_train_nodes:  # large batches: a random subset bounds the cost
            keep = self.np_rng.choice(len(nodes), self.max_train_nodes, replace=False)
            nodes, targets = nodes[keep], targets[keep]
        y = torch.from_numpy(targets.astype(np.float32))  # [B]
        subset, rel, pos = self._sampled_block(nodes)
        xs = x[subset]
        loss_val = 0.0
        for _ in range(self.train_steps):
            logits = self.model(xs, rel)[pos]  # [B]
            loss = nn.functional.binary_cross_entropy_with_logits(logits, y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            loss_val = float(loss.detach())
        self.updates += 1
        return loss_val

    def state_dict(self) -> dict:
        return {
            "model": {k: v.clone() for k, v in self.model.state_dict().items()},
            "opt": copy.deepcopy(self.opt.state_dict()),
            "np_rng": self.np_rng.bit_generator.state,
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.np_rng.bit_generator.state = state["np_rng"]
        self.updates = int(state["updates"])
