"""transformers' RWKV-4 (Peng et al. 2023, ``seqviz.hf_rwkv``) as an entry of the family table.

Each block's time mix keeps, per channel, two linear recurrences with one decay e^(−w) (w = exp(time_decay) > 0,
the same at every token): the numerator a_t = e^(−w) ⊙ a_(t−1) + e^(k_t) ⊙ v_t and the denominator b_t =
e^(−w) ⊙ b_(t−1) + e^(k_t); it reads WKV_t = (a_(t−1) + e^(u+k_t) v_t) / (b_(t−1) + e^(u+k_t)), an attention over
every earlier token, gated by the receptance σ(r_t). The decay is a forget gate fixed per channel, the receptance
its output gate, and the numerator (``layers.{i}.s``) the memory, a channel of the WKV what keeps it.
"""

from __future__ import annotations

from types import MappingProxyType as Frozen

from seqviz.families import Family, Linear, register
from seqviz.text import N_

# What a block's trace holds: h the residual stream after the block; k, v the time mix's key and value; its decay
# e^(−w) and receptance σ(r) as gates; s and den the WKV's numerator and denominator; wkv what the block reads.
LEAVES = ("h", "k", "v", "gates.decay", "gates.output", "s", "den", "wkv")
WHY = Frozen({
    "tanh_recurrence": N_("This bench is about W_hh of a tanh RNN; an RWKV has no W_hh: each channel keeps its "
                          "numerator and denominator with a fixed decay e^(−w) below 1, so what is shown here is "
                          "the tanh RNN's."),
    "recurrent_weights": N_("These changes edit W_hh or the forget-gate bias of seqviz's own cells; an RWKV has "
                            "neither: its recurrence is the decay e^(−w) of each channel, the same at every token."),
    "retention_bias": N_("The bias-shift what-if changes the retention gate's bias of seqviz's own cells; an RWKV's "
                         "decay e^(−w) reads no input and has no bias, so it is not offered here."),
    "weight_groups": N_("The parameter count compares the textbook's and PyTorch's formula for RNN, GRU and LSTM "
                        "layers; an RWKV block has neither (this one holds {n:,} parameters in all)."),
    "cell_path": N_("Only an LSTM has a forget gate; pick an LSTM checkpoint."),
    "written_jacobians": N_("An RWKV's gradients come from autograd on its unrolled blocks.")})

RWKV = register(Family(
    name="rwkv", title="RWKV", description=N_("RWKV-4 (Peng et al. 2023): attention as a recurrence per channel"),
    leaves=LEAVES, signals=("decay", "output", "s", "h"), gates=("decay", "output"), mean_signals=("output",),
    unbounded=("h",), memory="s", retention="decay", symbol="e^(−w)", unit=N_("channel"), edit_states=("s", "h"),
    state_widths=Frozen({"s": "channels"}), has=frozenset({"memory", "linear_form"}), why=WHY,
    retention_note=N_("RWKV keeps a_t = e^(−w)·a_(t−1) + e^(k_t)·v_t per channel (and the denominator b_t alike, "
                      "with e^(k_t)) and reads WKV_t = (a_(t−1) + e^(u+k_t)·v_t) / (b_(t−1) + e^(u+k_t)): its "
                      "decay e^(−w), w = exp(time_decay), is a forget gate fixed per channel, the same at every "
                      "token."),
    # a_t = e^(−w) a_(t−1) + e^(k_t) v_t: e^(k_t) is not a traced leaf (it overflows float32 where a_t does not), so
    # hf_rwkv.unrolled takes it from k_t in float64
    linear=Linear(state="s", function="seqviz.hf_rwkv:unrolled"),
    gradient_note=N_("An RWKV has no W_hh: each channel keeps a_t = e^(−w)·a_(t−1) + e^(k_t)·v_t. Here h_k is that "
                     "numerator a_k (one per channel and block), and ‖∂L_t/∂a_k‖ is taken by autograd through the "
                     "blocks, one backward pass per loss."),
    gradients="seqviz.introspect.rwkv_gradients", carried="state", loader="rwkv", colour="#D55E00"))
