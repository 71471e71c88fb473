"""seqviz's own cells: the tanh RNN, GRU and LSTM (PyTorch's fused layers, ``seqviz.models.recurrent``) and minGRU,
minLSTM (Feng et al. 2024, ``seqviz.models.minimal``), as entries of the family table.

Their gates are named in PyTorch's weight order, LSTM (i, f, g, o) and GRU (r, z, n); minGRU's one projection is
(update, new) and minLSTM's (input, forget, cell). PyTorch's GRU computes h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_(t−1),
so there z keeps the past (Cho et al. 2014 write the complement; the textbook's 1 − z is PyTorch's z): the same
gate name means the same thing on every page, minGRU's included.
"""

from __future__ import annotations

from types import MappingProxyType as Frozen

from seqviz.families import Family, Linear, register
from seqviz.text import N_

NO_MEMORY = N_("A plain RNN has no gate that keeps its state: its memory is rewritten through tanh every step.")
NO_LINEAR = N_("A tanh RNN has no gated linear form: tanh mixes every earlier input into h_t, so no token's share "
               "of its memory can be read off. The gradient page's connectivity shows how much each input still "
               "matters.")
NO_W_HH = N_("A minGRU or minLSTM has no W_hh: its gates read only the input x_t, so nothing here would change. "
             "Pick an RNN, GRU or LSTM checkpoint.")
ONLY_LSTM = N_("Only an LSTM has a forget gate; pick an LSTM checkpoint.")
ONLY_RNN = N_("This bench is about W_hh of a tanh RNN, h_t = tanh(W_hh h_(t−1) + W_xh x_t + b): what is shown "
              "here is a tanh RNN's.")
GRU_NOTE = N_("PyTorch's GRU keeps z·h_(t−1), so its update gate z is the retention.")
CLASSIC = frozenset({"recurrent_weights", "weight_groups", "written_jacobians"})
GATED = frozenset({"memory", "linear_form"})

RNN = register(Family(
    name="rnn", title="RNN", description=N_("tanh RNN (Elman): h_t = tanh(W_hh h_(t−1) + W_xh x_t + b)"),
    leaves=("h", "preact"), signals=("h", "preact"), unbounded=(), mean_signals=("h",), weight_groups=1,
    has=CLASSIC | {"tanh_recurrence"}, colour="#7A7A2E",
    why=Frozen({"memory": NO_MEMORY, "retention_bias": NO_MEMORY, "cell_path": ONLY_LSTM, "linear_form": NO_LINEAR})))

GRU = register(Family(
    name="gru", title="GRU", description=N_("GRU (Cho et al. 2014): reset r, update z, candidate h̃"),
    leaves=("h", "gates.reset", "gates.update", "gates.new"), signals=("reset", "update", "new", "h"),
    gates=("reset", "update", "new"), mean_signals=("reset", "update", "new"), retention="update", symbol="z",
    retention_note=GRU_NOTE, weight_groups=3, retention_chunk=("bias_hh_l0", 1, 3),
    linear=Linear(decay="gates.update", write=("1-gates.update", "gates.new"), state="h"),
    has=CLASSIC | GATED | {"retention_bias"}, colour="#56B4E9",
    why=Frozen({"tanh_recurrence": ONLY_RNN, "cell_path": ONLY_LSTM})))

LSTM = register(Family(
    name="lstm", title="LSTM", description=N_("LSTM (Hochreiter & Schmidhuber 1997): gates i, f, o, candidate g̃, "
                                              "cell state c"),
    leaves=("h", "c", "gates.input", "gates.forget", "gates.cell", "gates.output"),
    signals=("input", "forget", "cell", "output", "c", "h"), gates=("input", "forget", "cell", "output"),
    mean_signals=("input", "forget", "cell", "output"), memory="c", retention="forget", symbol="f",
    edit_states=("c", "h"), same_units=("h",), weight_groups=4, retention_chunk=("bias_hh_l0", 1, 4),
    linear=Linear(decay="gates.forget", write=("gates.input", "gates.cell"), state="c"),
    has=CLASSIC | GATED | {"retention_bias", "cell_path"}, colour="#009E73",
    why=Frozen({"tanh_recurrence": ONLY_RNN})))

MINIMAL_WHY = Frozen({"recurrent_weights": NO_W_HH, "tanh_recurrence": ONLY_RNN, "cell_path": ONLY_LSTM})
MINIMAL = frozenset({"memory", "linear_form", "retention_bias", "weight_groups", "written_jacobians"})
# minGRU's and minLSTM's candidate is the paper's g(x) = x + 0.5 or sigmoid(x) (positive, unbounded above), their
# h a positive mix of candidates.
MINGRU = register(Family(
    name="mingru", title="minGRU", description=N_("minGRU (Feng et al. 2024): gates from x_t alone, a parallel scan"),
    leaves=("h", "gates.update", "gates.new"), signals=("update", "new", "h"), gates=("update", "new"),
    mean_signals=("update",), unbounded=("new", "h"), retention="update", symbol="z", weight_groups=2,
    retention_chunk=("proj.bias", 0, 2), linear=Linear(decay="gates.update", write=("1-gates.update", "gates.new"), state="h"),
    has=MINIMAL, colour="#0072B2", why=MINIMAL_WHY))

MINLSTM = register(Family(
    name="minlstm", title="minLSTM", description=N_("minLSTM (Feng et al. 2024): normalised gates f′, i′ from x_t "
                                                    "alone"),
    leaves=("h", "gates.input", "gates.forget", "gates.cell"), signals=("input", "forget", "cell", "h"),
    gates=("input", "forget", "cell"), mean_signals=("input", "forget"), unbounded=("cell", "h"),
    retention="forget", symbol="f", weight_groups=3, retention_chunk=("proj.bias", 1, 3),
    linear=Linear(decay="gates.forget", write=("gates.input", "gates.cell"), state="h"),
    has=MINIMAL, colour="#CC79A7", why=MINIMAL_WHY))
