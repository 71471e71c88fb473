"""Gradient flow by time distance: ‖∂L_t/∂h_k‖ on real trained models, exploding vs vanishing, clipping, worked examples."""

import streamlit as st

from appkit import models as cm
from appkit.export import view_button
from appkit.i18n import N_, _
from appkit.sections import gradient_flow as sec
from appkit.widgets import lazy_tabs
from appkit.sidebar import checkpoint_picker
from seqviz.export import state_line
from seqviz.introspect import gradients as gr

st.title(_("Gradient flow through time"))
st.caption(_("BPTT multiplies one Jacobian per step, ∂h_j/∂h_{j−1} = diag(1 − h_j²)·W_hh, so the gradient a "
             "loss at t sends back to step k shrinks (or grows) geometrically with t − k. Every number below "
             "is computed exactly on the trained models, by backpropagating through every step (checked "
             "against autograd) — nothing is simulated."))
ref = checkpoint_picker("recurrent_lm")
if ref is None:
    st.stop()
model = cm.model(ref)
exports = view_button("gradient_flow", f"Gradient flow · {ref.label}", model)
TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n" \
       "The slings and arrows of outrageous fortune"
c1, c2 = st.columns([3, 1])
text = c1.text_area(_("Text"), TEXT, key="gf_text", height=90, bind="query-params")
n_tok = c2.slider(_("Tokens"), 20, gr.MAX_GRADIENT_TOKENS, 100, 10, key="gf_tokens", bind="query-params",
                  help=_("G has one row per loss and one column per state: the cost grows with the square."))


flow = sec.Flow(ref, model, text, n_tok, exports)
if (mine := flow.run(ref)) is None:
    st.stop()
flow.G, flow.dist, flow.tokens = mine[:3]
exports.footnote = flow.foot = state_line(ref.label, text, tokens=len(flow.tokens))
flow.shipped = [(c, r, cm.model(r).config.cell) for c in cm.list_checkpoints("recurrent_lm") for r in [c.ref()]]

# Lazy tabs: only the open one runs (the clipping bench trains two small RNNs); the open tab is in the URL.
SECTIONS = {N_("Distance curve"): sec.distance_curve, N_("LSTM's two paths"): sec.two_paths, N_("Layers"): sec.layers,
            N_("Exploding or vanishing"): sec.exploding, N_("Clipping"): sec.clipping, N_("What if…"): sec.what_if,
            N_("Connectivity"): sec.connectivity, N_("Worked examples"): sec.worked,
            N_("Over training"): sec.over_training}
opened, tab = lazy_tabs(list(SECTIONS), "gf_tab")
with tab:
    SECTIONS[opened](flow)
