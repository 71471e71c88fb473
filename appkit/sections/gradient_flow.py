"""Sections of the gradient-flow page (pages/gradient_flow.py): its tabs, fragments and cached benches."""

from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from appkit import models as cm
from appkit.export import draw
from appkit.i18n import N_, _, error_lead
from appkit.models import ModelRef
from appkit.state import clamp
from appkit.texts import token_ids
from appkit.widgets import html_block
from seqviz.charts import gradients as charts
from seqviz.export import state_line
from seqviz.introspect import clipping as cl
from seqviz.introspect import gradients as gr
from seqviz.introspect import worked_examples as we
from seqviz.charts import gradients as gradients_charts

COLUMNS = {"∂h_3/∂h_1 (book's method)": N_("∂h_3/∂h_1 (book's method)"),
           "∂h_3/∂h_1 (book, printed)": N_("∂h_3/∂h_1 (book, printed)")}
CHANGES = {"Shift the forget-gate bias": N_("Shift the forget-gate bias"), "Orthogonal W_hh": N_("Orthogonal W_hh")}
RUNS = {"without clipping": N_("without clipping"), "with clipping": N_("with clipping")}
NOTE = N_("○ drawn at {floor:.0e}: the value is below it (0 = underflow); △ drawn at the top: inf (overflow)")


def numbers(df, fmt="%.4f"):  # st.dataframe's own formatting (a pandas Styler costs ~0.1 s a table)
    return {str(c): st.column_config.NumberColumn(str(c), format=fmt) for c in df.select_dtypes("float").columns}


@dataclass
class Flow:
    """What every section reads: the chosen model, the text, its gradients and the page's HTML-export list."""
    ref: ModelRef
    model: object
    text: str
    n_tok: int
    exports: list
    G: object = None
    dist: pd.DataFrame = None
    tokens: list = field(default_factory=list)
    foot: str = ""
    shipped: list = field(default_factory=list)  # (Shipped, its ModelRef, cell) per shipped language model

    def run(self, r, layer=-1, wrt="h", edit=()):
        try:
            return cm.curves(r, self.text, self.n_tok, layer, wrt, edit)
        except ValueError as e:
            st.warning(f"{r.label}: {error_lead(e)}.")
            return None

    def curves_chart(self, where, df, title, name, foot):
        draw(where, cm.chart_spec(gradients_charts.distance_curves, df, title, _(NOTE)), name, foot, df, self.exports)

    def fresh(self, *names):  # a fragment's rerun replaces its own charts in the HTML export
        self.exports[:] = [s for s in self.exports if s.heading not in names]



def distance_curve(p: Flow):
    text, tokens, dist, G, foot, exports = p.text, p.tokens, p.dist, p.G, p.foot, p.exports
    frames = [res[1].assign(model=f"{c.name} ({cell.upper()})") for c, r, cell in p.shipped if (res := p.run(r))]
    curves = pd.concat(frames or [dist.assign(model=_("chosen model"))])
    p.curves_chart(st, curves, _("‖∂L_t/∂h_k‖ against distance t − k"), "Gradient by distance, per model",
                 state_line(None, text, tokens=len(tokens), models=", ".join(curves["model"].unique())))
    st.caption(_("Mean over loss positions t of ‖∂L_t/∂h_k‖ for the top layer (band: 10–90 % of t). A straight "
                 "falling line on this log axis is exponential decay: the vanilla RNN's falls fastest."))
    draw(st, cm.chart_spec(gradients_charts.gradient_heatmap, G, tokens), "Gradient matrix", foot,
         pd.DataFrame(G).rename_axis("t").reset_index(), exports)


def two_paths(p: Flow):
    ref, model, text, n_tok, dist, foot, exports = p.ref, p.model, p.text, p.n_tok, p.dist, p.foot, p.exports
    if model.config.cell != "lstm":
        st.info(_("Pick an LSTM checkpoint in the sidebar: only the LSTM has the cell-state path."))
    elif (res_c := p.run(ref, wrt="c")) is not None:
        both = pd.concat([dist.assign(model=_("via h: ‖∂L_t/∂h_k‖")), res_c[1].assign(model=_("via C: ‖∂L_t/∂C_k‖"))])
        a, b = st.columns(2)
        p.curves_chart(a, both, _("Hidden-state path vs cell-state path"), "h path vs C path", foot)
        fc = cm.forget(ref, text, n_tok, model.config.n_layers - 1)
        draw(b, cm.chart_spec(gradients_charts.forget_curve, fc), "Forget product", foot, fc, exports)
        st.caption(_("The lesson's ∂C_t/∂C_{t−1} ≈ f_t: where the forget gates stay near 1, their product — and "
                     "the cell-state gradient — decays slowly; the hidden-state path falls faster."))


def layers(p: Flow):
    ref, model, foot = p.ref, p.model, p.foot
    per_layer = pd.concat([res[1].assign(model=_("layer {i}").format(i=i)) for i in range(model.config.n_layers)
                           if (res := p.run(ref, layer=i)) is not None])
    p.curves_chart(st, per_layer, _("‖∂L_t/∂h_k‖ per layer"), "Gradient per layer", foot)
    st.caption(_("The loss reaches layer 0 through every layer above it: the chain is T × {n} Jacobians "
                 "long.").format(n=model.config.n_layers))


@st.fragment  # the ρ slider reruns only this section
def exploding(p: Flow):
    ref, model, text, n_tok, shipped = p.ref, p.model, p.text, p.n_tok, p.shipped
    p.fresh("Linear chain vs trained RNN")
    rnn = ref if model.config.cell == "rnn" else next((r for _c, r, cell in shipped if cell == "rnn"), None)
    if rnn is None:
        return st.info(_("This bench needs a tanh RNN checkpoint; none is available."))
    rho = st.select_slider(_("Spectral radius ρ of W_hh"), [round(0.5 + 0.1 * i, 1) for i in range(16)], 1.2,
                           key="gf_rho", bind="query-params", help=_("max |eigenvalue| of the top layer's W_hh after rescaling."))
    try:
        ids = tuple(token_ids(cm.model(rnn), text, n_tok)[0][0].tolist())
    except ValueError as e:
        return st.warning(f"{rnn.label}: {error_lead(e)}.")
    lin, tanh, info = cm.radius_bench(rnn, ids, rho)
    both = pd.concat([lin.assign(model=_("linear regime: tanh′ = 1 (h_t = W h_{t−1} + U x_t)")),
                      tanh.assign(model=_("trained RNN, its own tanh"))])
    p.curves_chart(st, both, _("Same ρ, two regimes"), "Linear chain vs trained RNN",
                 state_line(rnn.label, text, tokens=len(ids), rho=rho))
    d = min(20, len(ids) - 2)
    st.caption(_("{name}'s own W_hh has ρ = {rho0:.2f} (‖W‖₂ = {n0:.2f}); here it is rescaled to ρ = {rho} "
                 "(‖W‖₂ = {n:.2f}). Linear chain: {lin0:.2e} at distance 0, {lin:.2e} at distance {d} — it grows "
                 "like ρ^(t−k) above 1 and shrinks below. The trained RNN at the same ρ: {tanh:.2e} at distance "
                 "{d}: a factor {f:.3f} per step, because its units saturate — the mean tanh′ = 1 − h² along the "
                 "text is {g:.3f}. Clipping cannot help here: it only shrinks. Both in float64.").format(
        name=rnn.label, rho0=info["rho_trained"], n0=info["norm_trained"], rho=rho, n=info["norm"], d=d,
        lin0=cl.at_distance(lin, 0), lin=cl.at_distance(lin, d), tanh=cl.at_distance(tanh, d),
        g=info["mean_tanh_prime"], f=cl.per_step(tanh, d)))


@st.fragment
def clipping(p: Flow):
    exports = p.exports
    p.fresh("Gradient norm per step", "Loss per step")
    a, b, c = st.columns(3)
    clip = a.select_slider(_("Threshold c"), [0.25, 0.5, 1.0, 2.0, 5.0], 1.0, key="gf_clip_c", bind="query-params")
    lr = b.select_slider(_("Learning rate"), [1.0, 2.0, 3.0, 4.0], 3.0, key="gf_lr", bind="query-params")
    seed = c.number_input(_("Seed"), 0, 99, 0, key="gf_seed", bind="query-params")
    with st.spinner(_("Training a small RNN (a few seconds, once per setting)...")):
        runs = cl.stack_runs(cm.clipping_run(None, lr, int(seed)), cm.clipping_run(clip, lr, int(seed)))
    runs["series"] = runs["run"].map(lambda r: _(RUNS[r]))
    applied = runs[runs["run"] == "with clipping"].assign(grad_norm=lambda f: f["applied_norm"],
                                                          series=_("with clipping: ‖g‖ applied (≤ c)"))
    norms = pd.concat([runs, applied])
    foot = state_line(None, "", c=clip, lr=lr, seed=int(seed))
    draw(st, cm.chart_spec(gradients_charts.training_curves, norms, clip, "grad_norm", _("‖g‖ per step (threshold c dashed)"),
                           _("‖g‖ (log scale)"), True), "Gradient norm per step", foot, norms, exports)
    draw(st, cm.chart_spec(gradients_charts.training_curves, runs, clip, "loss", _("Loss per step"), _("loss (nats)")),
         "Loss per step", foot, runs, exports)
    s = cl.run_summary(runs, clip)
    free, kept = s["without clipping"], s["with clipping"]
    st.caption(_("A one-layer tanh RNN (64 units) trained by plain SGD on the first 20,000 characters of {src}, "
                 "60 steps, the same seed and batches twice. Without clipping ‖g‖ reaches {fmax:.1f} and one step "
                 "raises the loss by {fjump:.2f} nats (last 10 steps: {ffin:.2f}); with "
                 "torch.nn.utils.clip_grad_norm_(c = {c}) every applied ‖g‖ is ≤ {amax:.3f}, the largest jump is "
                 "{kjump:.2f} and the last 10 steps average {kfin:.2f}. Clipping only shrinks: it cannot undo "
                 "vanishing.").format(
        src=_("the held-out Shakespeare plays") if cm.clipping_corpus()[1] else _("the sample passage shipped with seqviz"),
        fmax=free["max_norm"], fjump=free["jump"], ffin=free["final"], c=clip, amax=kept["max_applied"],
        kjump=kept["jump"], kfin=kept["final"]))


@st.fragment
def what_if(p: Flow):
    ref, model, text, tokens, dist = p.ref, p.model, p.text, p.tokens, p.dist
    p.fresh("Before and after the change")
    st.caption(_("Each change is applied to a private copy of the model; the shared model is never modified."))
    kind = st.radio(_("Change"), list(CHANGES), format_func=lambda k: _(CHANGES[k]), horizontal=True, key="gf_change")
    if kind.startswith("Shift") and model.config.cell != "lstm":
        return st.info(_("Only an LSTM has a forget gate; pick an LSTM checkpoint."))
    edit = ("forget_shift", st.slider(_("Forget-bias shift"), -5.0, 5.0, 2.0, 0.5, key="gf_fshift", bind="query-params")) \
        if kind.startswith("Shift") else ("orthogonal", True)
    if (res := p.run(ref, edit=edit)) is None:
        return
    if "spectrum" in res[3]:
        before = gr.recurrent_spectrum(model, model.config.n_layers - 1).set_index("block")
        st.dataframe(t := pd.merge(before, res[3]["spectrum"].set_index("block"), left_index=True, right_index=True,
                                   suffixes=(" " + _("before"), " " + _("after"))), column_config=numbers(t))
    both = pd.concat([dist.assign(model=_("original")), res[1].assign(model=_("changed copy"))])
    p.curves_chart(st, both, _("Before and after the change"), "Before and after the change",
                 state_line(ref.label, text, tokens=len(tokens), change=f"{edit[0]} {edit[1]}"))


@st.fragment
def connectivity(p: Flow):
    ref, text, n_tok, tokens = p.ref, p.text, p.n_tok, p.tokens
    if len(tokens) < 3:
        return st.info(_("Type at least three tokens: the prediction after position 1 or later is what is traced back."))
    clamp("gf_target", 1, len(tokens) - 1)
    target = st.slider(_("Target position"), 1, len(tokens) - 1, min(len(tokens) - 1, 60), key="gf_target",
                       bind="query-params")
    conn = cm.connectivity(ref, text, n_tok, target)
    st.markdown(_("Input tokens shaded by ‖∂ logit / ∂x_k‖ for the prediction after position {target} "
                  "(token {token}, outlined). Hover a token for its value.").format(
        target=target, token=repr(tokens[target])))
    html_block(charts.connectivity_html(tokens, conn, target))


@st.fragment
def worked(p: Flow):
    exports = p.exports
    p.fresh("S6 f^k", "S4 norm-gamma bound")
    book = we.book_comparison(we.BOOK_PRINTED)
    at = book.set_index("W_hh")
    w = st.select_slider(_("W_hh of the 3-step scalar RNN"), [round(0.1 * i, 1) for i in range(1, 26)], 0.5,
                         key="gf_whh", bind="query-params", help=_("The chapter's three cases, computed: ∂h₃/∂h₁ = {a:.4f} at 0.5 and "
                                              "{b:.4f} at 0.9 (vanishes); at 2.0 tanh saturates (h₂ = {h:.4f}, "
                                              "1 − h₂² = {g:.4f}), so it is {c:.4f}: smaller still.").format(
                             a=at.loc[0.5, "∂h_3/∂h_1"], b=at.loc[0.9, "∂h_3/∂h_1"], c=at.loc[2.0, "∂h_3/∂h_1"],
                             h=at.loc[2.0, "h_2"], g=at.loc[2.0, "1 − h_2²"]))
    st.markdown("$h_t = \\tanh(W_{hh} h_{t-1} + W_{xh} x_t + b)$, $W_{xh}=1$, $b=0$, $h_0=0$, $x = 1.0, 0.5, -0.2$")
    table, compare = we.scalar_rnn(w), we.book_comparison([*we.BOOK_PRINTED, w])
    st.dataframe(table, hide_index=True, column_config=numbers(table))
    compare = compare.rename(columns=lambda c: _(COLUMNS[c]) if c in COLUMNS else c)
    st.dataframe(compare, hide_index=True, column_config=numbers(compare))
    st.caption(_("This page's ∂h₃/∂h₁ runs the forward pass at each W_hh; the book's table reused the W = 0.5 "
                 "states for every row, which gives its {book:.4f} at 2.0 (the book's method recomputed: "
                 "{method:.4f}) where the true value is {true:.4f}.").format(
        book=we.BOOK_PRINTED[2.0], method=at.loc[2.0, "∂h_3/∂h_1 (book's method)"], true=at.loc[2.0, "∂h_3/∂h_1"]))
    st.markdown(_("**The chapter's 2-step scalar LSTM** (W_f=[0.1, 0.9], b_f=0.5; W_i=[0.3, 0.7], b_i=−0.2; "
                  "W_C=[0.2, 0.8], b_C=0.1; W_o=[0.4, 0.6], b_o=0; x = 1.0, 0.0)"))
    st.dataframe(lstm := we.scalar_lstm(), hide_index=True, column_config=numbers(lstm))
    st.download_button(_("Both tables as CSV"), pd.concat([table.assign(example="rnn"), lstm.assign(
        example="lstm")]).to_csv(index=False), "worked_examples.csv", key="gf_csv")
    a, b = st.columns(2)
    fp, ng = we.forget_products(), we.norm_gamma_bound(distances=tuple(range(0, 201, 10)))
    draw(a, cm.chart_spec(gradients_charts.power_curves, fp, "k", "f^k", "f", _("S6: f^k, the cell path's gain")),
         "S6 f^k", "worked example S6", fp, exports)
    a.dataframe(t := fp[fp["marked"]].pivot(index="k", columns="f", values="f^k").rename(columns=str),
                column_config=numbers(t, "%.4e"))
    draw(b, cm.chart_spec(gradients_charts.power_curves, ng, "t − k", "(‖W‖·γ)^(t−k)", "‖W_hh‖",
                          _("S4: (‖W‖·γ)^(t−k), γ = 1")), "S4 norm-gamma bound", "worked example S4", ng, exports)
    b.dataframe(t := ng[ng["t − k"].isin([10, 50, 100, 200])].pivot(index="t − k", columns="‖W_hh‖",
                values="(‖W‖·γ)^(t−k)").rename(columns=str), column_config=numbers(t, "%.4e"))


@st.fragment
def over_training(p: Flow):
    ref, text, n_tok, tokens, dist = p.ref, p.text, p.n_tok, p.tokens, p.dist
    p.fresh("Over training")
    if not (steps := cm.snapshots(ref)):
        return st.info(_("This checkpoint keeps no training snapshots."))
    step = st.select_slider(_("Training step"), steps + ["final"], steps[0], key="gf_snap",
                            format_func=lambda s: _("final") if s == "final" else str(s))
    snap = dist if step == "final" else cm.curves(ref.at(step), text, n_tok)[1]
    both = pd.concat([snap.assign(model=_("step {step}").format(step=step)), dist.assign(model=_("final"))])
    p.curves_chart(st, both, _("The curve while the model learned"), "Over training",
                 state_line(ref.label, text, tokens=len(tokens), step=step))

