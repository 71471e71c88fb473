"""lucidrains' minLM (PyPI ``mingru-pytorch``, ``seqviz.lucid_minlm``): residual blocks around a minGRU or minLSTM
(Feng et al. 2024), as entries of the family table.

Each block is [causal depthwise conv +] RMSNorm → minGRU (or minLSTM) → to_out + residual, RMSNorm → GELU
feed-forward + residual. Its recurrence is seqviz's own minGRU/minLSTM once lucidrains' conventions are mapped
(``lucid_minlm_keys``): the same gate names mean the same thing here as on seqviz's cells (minGRU's update z keeps
the past, z = σ(−gate)), so the linear form is theirs. ``layers.{i}.h`` is the cell's state (dim · expansion
wide), ``layers.{i}.stream`` the residual stream after the block (dim wide).
"""

from __future__ import annotations

from types import MappingProxyType as Frozen

from seqviz.families import Family, Linear, register
from seqviz.text import N_

WHY = Frozen({
    "recurrent_weights": N_("A minLM block's gates read only its input x_t (no W_hh, no bias): nothing here "
                            "would change. Pick an RNN, GRU or LSTM checkpoint."),
    "tanh_recurrence": N_("This bench is about W_hh of a tanh RNN; a minLM has no W_hh: its state is kept by gates "
                          "read from x_t alone, so what is shown here is the tanh RNN's."),
    "retention_bias": N_("The bias-shift what-if changes the retention gate's bias; lucidrains' minGRU and minLSTM "
                         "project without a bias, so it is not offered here."),
    "weight_groups": N_("The parameter count compares the textbook's and PyTorch's formula for RNN, GRU and LSTM "
                        "layers; a minLM block has neither (this one holds {n:,} parameters in all)."),
    "cell_path": N_("Only an LSTM has a forget gate; pick an LSTM checkpoint."),
    "written_jacobians": N_("A minLM's gradients come from autograd on its unrolled blocks.")})
COMMON = {"unbounded": ("new", "h", "cell"), "unit": N_("unit"), "edit_states": ("h",), "loader": "minlm",
          "has": frozenset({"memory", "linear_form"}), "why": WHY, "gradients": "seqviz.lucid_minlm",
          "carried": "h", "gradient_note": N_("A minLM block's state h_t = a_t ⊙ h_(t−1) + b_t is read by its "
                                              "to_out, feed-forward and the blocks above; ‖∂L_t/∂h_k‖ is taken by "
                                              "autograd through them, h_k nudged inside the recurrence.")}

MINLM = register(Family(
    name="minlm", title="minLM", description=N_("lucidrains' minLM: minGRU blocks with RMSNorm and a feed-forward"),
    leaves=("h", "gates.update", "gates.new", "stream"), signals=("update", "new", "h"), gates=("update", "new"),
    mean_signals=("update",), retention="update", symbol="z",
    retention_note=N_("lucidrains' minGRU writes h_t = lerp(h_(t−1), g(h̃_t), σ(`gate`)); seqviz's z = σ(−`gate`) is "
                      "the share it keeps, as on seqviz's own minGRU."),
    linear=Linear(decay="gates.update", write=("1-gates.update", "gates.new"), state="h"),
    colour="#3D6FB6", **COMMON))

MINLM_LSTM = register(Family(
    name="minlm_lstm", title="minLM-LSTM", description=N_("lucidrains' minLM with minLSTM blocks (use_lstm=True)"),
    leaves=("h", "gates.input", "gates.forget", "gates.cell", "stream"), signals=("input", "forget", "cell", "h"),
    gates=("input", "forget", "cell"), mean_signals=("input", "forget"), retention="forget", symbol="f",
    retention_note=N_("lucidrains' minLSTM normalises its gates, f′ = f/(f + i), i′ = i/(f + i): f′ is what it "
                      "keeps, as on seqviz's own minLSTM."),
    linear=Linear(decay="gates.forget", write=("gates.input", "gates.cell"), state="h"),
    colour="#B65F9E", **COMMON))
