"""transformers' RecurrentGemma (Griffin and Hawk, De et al. 2024: the RG-LRU, ``seqviz.hf_rgemma``) as an entry
of the family table.

Each recurrent block keeps s_t = a_t ⊙ s_(t−1) + √(1 − a_t²) ⊙ (i_t ⊙ x_t) per channel, with a_t = σ(Λ)^(c·r_t): a
diagonal gated linear recurrence whose decay a_t, read from the input through the recurrence gate r_t, is a forget
gate in all but name (its signal is "forget", its letter a), and whose write b_t is traced as one leaf. seqviz's
layers are the model's recurrent blocks; its local-attention blocks (Griffin's every third) are traced beside them
as ``attention.{j}.*`` and hold no memory of this kind.
"""

from __future__ import annotations

from types import MappingProxyType as Frozen

from seqviz.families import Family, Linear, register
from seqviz.text import N_

# What a recurrent block's trace holds: h the residual stream after the block; x the RG-LRU's input (convolved);
# its gates i, r, its decay a (the forget gate) and its gate branch GeLU(W_y u) (the output gate); the write b and
# the state s.
LEAVES = ("h", "x", "gates.input", "gates.recurrence", "gates.forget", "gates.output", "write", "s")
ATTENTION_LEAVES = ("h", "weights")  # a local-attention block: its output stream, its weights [B, heads, T, T]
ON_REQUEST = ("weights",)  # T x T per head: in a full trace only when named
WHY = Frozen({
    "tanh_recurrence": N_("This bench is about W_hh of a tanh RNN; an RG-LRU has no W_hh: its state is carried by "
                          "the decay a_t = σ(Λ)^(c·r_t) per channel, always below 1, so what is shown here is the "
                          "tanh RNN's."),
    "recurrent_weights": N_("These changes edit W_hh or the forget-gate bias of seqviz's own cells; an RG-LRU has "
                            "neither: its recurrence is the decay a_t = σ(Λ)^(c·r_t), read from the input at each "
                            "token."),
    "retention_bias": N_("The bias-shift what-if changes the retention gate's bias of seqviz's own cells; the "
                         "RG-LRU's decay is σ(Λ) raised to the recurrence gate's power, so it is not offered here."),
    "weight_groups": N_("The parameter count compares the textbook's and PyTorch's formula for RNN, GRU and LSTM "
                        "layers; a RecurrentGemma block has neither (this one holds {n:,} parameters in all)."),
    "cell_path": N_("The forget-bias shift changes the bias of an LSTM's forget gate; the RG-LRU's forget gate "
                    "a_t = σ(Λ)^(c·r_t) has no bias of its own, so it is not offered here."),
    "written_jacobians": N_("An RG-LRU's gradients come from autograd on its unrolled blocks.")})

RGLRU = register(Family(
    name="rglru", title="RG-LRU",
    description=N_("RecurrentGemma (Griffin, De et al. 2024): the RG-LRU a_t = σ(Λ)^(c·r_t), local attention"),
    leaves=LEAVES, signals=("forget", "input", "output", "s", "h"), gates=("input", "forget", "output"),
    mean_signals=("forget", "input"), unbounded=("output", "h"), memory="s", retention="forget", symbol="a",
    retention_note=N_("The RG-LRU keeps s_t = a_t·s_(t−1) + √(1 − a_t²)·(i_t·x_t) per channel: its decay "
                      "a_t = σ(Λ)^(c·r_t), c = 8, is the forget gate here, read from the input through the "
                      "recurrence gate r_t."),
    unit=N_("channel"), edit_states=("s", "h"), state_widths=Frozen({"s": "channels"}),
    linear=Linear(decay="gates.forget", write=("write",), state="s"),
    has=frozenset({"memory", "linear_form"}), why=WHY, carried="s",
    gradient_note=N_("An RG-LRU has no W_hh: its state is s_t = a_t·s_(t−1) + √(1 − a_t²)·(i_t·x_t) per channel. "
                     "Here h_k is that state s_k (one per recurrent block), and ‖∂L_t/∂s_k‖ is taken by autograd "
                     "through the blocks, one backward pass per loss."),
    gradients="seqviz.introspect.rgemma_gradients", loader="recurrent_gemma", colour="#D55E00"))
