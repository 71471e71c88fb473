"""minGRU and minLSTM (Feng et al. 2024, "Were RNNs All We Needed?"): gates that read only x_t.

With no h_{t-1} inside the gates, a layer is a linear recurrence h_t = a_t ⊙ h_{t-1} + b_t whose a_t,
b_t are known for every t at once, so it runs as a parallel scan in log space (Heinsen 2023, the
paper's appendix): log h_t = A_t + logcumsumexp_{s≤t}(log b_s − A_s), A_t = Σ_{j≤t} log a_j. The
candidate goes through the paper's g(x) = x + ½ (x ≥ 0), σ(x) (x < 0), which keeps it positive so its
log exists; h_{-1} = 0, so every h_t is positive too.

Conventions shared with the classic cells (``seqviz.models.recurrent``):

* minGRU's update gate is written in PyTorch's GRU convention, z_t = σ(W_z x_t + b_z) keeps the past:
  h_t = z_t ⊙ h_{t-1} + (1 − z_t) ⊙ h̃_t (the paper's z is 1 − ours), so the same gate name means the
  same thing on every page. Its weight rows are (update, new): ``proj`` is [2H, In].
* minLSTM keeps PyTorch's LSTM order, rows (input, forget, cell): ``proj`` is [3H, In]; its forget and
  input gates are normalised, f′ = f / (f + i), i′ = i / (f + i), and h_t = f′_t ⊙ h_{t-1} + i′_t ⊙ h̃_t.

A layer's ``forward(x, state)`` answers like a single-layer ``nn.GRU`` (batch-first): (h [B, T, H],
last state [1, B, H]), so the language model, its trainer and its state carrying are shared.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def g(x: torch.Tensor) -> torch.Tensor:
    """The paper's candidate activation: x + 0.5 for x >= 0, sigmoid(x) below (continuous, positive)."""
    return torch.where(x >= 0, x + 0.5, torch.sigmoid(x))


def log_g(x: torch.Tensor) -> torch.Tensor:
    """log g(x) without forming g: log(x + 0.5) for x >= 0, log sigmoid(x) = -softplus(-x) below."""
    return torch.where(x >= 0, torch.log(F.relu(x) + 0.5), -F.softplus(-x))


def log_scan(log_a: torch.Tensor, log_b: torch.Tensor) -> torch.Tensor:
    """h_t = a_t h_{t-1} + b_t with h_{-1} = 0, over dim 1, from log a and log b [B, T, H] (a, b > 0).

    h_t = Σ_{s≤t} exp(A_t − A_s) b_s with A_t = Σ_{j≤t} log a_j: one cumsum and one logcumsumexp
    (Heinsen 2023), O(log T) depth, no loop over time.
    """
    a_star = torch.cumsum(log_a, dim=1)
    return torch.exp(a_star + torch.logcumsumexp(log_b - a_star, dim=1))


class MinimalCell(nn.Module):
    """One layer: ``proj`` (x_t -> every gate's pre-activation), a log-space scan, and a plain loop."""

    GATES: tuple[str, ...] = ()  # the rows of ``proj``, in order (its family's ``gates``, seqviz.families.classic)
    RETAIN = 0  # the row block of the gate that multiplies h_{t-1}

    def __init__(self, input_size: int, hidden_size: int, batch_first: bool = True):
        super().__init__()
        if not batch_first:
            raise ValueError("minimal cells are batch-first only")
        self.input_size, self.hidden_size = input_size, hidden_size
        self.proj = nn.Linear(input_size, len(self.GATES) * hidden_size)  # [G*H, In], rows in GATES order

    def coefficients(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """log a_t and log b_t [B, T, H] of h_t = a_t h_{t-1} + b_t."""
        raise NotImplementedError

    def signals(self, x: torch.Tensor, prefix: str) -> dict[str, torch.Tensor]:
        """The layer's gates and candidate [B, T, H] under their trace names (``{prefix}.gates.*``)."""
        raise NotImplementedError

    def step(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """One time step in plain arithmetic: x [B, In], h [B, H] -> h [B, H]."""
        raise NotImplementedError

    def forward(self, x: torch.Tensor, state: torch.Tensor | None = None):
        """x [B, T, In] -> (h [B, T, H], h_T [1, B, H]) by the log-space scan; ``state`` [1, B, H] is h_{-1}."""
        log_a, log_b = self.coefficients(x)
        h = log_scan(log_a, log_b)
        if state is not None:  # h_{-1} != 0 adds (Π_{j≤t} a_j) h_{-1}, in linear space (it may be of any sign)
            h = h + torch.exp(torch.cumsum(log_a, dim=1)) * state[0][:, None]
        return h, h[:, -1:].transpose(0, 1).contiguous()

    def sequential(self, x: torch.Tensor, state: torch.Tensor | None = None):
        """The same as ``forward``, one ``step`` per token (the recurrence as written; for tests and autograd)."""
        h = x.new_zeros(x.shape[0], self.hidden_size) if state is None else state[0]
        hs = []
        for t in range(x.shape[1]):
            h = self.step(x[:, t], h)
            hs.append(h)
        out = torch.stack(hs, dim=1)
        return out, out[:, -1:].transpose(0, 1).contiguous()

    def retention_bias(self) -> torch.Tensor:
        """The bias of the retention gate (a view into ``proj.bias``): what the memory what-if shifts."""
        H = self.hidden_size
        return self.proj.bias[self.RETAIN * H: (self.RETAIN + 1) * H]


class MinGRU(MinimalCell):
    """h_t = z_t ⊙ h_{t-1} + (1 − z_t) ⊙ g(W_n x_t + b_n), z_t = σ(W_z x_t + b_z) (PyTorch's z: it keeps)."""

    GATES = ("update", "new")
    RETAIN = 0

    def coefficients(self, x):
        k, n = self.proj(x).chunk(2, dim=-1)
        return F.logsigmoid(k), F.logsigmoid(-k) + log_g(n)

    def signals(self, x, prefix):
        k, n = self.proj(x).chunk(2, dim=-1)
        return {f"{prefix}.gates.update": torch.sigmoid(k), f"{prefix}.gates.new": g(n)}

    def step(self, x, h):
        k, n = self.proj(x).chunk(2, dim=-1)
        z = torch.sigmoid(k)
        return z * h + (1 - z) * g(n)


class MinLSTM(MinimalCell):
    """h_t = f′_t ⊙ h_{t-1} + i′_t ⊙ g(W_c x_t + b_c), with f′ = f/(f + i), i′ = i/(f + i), f, i sigmoids of x_t."""

    GATES = ("input", "forget", "cell")
    RETAIN = 1

    def coefficients(self, x):
        i, f, c = self.proj(x).chunk(3, dim=-1)
        # log f′ = −softplus(log i − log f), log i′ = −softplus(log f − log i): the paper's normalisation in logs
        diff = F.softplus(-f) - F.softplus(-i)  # log σ(i) − log σ(f)
        return -F.softplus(diff), -F.softplus(-diff) + log_g(c)

    def signals(self, x, prefix):
        i, f, c = self.proj(x).chunk(3, dim=-1)
        i, f = torch.sigmoid(i), torch.sigmoid(f)
        total = f + i
        return {f"{prefix}.gates.input": i / total, f"{prefix}.gates.forget": f / total, f"{prefix}.gates.cell": g(c)}

    def step(self, x, h):
        i, f, c = self.proj(x).chunk(3, dim=-1)
        i, f = torch.sigmoid(i), torch.sigmoid(f)
        return (f * h + i * g(c)) / (f + i)


MINIMAL = {"mingru": MinGRU, "minlstm": MinLSTM}
