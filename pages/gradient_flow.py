"""Gradient flow by time distance: ‖∂L_t/∂h_k‖ on real trained models, and the seeds' worked examples."""

import pandas as pd
import streamlit as st

from appkit import models as cm
from appkit.i18n import N_, _, error_lead
from appkit.export import draw, view_button
from appkit.sidebar import checkpoint_picker
from appkit.widgets import html_block
from seqviz.charts import gradients as charts
from seqviz.export import state_line
from seqviz.introspect import gradients as gr
from seqviz.introspect import worked_examples as we

CHANGES = {"Scale W_hh to a spectral norm": N_("Scale W_hh to a spectral norm"),
           "Shift the forget-gate bias": N_("Shift the forget-gate bias"), "Orthogonal W_hh": N_("Orthogonal W_hh"),
           "One training step with clipping": N_("One training step with clipping")}
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
text = c1.text_area(_("Text"), TEXT, key="gtext", height=90, bind="query-params")
n_tok = c2.slider(_("Tokens"), 20, gr.MAX_GRADIENT_TOKENS, 100, 10, key="gtokens", bind="query-params",
                  help=_("G has one row per loss and one column per state: the cost grows with the square."))
top = model.config.n_layers - 1


def run(r, layer=-1, wrt="h", edit=()):
    try:
        return cm.curves(r, text, n_tok, layer, wrt, edit)
    except ValueError as e:
        st.warning(f"{r.label}: {error_lead(e)}.")
        return None


mine = run(ref)
if mine is None:
    st.stop()
G, dist, tokens = mine[:3]
exports.footnote = foot = state_line(ref.label, text, tokens=len(tokens))
t1, t2, t3, t4, t5, t6, t7 = st.tabs([_("Distance curve"), _("LSTM's two paths"), _("Layers"), _("What if…"),
                                      _("Connectivity"), _("Worked examples"), _("Over training")])
with t1:
    frames = []
    for c in cm.list_checkpoints("recurrent_lm"):
        try:
            c_ref = c.ref()
            cell = cm.model(c_ref).config.cell
        except (OSError, ValueError):
            continue
        res = run(c_ref)
        if res is not None:
            frames.append(res[1].assign(model=f"{c.name} ({cell.upper()})"))
    if not frames:
        frames = [dist.assign(model=_("chosen model"))]
    draw(st, charts.distance_curves(curves := pd.concat(frames)), "Gradient by distance, per model",
         state_line(None, text, tokens=len(tokens), models=", ".join(curves["model"].unique())), curves, exports)
    st.caption(_("Mean over loss positions t of ‖∂L_t/∂h_k‖ for the top layer (band: 10–90 % of t). A straight "
                 "falling line on this log axis is exponential decay: the vanilla RNN's falls fastest."))
    draw(st, charts.gradient_heatmap(G, tokens), "Gradient matrix", foot,
         pd.DataFrame(G).rename_axis("t").reset_index(), exports)
with t2:
    if model.config.cell != "lstm":
        st.info(_("Pick an LSTM checkpoint in the sidebar: only the LSTM has the cell-state path."))
    else:
        dist_c = run(ref, wrt="c")[1]
        both = pd.concat([dist.assign(model=_("via h: ‖∂L_t/∂h_k‖")), dist_c.assign(model=_("via C: ‖∂L_t/∂C_k‖"))])
        a, b = st.columns(2)
        draw(a, charts.distance_curves(both, _("Hidden-state path vs cell-state path")), "h path vs C path", foot,
             both, exports)
        draw(b, charts.forget_curve(fc := cm.forget(ref, text, n_tok, top)), "Forget product", foot, fc, exports)
        st.caption(_("The lesson's ∂C_t/∂C_{t−1} ≈ f_t: where the forget gates stay near 1, their product — and "
                     "the cell-state gradient — decays slowly; the hidden-state path falls faster."))
with t3:
    frames = [run(ref, layer=i)[1].assign(model=_("layer {i}").format(i=i)) for i in range(model.config.n_layers)]
    draw(st, charts.distance_curves(per_layer := pd.concat(frames), _("‖∂L_t/∂h_k‖ per layer")), "Gradient per layer",
         foot, per_layer, exports)
    st.caption(_("The loss reaches layer 0 through every layer above it: the chain is T × {n} Jacobians "
                 "long.").format(n=model.config.n_layers))
with t4:
    st.caption(_("Each change is applied to a private copy of the model; the shared model is never modified."))
    kind = st.radio(_("Change"), list(CHANGES), format_func=lambda k: _(CHANGES[k]), horizontal=True, key="wi")
    if kind.startswith("Scale"):
        edit = ("scale_to", st.slider(_("Spectral norm of each W_hh block"), 0.1, 3.0, 1.0, 0.1, key="wnorm"))
    elif kind.startswith("Shift"):
        edit = ("forget_shift", st.slider(_("Forget-bias shift"), -5.0, 5.0, 2.0, 0.5, key="fshift"))
    elif kind.startswith("Orth"):
        edit = ("orthogonal", True)
    else:
        clip_on = st.toggle(_("Clip the gradient"), True, key="clipon")
        clip = st.slider(_("Threshold c"), 0.1, 10.0, 1.0, 0.1, key="clipc", disabled=not clip_on)
        edit = ("clip", (st.slider(_("Learning rate"), 0.01, 5.0, 1.0, 0.01, key="lr"), clip if clip_on else None))
    if edit[0] == "forget_shift" and model.config.cell != "lstm":
        st.info(_("Only an LSTM has a forget gate; pick an LSTM checkpoint."))
    else:
        res = run(ref, edit=edit)
        if res is not None:
            dist_e, info = res[1], res[3]
            if "spectrum" in info:
                before = gr.recurrent_spectrum(model, top).set_index("block")
                after = info["spectrum"].set_index("block")
                st.dataframe(pd.merge(before, after, left_index=True, right_index=True,
                                       suffixes=(" " + _("before"), " " + _("after"))).style.format("{:.4f}"))
            else:
                m1, m2, m3 = st.columns(3)
                m1.metric(_("‖g‖ before clipping"), f"{info['grad_norm']:.4f}")
                m2.metric(_("‖g‖ after clipping"), f"{info['clipped_norm']:.4f}")
                m3.metric(_("update size ‖Δθ‖"), f"{info['update_norm']:.4f}")
            both = pd.concat([dist.assign(model=_("original")), dist_e.assign(model=_("changed copy"))])
            draw(st, charts.distance_curves(both, _("Before and after the change")), "Before and after the change",
                 state_line(ref.label, text, tokens=len(tokens), change=f"{edit[0]} {edit[1]}"), both, exports)
with t5:
    if len(tokens) < 3:
        st.info(_("Type at least three tokens: the prediction after position 1 or later is what is traced back."))
    else:
        if st.session_state.get("gtarget", 1) > len(tokens) - 1:  # the text got shorter than the last target
            st.session_state["gtarget"] = len(tokens) - 1
        target = st.slider(_("Target position"), 1, len(tokens) - 1, min(len(tokens) - 1, 60), key="gtarget",
                           bind="query-params")
        conn = cm.connectivity(ref, text, n_tok, target)
        st.markdown(_("Input tokens shaded by ‖∂ logit / ∂x_k‖ for the prediction after position {target} "
                      "(token {token}, outlined). Hover a token for its value.").format(
            target=target, token=repr(tokens[target])))
        html_block(charts.connectivity_html(tokens, conn, target))
with t6:
    w = st.select_slider(_("W_hh of the 3-step scalar RNN"), [round(0.1 * i, 1) for i in range(1, 26)], 0.5,
                         key="whh", help=_("The chapter's three cases: 0.5 (vanishes), 0.9 (slowly), 2.0 (explodes)."))
    st.markdown("$h_t = \\tanh(W_{hh} h_{t-1} + W_{xh} x_t + b)$, $W_{xh}=1$, $b=0$, $h_0=0$, $x = 1.0, 0.5, -0.2$")
    st.dataframe(we.scalar_rnn(w).style.format("{:.4f}", subset=pd.IndexSlice[:, ["h_t", "∂h_t/∂h_{t-1}",
                 "∂h_t/∂h_1", "w_hh·h_{t-1} + w_xh·x_t + b"]]), hide_index=True)
    st.caption(_("Each row is the forward pass at this W_hh (the book's table reuses h from W_hh = 0.5 for every "
                 "row)."))
    st.markdown(_("**The chapter's 2-step scalar LSTM** (W_f=[0.1, 0.9], b_f=0.5; W_i=[0.3, 0.7], b_i=−0.2; "
                  "W_C=[0.2, 0.8], b_C=0.1; W_o=[0.4, 0.6], b_o=0; x = 1.0, 0.0)"))
    st.dataframe(we.scalar_lstm().style.format("{:.4f}"), hide_index=True)
    st.download_button(_("Both tables as CSV"), pd.concat([we.scalar_rnn(w).assign(example="rnn"),
                       we.scalar_lstm().assign(example="lstm")]).to_csv(index=False), "worked_examples.csv")
    a, b = st.columns(2)
    fp = we.forget_products()
    draw(a, charts.power_curves(fp, "k", "f^k", "f", _("S6: f^k, the cell path's gain")), "S6 f^k",
         "worked example S6", fp, exports)
    a.dataframe(fp[fp["marked"]].pivot(index="k", columns="f", values="f^k").style.format("{:.4e}"))
    ng = we.norm_gamma_bound(distances=tuple(range(0, 201, 10)))
    draw(b, charts.power_curves(ng, "t − k", "(‖W‖·γ)^(t−k)", "‖W_hh‖", _("S4: (‖W‖·γ)^(t−k), γ = 1")),
         "S4 norm-gamma bound", "worked example S4", ng, exports)
    b.dataframe(ng[ng["t − k"].isin([10, 50, 100, 200])].pivot(index="t − k", columns="‖W_hh‖",
                values="(‖W‖·γ)^(t−k)").style.format("{:.4e}"))
with t7:
    steps = cm.snapshots(ref)
    if not steps:
        st.info(_("This checkpoint keeps no training snapshots."))
    else:
        step = st.select_slider(_("Training step"), steps + ["final"], steps[0], key="gsnap",
                                format_func=lambda s: _("final") if s == "final" else str(s))
        snap = dist if step == "final" else cm.curves(ref.at(step), text, n_tok)[1]
        both = pd.concat([snap.assign(model=_("step {step}").format(step=step)), dist.assign(model=_("final"))])
        draw(st, charts.distance_curves(both, _("The curve while the model learned")), "Over training",
             state_line(ref.label, text, tokens=len(tokens), step=step), both, exports)
