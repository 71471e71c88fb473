"""Gradient flow by time distance: ‖∂L_t/∂h_k‖ on real trained models, per layer, the LSTM's two paths, inputs."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import draw, view_button
from appkit.i18n import N_, _, error_lead
from appkit.sidebar import deferred_picker, stand_in
from appkit.state import clamp, forward_moved
from appkit.widgets import gradient_text, lazy_tabs
from seqviz.charts.gradients import connectivity_html
from seqviz.export import state_line
from seqviz.families import of, stand_in_note
from seqviz.refs import snapshots
from seqviz.views import gradients as views

# Tabs that are on the Exploding and vanishing page now: an older link (?gf_tab=Clipping) opens that page's tab.
forward_moved("gf_tab", (N_("Exploding or vanishing"), N_("Clipping"), N_("What if…"), N_("Worked examples")),
              "pages/exploding_vanishing.py", {"gf_tab": "gf_ev_tab"})

st.title(_("Gradient flow through time"))
st.caption(_("BPTT multiplies one Jacobian per step, ∂h_j/∂h_{j−1} = diag(1 − h_j²)·W_hh, so the gradient a "
             "loss at t sends back to step k shrinks (or grows) geometrically with t − k. Every number below "
             "is computed exactly on the trained models, by backpropagating through every step (checked "
             "against autograd) — nothing is simulated."))
picked = deferred_picker("recurrent_lm")
if picked is None:
    st.stop()
ref = picked.ref
info = picked.info()  # config, tokenizer, card: no torch while the distance tab's charts come shipped
cfg = info.config
family = of(cfg)  # the family table's entry: what h_k is for it, whether it has a cell path
if family.gradient_note:
    st.info(_(family.gradient_note))
exports = view_button("gradient_flow", f"Gradient flow · {ref.label}", info.card)
on_text, pieces = gradient_text(ref)  # what every view of the chosen model reads
exports.footnote = foot = state_line(ref.label, on_text["text"], tokens=len(pieces))


def show(where, shown, footnote=foot) -> None:
    """A view's chart with its Download popover; the HTML file gets the chart and its numbers."""
    draw(where, shown.spec, shown.title, footnote, lambda: shown.data, exports)  # numbers made when asked for


def distance_tab():
    shipped = tuple((c.name, c.ref()) for c in cm.list_checkpoints("recurrent_lm"))
    curves = cm.view(views.distance_curve, ref, **on_text, models=shipped)
    for name, problem in curves.facts["skipped"]:
        st.warning(f"{name}: {error_lead(ValueError(problem))}.")
    show(st, curves, state_line(None, on_text["text"], tokens=len(pieces), models=", ".join(curves.facts["models"])))
    st.caption(views.distance_caption(curves.facts))
    show(st, cm.view(views.gradient_heatmap, ref, **on_text))
    # While the visitor reads: each model's G at the Tokens slider's maximum, which every setting slices.
    cm.complete(lambda: views.full_matrices([cm.model(r) for _name, r in shipped] + [cm.model(ref)], on_text["text"]))
    st.page_link("pages/exploding_vanishing.py", label=_("Why it shrinks or grows, and what helps"),
                 icon=":material/science:")


def two_paths_tab():
    lstm = stand_in(ref, "cell_path")  # the family table's: a model with a cell path, the sidebar's when it has one
    if lstm is None:
        return st.info(family.why_not("cell_path"))
    if lstm != ref:
        st.info(stand_in_note(ref.label, lstm.label, "cell_path"))
    a, b = st.columns(2)
    footnote = state_line(lstm.label, on_text["text"], tokens=len(pieces))
    show(a, paths := cm.view(views.two_paths, lstm, **on_text), footnote)
    show(b, cm.view(views.forget_curve, lstm, **on_text, layer=cm.shape(lstm).n_layers - 1), footnote)
    st.caption(views.two_paths_caption(paths.facts))


def layers_tab():
    show(st, per_layer := cm.view(views.layers, ref, **on_text))
    if per_layer.facts.get("note"):  # a model of real size: its top layer alone
        st.info(per_layer.facts["note"])
    st.caption(_("The loss reaches layer 0 through every layer above it: the chain is T × {n} Jacobians "
                 "long.").format(n=cfg.n_layers))


@st.fragment
def connectivity_tab():
    if len(pieces) < 3:
        return st.info(_("Type at least three tokens: the prediction after position 1 or later is what is traced back."))
    clamp("gf_target", 1, len(pieces) - 1)
    target = st.slider(_("Target position"), 1, len(pieces) - 1, min(len(pieces) - 1, 60), key="gf_target",
                       bind="query-params")
    conn = cm.view(views.connectivity, ref, **on_text, target=target)
    st.markdown(_("Input tokens shaded by ‖∂ logit / ∂x_k‖ for the prediction after position {target} "
                  "(token {token}, outlined). Tap or hover a token for its value.").format(
        target=target, token=repr(conn.facts["token"])))
    st.html(connectivity_html(pieces, conn.data["weight"].to_numpy(), conn.facts["t"]))


@st.fragment
def over_training_tab():
    exports[:] = [s for s in exports if s.heading != "Over training"]  # a fragment's rerun replaces its chart
    if not (steps := snapshots(ref)):
        return st.info(_("This checkpoint keeps no training snapshots."))
    step = st.select_slider(_("Training step"), steps + ["final"], steps[0], key="gf_snap",
                            format_func=lambda s: _("final") if s == "final" else str(s))
    at = None if step == "final" else step
    show(st, cm.view(views.over_training, ref, **on_text, snapshot=None if at is None else ref.at(at), step=at),
         state_line(ref.label, on_text["text"], tokens=len(pieces), step=step))


# Lazy tabs: only the open one runs; the open tab is in the URL.
SECTIONS = {N_("Distance curve"): distance_tab, N_("LSTM's two paths"): two_paths_tab, N_("Layers"): layers_tab,
            N_("Connectivity"): connectivity_tab, N_("Over training"): over_training_tab}
opened, tab = lazy_tabs(list(SECTIONS), "gf_tab")
with tab:
    SECTIONS[opened]()
picked.finish()  # after the charts: the sidebar says what was found; the model loads for the next move
