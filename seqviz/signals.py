"""The one table of each cell's signals: which gates and states it has, how each is squashed, which keeps memory.

Plain data, importable without torch or pandas (a page reads it before any model is loaded).
"""

from __future__ import annotations

# The gates a cell computes, in PyTorch's weight order: LSTM (i, f, g, o), GRU (r, z, n).
GATE_NAMES = {
    "rnn": (),
    "gru": ("reset", "update", "new"),
    "lstm": ("input", "forget", "cell", "output"),
    # minGRU / minLSTM (seqviz.models.minimal): rows of their one input projection; no recurrent weights
    "mingru": ("update", "new"),
    "minlstm": ("input", "forget", "cell"),
    # transformers Mamba (seqviz.hf_mamba): the decay exp(Δ_t A) of each channel's slowest state is its
    # forget gate in disguise, SiLU(z_t) its output gate
    "mamba": ("decay", "output_z"),
}
# Signals a heatmap can show per cell type, gates first, then the states.
SIGNALS = {
    "lstm": ("input", "forget", "cell", "output", "c", "h"),
    "gru": ("reset", "update", "new", "h"),
    "rnn": ("h", "preact"),
    "mingru": ("update", "new", "h"),
    "minlstm": ("input", "forget", "cell", "h"),
    "mamba": ("decay", "output_z", "s", "h"),  # s: the state that decay keeps; h: the residual stream
}
# Squashing function of each bounded signal; c and preact are unbounded.
SQUASH = {"input": "sigmoid", "forget": "sigmoid", "output": "sigmoid", "reset": "sigmoid",
          "update": "sigmoid", "cell": "tanh", "new": "tanh", "h": "tanh",
          "decay": "exp"}  # exp(Δ A) with Δ > 0, A < 0: in (0, 1) like a sigmoid gate
# Per cell, the signals SQUASH's entry does not bound: the minimal cells' candidate is the paper's
# g(x) = x + 0.5 or sigmoid(x) (positive, unbounded above) and their h a positive mix of candidates.
UNBOUNDED = {"mingru": ("new", "h"), "minlstm": ("cell", "h"), "mamba": ("h",)}  # Mamba's h: a residual stream
# Signals whose per-token mean is drawn under the text: the gates (RNN has none: its h).
MEAN_SIGNALS = {"lstm": GATE_NAMES["lstm"], "gru": GATE_NAMES["gru"], "rnn": ("h",),
                "mingru": ("update",), "minlstm": ("input", "forget"), "mamba": ("decay",)}  # bounded ones only (on one 0-1 axis)
# Weight groups per cell: RNN 1, GRU 3 (r, z, n), LSTM 4 (i, f, g, o), minGRU 2 (z, h̃), minLSTM 3 (i, f, h̃).
GROUPS = {"rnn": 1, "gru": 3, "lstm": 4, "mingru": 2, "minlstm": 3}


def squash(cell: str, signal: str) -> str | None:
    """How ``signal`` of ``cell`` is bounded: "sigmoid", "tanh", or None (unbounded)."""
    return None if signal in UNBOUNDED.get(cell, ()) else SQUASH.get(signal)


def retention_name(cell: str) -> str:
    """The gate that multiplies the old state: LSTM and minLSTM f; GRU and minGRU z in PyTorch's convention;
    Mamba's decay exp(Δ·A).

    PyTorch's GRU computes h_t = (1 - z_t) * n_t + z_t * h_{t-1}, so there z keeps the past
    (Cho et al. 2014 write the complement; the textbook's 1 - z is PyTorch's z).
    """
    if cell in ("lstm", "minlstm"):
        return "forget"
    if cell in ("gru", "mingru"):
        return "update"
    if cell == "mamba":
        return "decay"  # s_t = exp(Δ_t A) s_(t-1) + Δ_t B_t u_t (Gu & Dao 2023, eq. 2a with Ā = exp(ΔA))
    raise ValueError("a plain RNN has no gate that keeps its state; pick an LSTM or GRU")
