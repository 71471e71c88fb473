"""transformers' xLSTM (mLSTM blocks with a matrix memory, ``seqviz.hf_xlstm``), as an entry of the family table.

Each head of each block keeps a matrix memory C_t = f_t C_(t−1) + i_t v_t k_tᵀ with an exponential input gate and a
normaliser n_t = f_t n_(t−1) + i_t k_t, read by the query: h̃_t = C_t q_t / max(|n_tᵀ q_t|, 1) (Beck et al. 2024,
"xLSTM", eqs. 19-27; transformers computes it stabilised by m_t, which cancels in h̃). transformers' xLSTM is the
"xLSTM 7B" architecture (Beck et al. 2025): mLSTM blocks only, no sLSTM. What seqviz calls a *unit* of it is one
value channel of one head: the column j of that head's C (its key rows), read out as c_t[j] = h̃_t[j]. The forget
gate f_t is one number per head, carried by each of the head's columns (as Mamba-2's decay by its channels).
"""

from __future__ import annotations

from types import MappingProxyType as Frozen

from seqviz.families import Family, Linear, register
from seqviz.text import N_

# What a block's trace holds: h the residual stream after the block; q, k, v the head-split projections; the
# stabilised input gate exp(ĩ − m), the forget gate σ(f̃) and the output gate σ(õ) per unit; the stabiliser m and
# the normaliser n; c each unit's read-out h̃; C the matrix memory [T, units, key dims], on request only.
LEAVES = ("h", "q", "k", "v", "gates.input", "gates.forget", "gates.output", "m", "n", "c", "C")
ON_REQUEST = ("C",)
WHY = Frozen({
    "tanh_recurrence": N_("This bench is about W_hh of a tanh RNN; an xLSTM has no W_hh: its memory is a matrix "
                          "per head, C_t = f_t·C_(t−1) + i_t·v_t·k_tᵀ, so what is shown here is the tanh RNN's."),
    "recurrent_weights": N_("These changes edit W_hh or the forget-gate bias of seqviz's own cells; an xLSTM's "
                            "gates read only the block's input, and its memory has no W_hh."),
    "retention_bias": N_("The bias-shift what-if changes the retention gate's bias of seqviz's own cells; an "
                         "xLSTM's forget gate is one number per head, read from the input, so it is not offered "
                         "here."),
    "weight_groups": N_("The parameter count compares the textbook's and PyTorch's formula for RNN, GRU and LSTM "
                        "layers; an xLSTM block has neither (this one holds {n:,} parameters in all)."),
    "cell_path": N_("Only an LSTM has a forget gate on a cell state c beside h; pick an LSTM checkpoint."),
    "written_jacobians": N_("An xLSTM's gradients come from autograd on its blocks, step by step.")})

XLSTM = register(Family(
    name="xlstm", title="xLSTM",
    description=N_("xLSTM (Beck et al. 2024): an mLSTM matrix memory per head, with exponential gating"),
    leaves=LEAVES, signals=("input", "forget", "output", "c", "h"), gates=("input", "forget", "output"),
    mean_signals=("forget", "input"), unbounded=("c", "h"), memory="c", retention="forget", symbol="f",
    retention_note=N_("An xLSTM keeps a matrix C_t = f_t·C_(t−1) + i_t·v_t·k_tᵀ per head; f_t is one number per "
                      "head, shared by the head's columns. A unit is one column of C (one value channel), and c is "
                      "what the query reads of it."),
    unit=N_("column"), edit_states=("c", "h"), state_widths=Frozen({"c": "units"}),
    has=frozenset({"memory", "linear_form"}), why=WHY,
    # C_t = a_t C_(t−1) + b_t per column and key row, with transformers' stabilised gates a_t = f_t e^(m_(t−1) − m_t)
    # and b_t = e^(ĩ_t − m_t) v_t k_tᵀ; c_t = Σ_n q̂_t[n] C_t[n, j] / max(|ñ_tᵀ q̂_t|, e^(−m_t)): hf_xlstm.unrolled
    linear=Linear(state="C", function="seqviz.hf_xlstm:unrolled"),
    carried="C", gradients="seqviz.introspect.xlstm_gradients",
    gradient_note=N_("An xLSTM has no W_hh: each head carries a matrix memory C_t = f_t·C_(t−1) + i_t·v_t·k_tᵀ. "
                     "Here h_k is that memory C_k (all heads of the block), and ‖∂L_t/∂C_k‖ is taken by autograd "
                     "through the blocks, one backward pass per batch of losses."),
    loader="xlstm", colour="#D55E00",
    colours=Frozen({"input": "#0072B2", "forget": "#009E73", "output": "#9E3F00", "c": "#D55E00"})))
