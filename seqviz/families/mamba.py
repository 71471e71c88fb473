"""transformers' Mamba and Mamba-2 (selective state spaces, ``seqviz.hf_mamba``), as entries of the family table.

Each block scans s_t = exp(Δ_t A) ⊙ s_(t−1) + Δ_t B_t x_t per channel and state (Gu & Dao 2023, eq. 2a with
Ā = exp(Δ A)): its decay Ā is a forget gate in disguise, SiLU(z_t) its output gate, and a channel, not a hidden
unit, is what keeps a memory (``layers.{i}.s``: each channel's slowest state, A nearest 0). Mamba-2 (Dao & Gu 2024)
has one A per head, so its decay is the same for all the head's channels and states. FalconMamba (Zuo et al. 2024)
is Mamba with B_t, C_t and Δ's input RMS-normalised. Their config (``MambaShape``) says ``cell`` "mamba" and
``family`` "mamba", "mamba2" or "falcon_mamba".
"""

from __future__ import annotations

from types import MappingProxyType as Frozen

from seqviz.families import Family, Linear, register
from seqviz.text import N_

# What a block's trace holds: h the residual stream after the block; x, dt, B, C, z the scan's inputs; the decay of
# each channel's slowest state and SiLU(z) as its gates; s that state; decay and state [T, D, N] on request only.
LEAVES = ("h", "x", "dt", "B", "C", "z", "gates.decay", "gates.output_z", "s", "decay", "state")
ON_REQUEST = ("decay", "state")
NO_W_HH = N_("This bench is about W_hh of a tanh RNN; a Mamba has no W_hh: its state is carried by the decay "
             "exp(Δ·A) per channel and state, always below 1, so what is shown here is the tanh RNN's.")
WHY = Frozen({
    "tanh_recurrence": NO_W_HH,
    "recurrent_weights": N_("These changes edit W_hh or the forget-gate bias of seqviz's own cells; a Mamba has "
                            "neither: its recurrence is the decay exp(Δ·A), read from the input at each token."),
    "retention_bias": N_("The bias-shift what-if changes the retention gate's bias of seqviz's own cells; Mamba's "
                         "decay exp(Δ·A) has no bias of its own, so it is not offered here."),
    "weight_groups": N_("The parameter count compares the textbook's and PyTorch's formula for RNN, GRU and LSTM "
                        "layers; a Mamba block has neither (this one holds {n:,} parameters in all)."),
    "cell_path": N_("Only an LSTM has a forget gate; pick an LSTM checkpoint."),
    "written_jacobians": N_("A Mamba's gradients come from autograd on its unrolled blocks.")})
COMMON = {"leaves": LEAVES, "on_request": ON_REQUEST, "signals": ("decay", "output_z", "s", "h"),
          "gates": ("decay", "output_z"),
          "mean_signals": ("decay",), "unbounded": ("h",), "memory": "s", "retention": "decay", "symbol": "Ā",
          "unit": N_("channel"), "edit_states": ("s", "h"), "loader": "mamba",
          "state_widths": Frozen({"s": "channels"}), "has": frozenset({"memory", "linear_form"}), "why": WHY,
          # y_t = C_t s_t + D x_t per channel, s_t = exp(Δ_t A) ⊙ s_(t−1) + Δ_t B_t x_t per state: unrolled by
          # hf_mamba.unrolled (Ali, Zimerman & Wolf 2025's hidden attention)
          "linear": Linear(state="state", function="seqviz.hf_mamba:unrolled"),
          "gradient_note": N_("A Mamba has no W_hh: its state is s_t = exp(Δ_t·A)·s_(t−1) + Δ_t·B_t·u_t per channel "
                              "and state. Here h_k is that state s_k (D × N per block), and ‖∂L_t/∂s_k‖ is taken by "
                              "autograd through the blocks, one backward pass per loss."),
          "gradients": "seqviz.introspect.mamba_gradients", "carried": "state",  # its scan state s (D x N)
          "colours": Frozen({"decay": "#4DB38F", "output_z": "#9E3F00", "s": "#A87000"})}

MAMBA = register(Family(
    name="mamba", title="Mamba", description=N_("Mamba (Gu & Dao 2023): a selective state space per channel"),
    retention_note=N_("Mamba keeps s_t = exp(Δ_t·A)·s_(t−1) + Δ_t·B_t·u_t per channel and state: its decay "
                      "Ā = exp(Δ·A) is a forget gate in disguise. A channel is ranked by its slowest state (A "
                      "nearest 0), which decays least at every token."), colour="#E69F00", **COMMON))

MAMBA2 = register(Family(
    name="mamba2", title="Mamba-2", description=N_("Mamba-2 (Dao & Gu 2024): one decay per head"),
    retention_note=N_("Mamba-2 keeps s_t = exp(Δ_t·A)·s_(t−1) + Δ_t·x_t·B_tᵀ per head: A is one number per head, "
                      "so its decay Ā = exp(Δ·A), a forget gate in disguise, is the same for all the head's "
                      "channels and states."), colour="#A87000", **COMMON))

FALCON_MAMBA = register(Family(
    name="falcon_mamba", title="FalconMamba",
    description=N_("FalconMamba (Zuo et al. 2024): Mamba with RMS-normalised B, C and Δ"),
    retention_note=N_("FalconMamba keeps s_t = exp(Δ_t·A)·s_(t−1) + Δ_t·B_t·u_t per channel and state, as Mamba, "
                      "with B_t, C_t and Δ's input RMS-normalised at each token: its decay Ā = exp(Δ·A) is a forget "
                      "gate in disguise. A channel is ranked by its slowest state (A nearest 0)."),
    colour="#D55E00", **{**COMMON, "loader": "falcon_mamba"}))
