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


class RelationalMeanConv(MessagePassing):
    r"""Weighted mean aggregation per relation with a separate transform for each:

    .. math::
        h_i' = W_0 h_i + \sum_r W_r \frac{\sum_{j \in N_r(i)} w_{ji} h_j}{\sum_{j \in N_r(i)} w_{ji}} + b

    Shapes: x [N, F_in], edge_index [2, E] (source -> target), edge_weight [E], edge_type [E] -> [N, F_out].
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

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor, edge_type: Tensor) -> Tensor:
        out = self.root(x)  # [N, F_out]
        for r, lin in enumerate(self.rel):
            sel = edge_type == r
            ei, w = edge_index[:, sel], edge_weight[sel]  # [2, E_r], [E_r]
            deg = torch.zeros(x.shape[0], dtype=x.dtype).index_add_(0, ei[1], w).clamp_min(1e-6)  # [N]
            agg = self.propagate(ei, x=x, edge_weight=w)  # [N, F_in]
            out = out + lin(agg / deg[:, None])
        return out

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight[:, None] * x_j


class VariancePredictor(nn.Module):
    """x [N, F] -> logit of informativeness [N]."""

    def __init__(self, in_channels: int, hidden: int = 32, num_relations: int = 2) -> None:
        super().__init__()
        self.conv1 = RelationalMeanConv(in_channels, hidden, num_relations)
        self.conv2 = RelationalMeanConv(hidden, hidden, num_relations)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor, edge_type: Tensor) -> Tensor:
        h = torch.relu(self.conv1(x, edge_index, edge_weight, edge_type))  # [N, H]
        h = torch.relu(self.conv2(h, edge_index, edge_weight, edge_type))  # [N, H]
        return self.head(h).squeeze(-1)  # [N]


class OnlineGNN:
    """Trains `VariancePredictor` on observed groups; predicts on subgraphs so cost follows the
    observed nodes and their edges, not N^2 (full-graph inference only while N is small)."""

    def __init__(self, in_channels: int, seed: int = 0, hidden: int = 32, lr: float = 3e-3, train_steps: int = 4,
                 replay: int = 2048, full_graph_max: int = 200_000) -> None:
        with torch.random.fork_rng():  # seeded init without touching the global RNG
            torch.manual_seed(seed)
            self.model = VariancePredictor(in_channels, hidden)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.train_steps, self.full_graph_max = train_steps, full_graph_max
        self.gen = torch.Generator().manual_seed(seed)
        self.replay_idx = np.zeros(0, dtype=np.int64)  # nodes with an observation, for masked replay
        self.replay_y = np.zeros(0, dtype=np.float32)
        self.replay = replay
        self.updates = 0

    def _subgraph(self, nodes: Tensor, edge_index: Tensor, edge_weight: Tensor, edge_type: Tensor, n: int):
        if n <= self.full_graph_max:
            return torch.arange(n), edge_index, edge_weight, edge_type, nodes
        subset, ei, mapping, emask = k_hop_subgraph(nodes, 2, edge_index, relabel_nodes=True, num_nodes=n)
        return subset, ei, edge_weight[emask], edge_type[emask], mapping

    @torch.no_grad()
    def predict(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor, edge_type: Tensor, nodes: Tensor | None = None) -> Tensor:
        """Informativeness in [0, 1] for `nodes` (all nodes if None)."""
        n = x.shape[0]
        nodes = torch.arange(n) if nodes is None else nodes
        subset, ei, w, et, pos = self._subgraph(nodes, edge_index, edge_weight, edge_type, n)
        return torch.sigmoid(self.model(x[subset], ei, w, et)[pos])

    def fit(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor, edge_type: Tensor, nodes: np.ndarray,
            targets: np.ndarray, history_cols: slice) -> float:
        """A few gradient steps: on the fresh groups with their pre-update inputs (learns how history
        evolves), and on replayed observed nodes with their own history masked (learns to predict a
        node from its neighbours, which is what never-tried nodes need)."""
        n = x.shape[0]
        k = min(self.replay_idx.shape[0], max(len(nodes), 64))
        pick = torch.randperm(self.replay_idx.shape[0], generator=self.gen)[:k].numpy() if k else np.zeros(0, np.int64)
        rep_nodes, rep_y = self.replay_idx[pick], self.replay_y[pick]
        all_nodes = torch.from_numpy(np.concatenate([nodes, rep_nodes]))
        y = torch.from_numpy(np.concatenate([targets, rep_y]).astype(np.float32))
        x_in = x.clone()
        x_in[torch.from_numpy(rep_nodes), history_cols] = 0.0  # masked: as if never observed
        subset, ei, w, et, pos = self._subgraph(all_nodes, edge_index, edge_weight, edge_type, n)
        xs = x_in[subset]
        loss_val = 0.0
        for _ in range(self.train_steps):
            logits = self.model(xs, ei, w, et)[pos]  # [B + R]
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
            "replay_idx": self.replay_idx.copy(),
            "replay_y": self.replay_y.copy(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.gen.set_state(state["gen"])
        self.replay_idx = np.asarray(state["replay_idx"], dtype=np.int64).copy()
        self.replay_y = np.asarray(state["replay_y"], dtype=np.float32).copy()
        self.updates = int(state["updates"])
