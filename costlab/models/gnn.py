"""A small relational message-passing GNN over graph features, trained to rank within a workload."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from costlab.features._base import Features, GraphIndex
from costlab.models._base import MODELS
from costlab.models._common import (
    TrainedModel,
    TrainingData,
    check_choice,
    check_number,
    file_in,
    group_codes,
    normalized_throughput,
)

WEIGHTS_FILE = "weights.pt"
LOSSES = ("pairwise", "listwise")
UPDATE_MODES = ("refit", "warm")
EDGE_DIRECTIONS = ("both", "forward")


@lru_cache(maxsize=None)
def _net_class():
    """The torch modules, built once on first use so that importing costlab.models stays cheap."""
    import torch
    from torch import nn
    from torch_geometric.nn import MessagePassing, global_max_pool, global_mean_pool

    class EdgeTypeConv(MessagePassing):
        r"""Mean of neighbour states shifted by a learned edge-type embedding.

        .. math:: h_i' = W_1 h_i + W_2 \,\mathrm{mean}_{j \in N(i)} (h_j + e_{r_{ij}})

        Shapes: x [n_nodes, channels], edge_index [2, n_edges] (source, target),
        edge_type [n_edges] -> [n_nodes, channels]
        """

        def __init__(self, channels: int, num_edge_types: int):
            super().__init__(aggr="mean")
            self.edge_embed = nn.Embedding(num_edge_types, channels)
            self.lin_root = nn.Linear(channels, channels)
            self.lin_neighbours = nn.Linear(channels, channels, bias=False)

        def forward(self, x, edge_index, edge_type):
            return self.lin_root(x) + self.lin_neighbours(self.propagate(edge_index, x=x, edge_type=edge_type))

        def message(self, x_j, edge_type):
            return x_j + self.edge_embed(edge_type)

    class RankGNN(nn.Module):
        """Embed, ``layers`` x residual (EdgeTypeConv, LayerNorm, ReLU), mean and max pooling,
        then an MLP to one score per graph.

        Shapes:
            x: [n_nodes, in_dim] (raw; standardized inside with the stored mean/std),
            edge_index: [2, n_edges], edge_type: [n_edges], batch: [n_nodes] -> [num_graphs]
        """

        def __init__(self, in_dim: int, hidden: int, layers: int, num_edge_types: int):
            super().__init__()
            self.register_buffer("x_mean", torch.zeros(in_dim))
            self.register_buffer("x_std", torch.ones(in_dim))
            self.embed = nn.Linear(in_dim, hidden)
            self.convs = nn.ModuleList([EdgeTypeConv(hidden, num_edge_types) for _ in range(layers)])
            self.norms = nn.ModuleList([nn.LayerNorm(hidden) for _ in range(layers)])
            self.head = nn.Sequential(nn.Linear(in_dim + 2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def forward(self, x, edge_index, edge_type, batch, num_graphs: int):
            # a missing (NaN) or infinite value: the mean
            x = torch.nan_to_num((x - self.x_mean) / self.x_std, nan=0.0, posinf=0.0, neginf=0.0)
            h = torch.relu(self.embed(x))
            for conv, norm in zip(self.convs, self.norms):
                h = h + torch.relu(norm(conv(h, edge_index, edge_type)))
            pooled = [global_mean_pool(x, batch, num_graphs), global_mean_pool(h, batch, num_graphs),
                      global_max_pool(h, batch, num_graphs)]
            return self.head(torch.cat(pooled, dim=1)).squeeze(-1)

    return RankGNN


@MODELS.register("gnn")
class GNNModel(TrainedModel):
    """A message-passing GNN (PyG) over ``graph`` features, trained with a ranking loss.

    Training (CPU, a few seconds on 2000 candidates): mini-batches hold candidates of one
    workload group; the target is the normalized throughput (failures 0, below every
    success).

    - ``loss="pairwise"``: RankNet, ``softplus(s_j - s_i)`` over pairs with ``y_i > y_j``.
    - ``loss="listwise"``: ListNet, cross-entropy between ``softmax(y / temperature)``
      over the successes and ``softmax(s)`` within the batch, plus RankNet between
      successes and failures (so failures rank last).

    With at least 50 samples, about ``val_fraction`` of each group is held out; training
    stops after ``patience`` epochs without a better pairwise accuracy on it and keeps the
    best weights; a warm update counts the weights it starts from as its epoch 0, so it keeps
    them when no epoch of the update validates better. Whether a sample is held out is drawn
    once per row, from the seed of the first fit (kept when the model is reseeded and saved),
    and rows an earlier training used without validation (under 50 samples) are never held
    out: a warm update never validates on a row the model has learned.
    Edge types at or above the number seen in ``fit`` share the last type's weights. The
    graph's edges point from outer to inner scopes and along the data flow; with
    ``edge_directions="both"`` each also runs backwards as a type of its own, so that a
    loop learns what it encloses and a buffer who reads it.
    Randomness (initial weights, batches, the split) comes from ``seed`` only; torch's
    global generator is restored after initialisation. Threads: torch's global setting.

    Parameters:
        hidden: width of node states (<= 64).
        layers: message-passing layers (1-8; 2-4 are typical).
        edge_directions: "both" (each edge also reversed, as its own type) or "forward"
            (the graph's edges only, as models saved before this option read them).
        loss: "pairwise" or "listwise"; temperature: ListNet's target temperature.
        learning_rate, weight_decay: AdamW.
        batch_size: candidates per mini-batch.
        max_steps, max_epochs: the training budget: at most ``max_epochs`` epochs and
            about ``max_steps`` optimizer steps (whole epochs), whichever comes first.
        patience, val_fraction: the early stop (``val_fraction`` 0 .. 0.5).
        update_mode: "refit" (from scratch on all data) or "warm" (continue from the
            current weights for at most ``update_epochs`` epochs).
        seed: the model's seed.

    After ``fit`` or ``update``: ``epochs_``, the epochs the last training ran, and
    ``kept_epoch_``, the epoch whose weights it kept (0: a warm update kept the weights it
    started from; None for a model saved before it was recorded).
    """

    name = "gnn"
    default_features = "graph"
    feature_kinds = ("graph",)

    def __init__(self, hidden: int = 32, layers: int = 2, loss: str = "pairwise", temperature: float = 0.1,
                 learning_rate: float = 3e-3, weight_decay: float = 1e-4, batch_size: int = 128,
                 max_steps: int = 150, max_epochs: int = 100, patience: int = 8, val_fraction: float = 0.15,
                 update_mode: str = "refit", update_epochs: int = 10, edge_directions: str = "both",
                 seed: int = 0):
        self.hidden = hidden
        self.layers = layers
        self.loss = loss
        self.temperature = temperature
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_steps = max_steps
        self.max_epochs = max_epochs
        self.patience = patience
        self.val_fraction = val_fraction
        self.update_mode = update_mode
        self.update_epochs = update_epochs
        self.edge_directions = edge_directions
        self.seed = seed

    # -- training ----------------------------------------------------------------------
    def check_params(self) -> None:
        check_choice("gnn", "loss", self.loss, LOSSES)
        check_choice("gnn", "update_mode", self.update_mode, UPDATE_MODES)
        check_choice("gnn", "edge_directions", self.edge_directions, EDGE_DIRECTIONS)
        check_number("gnn", "hidden", self.hidden, at_least=1, at_most=64, integer=True)
        check_number("gnn", "layers", self.layers, at_least=1, at_most=8, integer=True)
        for param in ("batch_size", "max_steps", "max_epochs", "patience", "update_epochs"):
            check_number("gnn", param, getattr(self, param), at_least=1, integer=True)
        check_number("gnn", "learning_rate", self.learning_rate, above=0)
        check_number("gnn", "temperature", self.temperature, above=0)
        check_number("gnn", "weight_decay", self.weight_decay, at_least=0)
        check_number("gnn", "val_fraction", self.val_fraction, at_least=0, at_most=0.5)

    def _new_net(self, in_dim: int, num_relations: int):
        import warnings

        import torch

        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            # PyG's MessagePassing still calls torch.jit.script while building a layer
            warnings.filterwarnings("ignore", message=".*torch.jit.script.* is deprecated", category=DeprecationWarning)
            torch.manual_seed(self.seed)
            both = self.edge_directions == "both"
            return _net_class()(in_dim, self.hidden, self.layers, 2 * num_relations if both else num_relations)

    def _edges(self, edge_index: np.ndarray, edge_type: np.ndarray):
        """The graph's edges as the net reads them: unseen types clipped to the last seen one,
        and with ``edge_directions="both"`` each edge reversed too, typed ``type + num_relations_``."""
        import torch

        edge_index = np.asarray(edge_index, dtype=np.int64)
        edge_type = np.clip(np.asarray(edge_type, dtype=np.int64), 0, self.num_relations_ - 1)
        if self.edge_directions == "both":
            edge_index = np.concatenate([edge_index, edge_index[::-1]], axis=1)
            edge_type = np.concatenate([edge_type, edge_type + self.num_relations_])
        return torch.from_numpy(np.ascontiguousarray(edge_index)), torch.from_numpy(edge_type)

    def _fit(self, data: TrainingData) -> None:
        import torch

        self.check_params()
        g = data.features.graphs
        self.num_relations_ = int(g.edge_type.max()) + 1 if g.edge_type.size else 1
        self.net_ = self._new_net(g.node_features.shape[1], self.num_relations_)
        x = g.node_features.astype(np.float64)
        if x.shape[0]:  # NaN cells are missing values, as the tree models read them; so are inf cells
            known = np.isfinite(x)
            count = known.sum(axis=0)
            mean = np.where(known, x, 0.0).sum(axis=0) / np.maximum(count, 1)
            std = np.sqrt(np.where(known, (x - mean) ** 2, 0.0).sum(axis=0) / np.maximum(count, 1))
            self.net_.x_mean.copy_(torch.from_numpy(mean).float())
            self.net_.x_std.copy_(torch.from_numpy(np.where(std > 1e-6, std, 1.0)).float())
        self.split_seed_, self.unvalidated_rows_ = self.seed, 0  # weights from scratch: nothing learned yet
        self.epochs_, self.kept_epoch_ = self._train(data, self.max_epochs, np.random.default_rng(self.seed))

    def _update(self, data: TrainingData, new: TrainingData) -> None:
        if self.update_mode == "refit":
            self._fit(data)
            return
        rng = np.random.default_rng([self.seed, len(data)])
        before = {k: t.clone() for k, t in self.net_.state_dict().items()}  # trained in place below
        try:
            self.epochs_, self.kept_epoch_ = self._train(data, self.update_epochs, rng, start_state=before)
        except BaseException:  # a failed update leaves the weights as they were, as the rest of the model
            self.net_.load_state_dict(before)
            raise

    def _held_out(self, n_rows: int) -> np.ndarray:
        """The validation rows among ``n_rows`` (a mask): row i is held out when the i-th uniform
        draw of the first fit's seed is under ``val_fraction``, and no earlier training used it
        without validation. The draws are a fixed stream, so a row keeps its side as rows are
        appended."""
        if n_rows < 50:
            return np.zeros(n_rows, dtype=bool)
        held_out = np.random.default_rng([self.split_seed_, 0x5EED]).random(n_rows) < self.val_fraction
        held_out[:self.unvalidated_rows_] = False
        return held_out

    def _loss(self, scores, y):
        import torch
        import torch.nn.functional as F

        better = (y[:, None] - y[None, :]) > 1e-6  # better[i, j]: i is faster than j (failures: y = 0)
        if self.loss == "pairwise":
            return F.softplus(scores[None, :] - scores[:, None])[better].mean()
        ok = y > 0  # listwise: ListNet over the successes, and RankNet between successes and failures
        target = torch.softmax(torch.where(ok, y / self.temperature, -torch.inf), 0)
        loss = -(target * torch.log_softmax(scores, 0)).sum()
        versus_failed = better & ~ok[None, :]
        if versus_failed.any():
            loss = loss + F.softplus(scores[None, :] - scores[:, None])[versus_failed].mean()
        return loss

    def _train(self, data: TrainingData, max_epochs: int, rng: np.random.Generator,
               start_state: dict | None = None) -> tuple[int, int]:
        """Train; return the epochs run and the epoch whose weights are kept (the best on the
        validation rows; the last when there are none). ``start_state``: a copy of the weights
        training starts from (a warm update), epoch 0, kept unless an epoch validates better.

        On one torch thread, whatever the machine: torch's sums depend on how many threads
        share them, and through them the kept epoch (``costlab train`` of one seed kept epoch 4
        on 2 threads and epoch 3 on 1, its top-1 score 0.01 against 0.16), so a model trained
        offline would not reproduce on another core count, nor equal the same training in a
        session (which runs torch on one thread beside the builder)."""
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self._epochs(data, max_epochs, rng, start_state)
        finally:
            torch.set_num_threads(threads)

    def _epochs(self, data: TrainingData, max_epochs: int, rng: np.random.Generator,
                start_state: dict | None) -> tuple[int, int]:
        import torch

        index = GraphIndex(data.features.graphs)

        def select(idx):
            g = index.select(idx)
            return (torch.from_numpy(g.node_features), *self._edges(g.edge_index, g.edge_type),
                    torch.from_numpy(g.batch), g.num_graphs)

        y_all = torch.from_numpy(normalized_throughput(data.latency_s, data.groups)).float()
        codes, n_groups = group_codes(data.groups)
        members = [np.flatnonzero(codes == c) for c in range(n_groups)]

        def useful(idx):  # a batch teaches only if its targets differ (so one of them succeeded)
            return idx.size >= 2 and float(y_all[idx].max() - y_all[idx].min()) > 1e-6

        held_out = self._held_out(len(data))
        if not any(useful(m[held_out[m]]) for m in members):  # nothing to validate on (say, many groups of
            held_out[:] = False  # 2 rows, each holding out at most one): those rows are trained on instead
        if not held_out.any():  # every row is trained on, without validation
            self.unvalidated_rows_ = len(data)
        val = [m[held_out[m]] for m in members]
        train = [m[~held_out[m]] for m in members]

        def batch_loss(idx):
            return self._loss(self.net_(*select(idx)), y_all[idx])

        def val_error() -> float:  # 1 - pairwise accuracy over the held-out pairs
            wrong = total = 0
            for idx in val_batches:
                scores, y = self.net_(*select(idx)), y_all[idx]
                better = (y[:, None] - y[None, :]) > 1e-6
                wrong += int((~(scores[:, None] > scores[None, :]))[better].sum())  # a NaN score orders nothing
                total += int(better.sum())
            return wrong / total

        val_batches = [v for v in val if useful(v)]
        opt = torch.optim.AdamW(self.net_.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay,
                                foreach=True)
        best, best_state, waited, epoch, kept = np.inf, None, 0, 0, 0
        if start_state is not None and val_batches:
            self.net_.eval()
            with torch.no_grad():
                best = val_error()
            best_state = start_state
        # an epoch takes each group's candidates in its own batches, at least one per group
        steps_per_epoch = sum(max(1, -(-t.size // self.batch_size)) for t in train if t.size)
        max_epochs = min(max_epochs, max(1, -(-self.max_steps // max(1, steps_per_epoch))))
        for epoch in range(1, max_epochs + 1):
            batches = [chunk for t in train
                       for chunk in np.array_split(rng.permutation(t), max(1, -(-t.size // self.batch_size)))]
            batches = [batches[i] for i in rng.permutation(len(batches)) if useful(batches[i])]
            if not batches:
                break
            self.net_.train()
            for idx in batches:
                opt.zero_grad()
                loss = batch_loss(idx)
                loss.backward()
                opt.step()
            if not val_batches:
                continue
            self.net_.eval()
            with torch.no_grad():
                v = val_error()
            finite = all(bool(torch.isfinite(t).all()) for t in self.net_.parameters())
            if v < best - 1e-4 and finite:  # diverged (NaN) weights are never the ones kept
                best, waited, kept = v, 0, epoch
                best_state = {k: t.clone() for k, t in self.net_.state_dict().items()}
            else:
                waited += 1
                if waited >= self.patience:
                    break
        if best_state is not None:
            self.net_.load_state_dict(best_state)
        self.net_.eval()
        return epoch, (kept if best_state is not None else epoch)

    # -- prediction and files -------------------------------------------------------------
    def _predict(self, features: Features) -> np.ndarray:
        import torch

        g = features.graphs
        with torch.no_grad():
            out = self.net_(
                torch.from_numpy(np.ascontiguousarray(g.node_features, dtype=np.float32)),
                *self._edges(g.edge_index, g.edge_type),
                torch.from_numpy(np.asarray(g.batch, dtype=np.int64)),
                g.num_graphs,
            )
        return out.numpy()

    def _save_state(self, path: Path) -> dict:
        import torch

        torch.save(self.net_.state_dict(), path / WEIGHTS_FILE)
        return {"weights": WEIGHTS_FILE, "in_dim": int(self.net_.embed.in_features),
                "num_relations": self.num_relations_, "epochs": self.epochs_,
                "kept_epoch": self.kept_epoch_,
                "split_seed": self.split_seed_, "unvalidated_rows": self.unvalidated_rows_,
                "edge_directions": self.edge_directions}

    def _load_state(self, path: Path, state: dict) -> None:
        import torch

        self.edge_directions = state.get("edge_directions", "forward")  # saved before the option: forward
        self.check_params()
        self.num_relations_ = int(state["num_relations"])
        self.epochs_ = int(state["epochs"])
        kept = state.get("kept_epoch")  # None: saved before it was recorded (the best epoch, unknown)
        self.kept_epoch_ = None if kept is None else int(kept)
        # saved before the split was kept: its rows' sides are unknown, so none is held out later
        self.split_seed_ = int(state.get("split_seed", self.seed))
        self.unvalidated_rows_ = int(state.get("unvalidated_rows", len(self.data_)))
        self.net_ = self._new_net(int(state["in_dim"]), self.num_relations_)
        self.net_.load_state_dict(torch.load(file_in(path, state["weights"], "weights"), weights_only=True))
        self.net_.eval()
