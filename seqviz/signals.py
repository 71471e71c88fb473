"""The one table of each cell's signals: which gates and states it has, how each is squashed, which keeps memory.

Plain data, importable without torch or pandas (a page reads it before any model is loaded).
"""

from __future__ import annotations

# The gates a cell computes, in PyTorch's weight order: LSTM (i, f, g, o), GRU (r, z, n).
GATE_NAMES = {
    "rnn": (),
    "gru": ("reset", "update", "new"),
    "lstm": ("input", "forget", "cell", "output"),
}
# Signals a heatmap can show per cell type, gates first, then the states.
SIGNALS = {
    "lstm": ("input", "forget", "cell", "output", "c", "h"),
    "gru": ("reset", "update", "new", "h"),
    "rnn": ("h", "preact"),
}
# Squashing function of each bounded signal; c and preact are unbounded.
SQUASH = {"input": "sigmoid", "forget": "sigmoid", "output": "sigmoid", "reset": "sigmoid",
          "update": "sigmoid", "cell": "tanh", "new": "tanh", "h": "tanh"}
# Signals whose per-token mean is drawn under the text: the gates (RNN has none: its h).
MEAN_SIGNALS = {"lstm": GATE_NAMES["lstm"], "gru": GATE_NAMES["gru"], "rnn": ("h",)}
# Weight groups per cell: RNN 1, GRU 3 (r, z, n), LSTM 4 (i, f, g, o).
GROUPS = {"rnn": 1, "gru": 3, "lstm": 4}


def retention_name(cell: str) -> str:
    """The gate that multiplies the old state: LSTM f; GRU z in PyTorch's convention.

    PyTorch's GRU computes h_t = (1 - z_t) * n_t + z_t * h_{t-1}, so there z keeps the past
    (Cho et al. 2014 write the complement; the textbook's 1 - z is PyTorch's z).
    """
    if cell == "lstm":
        return "forget"
    if cell == "gru":
        return "update"
    raise ValueError("a plain RNN has no gate that keeps its state; pick an LSTM or GRU")
