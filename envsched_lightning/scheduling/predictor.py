"""The learned propagation model: a two-layer relation-aware GNN that predicts each task's next
group informativeness (2 x group reward std, in [0, 1]) from its own features and history and its
neighbours' along both relations, trained online on the groups the trainer already ran.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import k_hop_subgraph


RelEdges = list[tuple[Tensor, Tensor]]
"""Per relation: (edge_index [2, E_r] source -> target, weight [E_r] normalised to sum 1 per target)."""


def split_relations(edge_index: Tensor, edge_weight: Tensor, edge_type: Tensor, num_nodes: int, num_relations: int = 2) -> RelEdges:
    """Split a typed edge list per relation and normalise weights into a weighted mean per target."""
    out = []
    for r in range(num_relations):
        sel = edge_type == r
        ei, w = edge_index[:, sel], edge_weight[sel]  # [2, E_r], [E_r]
        deg = torch.zeros(num_nodes, dtype=w.dtype).index_add_(0, ei[1], w).clamp_min(1e-6)  # [N]
        out.append((ei, w / deg[ei[1]]))
    return out


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
        out = self.root(x)  # [N, F_out]
        for lin, (ei, w) in zip(self.rel, rel_edges):
            out = out + self.propagate(ei, x=lin(x), edge_weight=w)  # transform first: F_out <= F_in
        return out

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight[:, None] * x_j


class VariancePredictor(nn.Module):
    """x [N, F] -> logit of informativeness [N]."""

    def __init__(self, in_channels: int, hidden: int = 16, num_relations: int = 2) -> None:
        super().__init__()
        self.conv1 = RelationalMeanConv(in_channels, hidden, num_relations)
        self.conv2 = RelationalMeanConv(hidden, hidden, num_relations)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: Tensor, rel_edges: RelEdges) -> Tensor:
        h = torch.relu(self.conv1(x, rel_edges))  # [N, H]
        h = torch.relu(self.conv2(h, rel_edges))  # [N, H]
        return self.head(h).squeeze(-1)  # [N]


class OnlineGNN:
    """Trains `VariancePredictor` on observed groups; predicts on subgraphs so cost follows the
    observed nodes and their edges, not N^2 (full-graph inference only while N is small)."""

    def __init__(self, in_channels: int, seed: int = 0, hidden: int = 16, lr: float = 1e-2, train_steps: int = 2,
                 replay: int = 2048, full_graph_max: int = 50_000, fanout: int = 8) -> None:
        with torch.random.fork_rng():  # seeded init without touching the global RNG
            torch.manual_seed(seed)
            self.model = VariancePredictor(in_channels, hidden)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.train_steps, self.full_graph_max = train_steps, full_graph_max
        self.gen = torch.Generator().manual_seed(seed)
        self.replay_idx = np.zeros(0, dtype=np.int64)  # nodes with an observation, for masked replay
        self.replay_y = np.zeros(0, dtype=np.float32)
        self.replay = replay
        self.fanout = fanout
        self.np_rng = np.random.default_rng(seed)  # neighbour sampling for training blocks
        self.updates = 0

    def set_graph(self, edge_index: Tensor, edge_weight: Tensor, edge_type: Tensor, num_nodes: int) -> None:
        """Call when the graph changes; relations are split and normalised once, not per forward."""
        self.graph = (edge_index, edge_weight, edge_type, num_nodes)
        self.full_edges = split_relations(edge_index, edge_weight, edge_type, num_nodes) if num_nodes <= self.full_graph_max else None
        dst = edge_index[1].numpy()
        order = np.argsort(dst, kind="stable")  # incoming edges grouped by target, for sampling
        self.in_edges = order
        self.in_ptr = np.zeros(num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(dst, minlength=num_nodes), out=self.in_ptr[1:])

    def _sampled_block(self, nodes: np.ndarray) -> tuple[Tensor, RelEdges, Tensor]:
        """A 2-hop block with at most `fanout` sampled incoming edges per node and hop, so a
        training step costs O(len(nodes) * fanout^2) whatever the size of the graph."""
        edge_index, edge_weight, edge_type, n = self.graph
        src_all = edge_index[0].numpy()
        frontier, picked = np.unique(nodes), []
        for _ in range(2):
            starts = self.in_ptr[frontier]
            lens = self.in_ptr[frontier + 1] - starts
            take = np.minimum(lens, self.fanout)
            seg = np.repeat(np.arange(frontier.size), take)
            off = (self.np_rng.random(seg.size) * lens[seg]).astype(np.int64)
            e = self.in_edges[starts[seg] + off]
            picked.append(e)
            frontier = np.unique(src_all[e])
        e = torch.from_numpy(np.unique(np.concatenate(picked)))
        ei = edge_index[:, e]
        subset = torch.unique(torch.cat([torch.from_numpy(nodes), ei.flatten()]))
        local = torch.searchsorted(subset, ei)
        rel = split_relations(local, edge_weight[e], edge_type[e], subset.shape[0])
        return subset, rel, torch.searchsorted(subset, torch.from_numpy(nodes))

    def _subgraph(self, nodes: Tensor) -> tuple[Tensor, RelEdges, Tensor]:
        """(node subset, its relation edges, positions of `nodes` in the subset)."""
        edge_index, edge_weight, edge_type, n = self.graph
        if self.full_edges is not None:
            return torch.arange(n), self.full_edges, nodes
        subset, ei, mapping, emask = k_hop_subgraph(nodes, 2, edge_index, relabel_nodes=True, num_nodes=n)
        return subset, split_relations(ei, edge_weight[emask], edge_type[emask], subset.shape[0]), mapping

    @torch.no_grad()
    def predict(self, x: Tensor, nodes: Tensor | None = None) -> Tensor:
        """Informativeness in [0, 1] for `nodes` (all nodes if None)."""
        nodes = torch.arange(x.shape[0]) if nodes is None else nodes
        subset, rel, pos = self._subgraph(nodes)
        return torch.sigmoid(self.model(x[subset], rel)[pos])

    def fit(self, x: Tensor, nodes: np.ndarray, targets: np.ndarray, history_cols: slice) -> float:
        """A few gradient steps: on the fresh groups with their pre-update inputs (learns how history
        evolves), and on replayed observed nodes with their own history masked (learns to predict a
        node from its neighbours, which is what never-tried nodes need)."""
        k = min(self.replay_idx.shape[0], max(len(nodes), 64))
        pick = torch.randperm(self.replay_idx.shape[0], generator=self.gen)[:k].numpy() if k else np.zeros(0, np.int64)
        rep_nodes, rep_y = self.replay_idx[pick], self.replay_y[pick]
        all_nodes = torch.from_numpy(np.concatenate([nodes, rep_nodes]))
        y = torch.from_numpy(np.concatenate([targets, rep_y]).astype(np.float32))
        x_in = x.clone()
        x_in[torch.from_numpy(rep_nodes), history_cols] = 0.0  # masked: as if never observed
        subset, rel, pos = self._sampled_block(all_nodes.numpy())
        xs = x_in[subset]
        loss_val = 0.0
        for _ in range(self.train_steps):
            logits = self.model(xs, rel)[pos]  # [B + R]
            loss = nn.functional.binary_cross_entropy_with_logits(logits, y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            loss_val = float(loss.detach())
        self._remember(nodes, targets)
        self.updates += 1
        return loss_val

    def _remember(self, nodes: np.ndarray, targets: np.ndarray) -> None:
        keep = ~np.isin(self.replay_idx, nodes)  # the latest observation of a node replaces older ones
        self.replay_idx = np.concatenate([self.replay_idx[keep], nodes])[-self.replay :]
        self.replay_y = np.concatenate([self.replay_y[keep], targets.astype(np.float32)])[-self.replay :]

    def state_dict(self) -> dict:
        return {
            "model": {k: v.clone() for k, v in self.model.state_dict().items()},
            "opt": copy.deepcopy(self.opt.state_dict()),
            "gen": self.gen.get_state(),
            "np_rng": self.np_rng.bit_generator.state,
            "replay_idx": self.replay_idx.copy(),
            "replay_y": self.replay_y.copy(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.gen.set_state(state["gen"])
        self.np_rng.bit_generator.state = state["np_rng"]
        self.replay_idx = np.asarray(state["replay_idx"], dtype=np.int64).copy()
        self.replay_y = np.asarray(state["replay_y"], dtype=np.float32).copy()
        self.updates = int(state["updates"])
