"""Exploding and vanishing gradients: W_hh's spectral radius, what-ifs on the model, clipping, the worked examples."""

import pandas as pd
import streamlit as st

from appkit import cache as cm
from appkit.draw import draw, view_button
from appkit.i18n import N_, _, error_lead
from appkit.sidebar import deferred_picker, stand_in
from appkit.widgets import gradient_text, lazy_tabs
from seqviz.families import of, stand_in_note
from seqviz.export import state_line
from seqviz.views import gradients as views

CHANGES = {"Shift the forget-gate bias": N_("Shift the forget-gate bias"), "Orthogonal W_hh": N_("Orthogonal W_hh")}
NEEDS = {"Shift the forget-gate bias": ("cell_path", "recurrent_weights"), "Orthogonal W_hh": ("recurrent_weights",)}

st.title(_("Exploding and vanishing gradients"))
st.caption(_("The product of T Jacobians diag(1 − h_j²)·W_hh grows or shrinks like ρ(W_hh)^T: what the spectral "
             "radius does on a trained RNN, what changing the model does to the decay, what clipping can and "
             "cannot fix, and the chapter's worked examples, computed."))
picked = deferred_picker("recurrent_lm", needs="tanh_recurrence")  # the default tab's: opens on a tanh RNN
if picked is None:
    st.stop()
ref = picked.ref
info = picked.info()  # config, tokenizer, card: no torch while the ρ bench comes shipped
cfg = info.config
family = of(cfg)  # what the benches apply to: the family table's entry, never its name
exports = view_button("exploding_vanishing", f"Exploding and vanishing · {ref.label}", info.card)
exports.footnote = state_line(ref.label, "")


def read_text() -> tuple[dict, list[str]]:
    """The text box, drawn only in the sections that read it (the clipping bench and the worked examples do not:
    issue 51), and the text's tokens."""
    on_text, pieces = gradient_text(ref)
    exports.footnote = state_line(ref.label, on_text["text"], tokens=len(pieces))
    return on_text, pieces


def numbers(df, fmt="%.4f"):  # st.dataframe's own formatting (a pandas Styler costs ~0.1 s a table)
    return {str(c): st.column_config.NumberColumn(str(c), format=fmt) for c in df.select_dtypes("float").columns}


def show(where, shown, footnote) -> None:
    """A view's chart with its Download popover; the HTML file gets the chart and its numbers."""
    draw(where, shown.spec, shown.title, footnote, lambda: shown.data, exports)  # numbers made when asked for


def fresh(*names):  # a fragment's rerun replaces its own charts in the HTML export
    exports[:] = [s for s in exports if s.heading not in names]


@st.fragment  # the ρ slider reruns only this section
def exploding_tab():
    fresh("Linear chain vs trained RNN")
    rnn = stand_in(ref, "tanh_recurrence")
    if rnn is None:
        return st.info(family.why_not("tanh_recurrence"))
    if rnn != ref:
        st.info(stand_in_note(ref.label, rnn.label, "tanh_recurrence"))
    on_text, _pieces = read_text()
    rho = st.select_slider(_("Spectral radius ρ of W_hh"), list(views.RHOS), views.RHO,
                           key="gf_rho", bind="query-params", help=_("max |eigenvalue| of the top layer's W_hh after rescaling."))
    try:
        bench = cm.view(views.radius_bench, rnn, **on_text, rho=rho)
    except ValueError as e:
        return st.warning(f"{rnn.label}: {error_lead(e)}.")
    f = bench.facts
    show(st, bench, state_line(rnn.label, on_text["text"], tokens=f["tokens"], rho=rho))
    # While the visitor reads: the chains at this ρ over the whole text, which every Tokens setting slices.
    cm.complete(lambda: views.radius_source(cm.model(rnn), on_text["text"], rho))
    st.caption(_("{name}'s own W_hh has ρ = {rho0:.2f} (‖W‖₂ = {n0:.2f}); here it is rescaled to ρ = {rho} "
                 "(‖W‖₂ = {n:.2f}). Linear chain along W's leading eigenvector: {lin0:.2e} at distance 0, "
                 "{lin:.2e} at distance {d} — it grows like ρ^(t−k) above 1 and shrinks below. The trained RNN at the same ρ: {tanh:.2e} at distance "
                 "{d}: a factor {f:.3f} per step, because its units saturate — the mean tanh′ = 1 − h² along the "
                 "text is {g:.3f}. Clipping cannot help here: it only shrinks. Both in float64.").format(
        name=rnn.label, rho0=f["rho_trained"], n0=f["norm_trained"], rho=rho, n=f["norm"], d=f["d"],
        lin0=f["lin0"], lin=f["lin"], tanh=f["tanh"], g=f["tanh_prime"], f=f["per_step"]))


@st.fragment
def what_if_tab():
    fresh("Before and after the change")
    st.caption(_("Each change is applied to a private copy of the model; the shared model is never modified."))
    # the forget-bias shift needs an LSTM's cell, the orthogonal W_hh a W_hh: the tab opens on one that applies
    usable = [k for k in CHANGES if all(map(family.applies, NEEDS[k]))] or list(CHANGES)
    kind = st.radio(_("Change"), list(CHANGES), list(CHANGES).index(usable[0]), format_func=lambda k: _(CHANGES[k]),
                    horizontal=True, key="gf_change")
    for need in NEEDS[kind]:
        if not family.applies(need):
            return st.info(family.why_not(need))
    on_text, pieces = read_text()
    edit = ("forget_shift", st.slider(_("Forget-bias shift"), -5.0, 5.0, 2.0, 0.5, key="gf_fshift", bind="query-params")) \
        if kind.startswith("Shift") else ("orthogonal", True)
    st.dataframe(t := cm.view(views.spectrum_change, ref, edit=edit).data.rename_axis(_("weight block")),
                 column_config=numbers(t))
    show(st, cm.view(views.what_if, ref, **on_text, edit=edit),
         state_line(ref.label, on_text["text"], tokens=len(pieces), change=f"{edit[0]} {edit[1]}"))


@st.fragment
def clipping_tab():
    fresh("Gradient norm per step", "Loss per step")
    st.info(_("This bench trains a small tanh RNN of its own (64 units); {name} is not used here.").format(
        name=ref.label))
    a, b, c = st.columns(3)
    clip = a.select_slider(_("Threshold c"), [0.25, 0.5, 1.0, 2.0, 5.0], 1.0, key="gf_clip_c", bind="query-params")
    lr = b.select_slider(_("Learning rate"), [1.0, 2.0, 3.0, 4.0], 3.0, key="gf_lr", bind="query-params")
    seed = c.number_input(_("Seed"), 0, 99, 0, key="gf_seed", bind="query-params")
    bench = {"clip": clip, "lr": lr, "seed": int(seed)}
    with st.spinner(_("Training a small RNN (a few seconds, once per setting)...")):
        norms = cm.view(views.clipping_norms, ref, **bench)
    footnote = state_line(None, "", c=clip, lr=lr, seed=int(seed))
    show(st, norms, footnote)
    show(st, cm.view(views.clipping_loss, ref, **bench), footnote)
    f = norms.facts
    st.caption(_("A one-layer tanh RNN (64 units) trained by plain SGD on the first 20,000 characters of {src}, "
                 "60 steps, the same seed and batches twice. Without clipping ‖g‖ reaches {fmax:.1f} and one step "
                 "raises the loss by {fjump:.2f} nats (last 10 steps: {ffin:.2f}); with "
                 "torch.nn.utils.clip_grad_norm_(c = {c}) every applied ‖g‖ is ≤ {amax:.3f}, the largest jump is "
                 "{kjump:.2f} and the last 10 steps average {kfin:.2f}. Clipping only shrinks: it cannot undo "
                 "vanishing.").format(
        src=_("the held-out Shakespeare plays") if f["plays"] else _("the sample passage shipped with seqviz"),
        fmax=f["free_max"], fjump=f["free_jump"], ffin=f["free_final"], c=clip, amax=f["kept_max"],
        kjump=f["kept_jump"], kfin=f["kept_final"]))


@st.fragment
def worked_tab():
    fresh("S6 f^k", "S4 norm-gamma bound")
    book = cm.view(views.book_comparison, ref).facts
    w = st.select_slider(_("W_hh of the 3-step scalar RNN"), [round(0.1 * i, 1) for i in range(1, 26)], 0.5,
                         key="gf_whh", bind="query-params", help=_("The chapter's three cases, computed: ∂h₃/∂h₁ = {a:.4f} at 0.5 and "
                                              "{b:.4f} at 0.9 (vanishes); at 2.0 tanh saturates (h₂ = {h:.4f}, "
                                              "1 − h₂² = {g:.4f}), so it is {c:.4f}: smaller still.").format(**book))
    st.markdown("$h_t = \\tanh(W_{hh} h_{t-1} + W_{xh} x_t + b)$, $W_{xh}=1$, $b=0$, $h_0=0$, $x = 1.0, 0.5, -0.2$")
    table, compare = cm.view(views.scalar_rnn, ref, w=w).data, cm.view(views.book_comparison, ref, ws=(w,)).data
    st.dataframe(table, hide_index=True, column_config=numbers(table))
    st.dataframe(compare, hide_index=True, column_config=numbers(compare))
    st.caption(_("This page's ∂h₃/∂h₁ runs the forward pass at each W_hh; the book's table reused the W = 0.5 "
                 "states for every row, which gives its {book:.4f} at 2.0 (the book's method recomputed: "
                 "{method:.4f}) where the true value is {true:.4f}.").format(
        book=book["book"], method=book["method"], true=book["c"]))
    st.markdown(_("**The chapter's 2-step scalar LSTM** (W_f=[0.1, 0.9], b_f=0.5; W_i=[0.3, 0.7], b_i=−0.2; "
                  "W_C=[0.2, 0.8], b_C=0.1; W_o=[0.4, 0.6], b_o=0; x = 1.0, 0.0)"))
    st.dataframe(lstm := cm.view(views.scalar_lstm, ref).data, hide_index=True, column_config=numbers(lstm))
    st.download_button(_("Both tables as CSV"), pd.concat([table.assign(example="rnn"), lstm.assign(
        example="lstm")]).to_csv(index=False), "worked_examples.csv", key="gf_csv")
    a, b = st.columns(2)
    fp, ng = cm.view(views.forget_powers, ref), cm.view(views.norm_gamma, ref)
    show(a, fp, "worked example S6")
    a.dataframe(t := fp.data[fp.data["marked"]].pivot(index="k", columns="f", values="f^k").rename(columns=str),
                column_config=numbers(t, "%.4e"))
    show(b, ng, "worked example S4")
    b.dataframe(t := ng.data[ng.data["t − k"].isin([10, 50, 100, 200])].pivot(
        index="t − k", columns="‖W_hh‖", values="(‖W‖·γ)^(t−k)").rename(columns=str), column_config=numbers(t, "%.4e"))


# Lazy tabs: only the open one runs (the clipping bench trains two small RNNs); the open tab is in the URL.
SECTIONS = {N_("Exploding or vanishing"): exploding_tab, N_("What if…"): what_if_tab, N_("Clipping"): clipping_tab,
            N_("Worked examples"): worked_tab}
opened, tab = lazy_tabs(list(SECTIONS), "gf_ev_tab")
with tab:
    SECTIONS[opened]()
picked.finish()  # after the charts: the sidebar says what was found; the model loads for the next move
