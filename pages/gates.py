"""Gate activations per token: heat map, means per token, and tabs for memory, saturation, units, patterns."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import draw_view, view_button
from appkit.i18n import N_, _, ngettext, pgettext
from appkit.sidebar import deferred_picker
from appkit.state import chart_controls, clamp, follow_link, forward_moved, keep_option
from appkit.widgets import first_text, lazy_expander, lazy_tabs
from seqviz import inputs as tx
from seqviz.export import state_line
from seqviz.families import of
from seqviz.views import gates as views
from seqviz.views import implicit as iv
from seqviz.views.gates import COUNT, ORDER, feature_label, label

TABS = [N_("Memory ∏ f"), N_("Memory as attention"), N_("Parameter count")]
MOVED = (N_("Saturation"), N_("Unit inspector"), N_("Pattern search"))  # now on the Single units page


st.title(_("Gate activations per token"))
st.caption(_("What each gate did at each token. LSTM: input gate i, forget gate f, output gate o, the candidate g̃ "
             "(what may be written) and the cell state c = f·c + i·g̃ (the memory); GRU: reset r, update z, "
             "candidate h̃. A plain RNN has no gates: its h and pre-activation are shown."))
# A link to a tab now on the Single units page opens it there, with the link's text, layer and signal.
forward_moved("gate_tab", MOVED, "pages/units.py", {"gate_tab": "units_tab", "gate_": "units_"})
picked = deferred_picker("recurrent_lm", prefer="shakespeare-char-lstm")  # three gates, unless one was chosen
if picked is None:
    st.stop()
ref = picked.ref
info = picked.info()  # config, tokenizer, card: no torch while the first charts come shipped
cfg = info.config
family = of(cfg)  # what the page offers: the family table's entry, never its name
exports = view_button("gates", f"Gate activations · {ref.label}", info.card)
raw = st.text_area(_("Text"), views.DEFAULT_TEXT, key="gate_text", height=120, bind="query-params",
                   help=_("Up to {n:,} tokens are read; only the first text if you separate several.").format(
                       n=tx.MAX_TOKENS))
text = first_text(info, raw, _("Type a text above to see its gates."))
n_tokens = len(text)
clicked = (st.session_state.get("gate_heat") or {}).get("selection", {}).get("pick") or []
if clicked and clicked[0].get("step") != st.session_state.get("gate_clicked"):  # a click on the heatmap
    st.session_state["gate_pos"] = st.session_state["gate_clicked"] = int(clicked[0]["step"])
follow_link(f"gate_signal_{cfg.cell}", family.signals, label)  # a link made in another language
# The signal on a row of its own: in a quarter of the width the LSTM's six names were cut off.
signal = st.segmented_control(_("Signal"), list(family.signals), default=family.signals[0], required=True,
                              format_func=label, key=f"gate_signal_{cfg.cell}", bind="query-params")
c1, c2 = st.columns([1, 4])
keep_option("gate_layer", list(range(cfg.n_layers)))
layer = c1.selectbox(_("Layer"), list(range(cfg.n_layers)), key="gate_layer", bind="query-params")
clamp("gate_pos", 0, max(n_tokens - 1, 1))
pos = min(c2.slider(_("Position"), 0, max(n_tokens - 1, 1), key="gate_pos", bind="query-params",
                    help=_("The token to sort by and to start the memory product at; clicking the heatmap sets it.")),
          n_tokens - 1)
# The unit order and count are the heat map's own controls, under it: they switch the view in the browser.
follow_link("gate_sort", list(views.SORTS), lambda k: _(views.SORTS[k]))  # a link made in another language
least, most = views.unit_range(cfg.d_hidden)
now, opened = chart_controls("gate_heat", {
    ORDER: ("by", "gate_sort", "variance", views.sort_named),
    COUNT: ("n", "gate_units", min(views.UNITS_SHOWN, most), lambda v: max(least, min(int(v), most)))},
    identity=(ref.path, text, layer, signal, pos))  # all the heat map shows but its own two controls
order_by = now[ORDER]
heat = cm.view(views.heat_map, ref, ids=text, layer=layer, signal=signal, order_by=opened[ORDER],
               units=opened[COUNT], position=pos)
facts = heat.facts
exports.footnote = state_line(ref.label, raw, layer=layer, signal=signal, sorted_by=order_by, position=pos,
                              tokens=f"{facts['first']}–{facts['last']} of {n_tokens}")
draw_view(heat, exports.footnote, exports, csv=False, file_width={"step": 12}, on_select="rerun", key="gate_heat",
          selection_mode=("pick", ORDER, COUNT))
means = cm.view(views.gate_means, ref, ids=text, layer=layer, position=views.window(pos, n_tokens).start)
draw_view(means, exports.footnote, exports, csv=False, file_width={"step": 12})
if facts["paged"]:
    st.caption(_("Tokens {first}–{last} of {n}: the page of {window} holding the position.").format(
        first=facts["first"], last=facts["last"], n=n_tokens, window=views.WINDOW))
d1, d2 = st.columns(2)
d1.download_button(_("Heatmap values (CSV)"), lambda: heat.data.to_csv(index=False), f"{signal}_layer{layer}.csv",
                   "text/csv")
d2.download_button(_("Gate means (CSV)"), lambda: means.data.to_csv(index=False), f"gate_means_layer{layer}.csv",
                   "text/csv")


@st.fragment  # the unit and the bias shift rerun this tab only
def memory_tab():
    spans = cm.view(views.memory_spans, ref, ids=text, layer=layer, position=pos, delta=0.0)
    table, f = spans.data, spans.facts
    span = dict(zip(table["unit"], table["span"]))
    more = lambda u: "≥ " if span[u] == f["rest"] else ""  # noqa: E731 - kept to the text's end
    unit = st.selectbox(_("Unit (longest memory first)"), list(table["unit"]), key=f"gate_mem_unit_{layer}_{pos}",
                        format_func=lambda u: _("unit {u} · {more}{n} tokens").format(u=u, more=more(u), n=span[u]))
    if no_bias := family.why_not("retention_bias"):  # a Mamba's decay: Δ's bias moves every state of the channel
        delta = 0.0
        st.caption(no_bias)
    else:
        delta = st.slider(_("Shift the bias b_{s} of the {g} by Δ (a copy of the model)").format(
            g=label(family.retention), s=f["symbol"]), -3.0, 3.0, views.DELTA, 0.5, key="gate_dbias",
            bind="query-params")
    product = cm.view(views.memory_product, ref, ids=text, layer=layer, position=pos, unit=unit, delta=delta)
    p, shifted = product.facts, cm.view(views.memory_spans, ref, ids=text, layer=layer, position=pos, delta=delta)
    with_delta = _("with Δ = {d:+.1f}").format(d=delta)
    m1, m2 = st.columns(2)
    m1.metric(_("Unit {u}: ∏{s} > 0.5 for").format(u=unit, s=f["symbol"]), ngettext(
        "{n} token", "{n} tokens", p["span"]).format(n=f"{more(unit)}{p['span']}"), f"{p['longer_by']:+d} {with_delta}")
    median = int(f["median"])
    m2.metric(_("Median over the {n} units").format(n=f["units"]), ngettext("{n} token", "{n} tokens", median).format(
        n=median), f"{int(shifted.facts['median_shifted'] - f['median']):+d} {with_delta}")
    footnote = state_line(ref.label, raw, layer=layer, unit=unit, start=pos, bias_shift=delta)
    draw_view(product, footnote, exports, csv=False)
    # The product is the lesson; the gate per token behind its steps is one click away, drawn once opened (the
    # browser draws what a collapsed expander holds).
    if steps := lazy_expander(_("The {g} of this unit at each token").format(g=label(family.retention)),
                              "gate_mem_steps", icon=":material/show_chart:"):
        with steps:
            draw_view(cm.view(views.retention, ref, ids=text, layer=layer, position=pos, unit=unit, delta=delta),
                      footnote, exports, csv=False)
    st.caption(_("∏ {s} from position p = {pos} is how much of the state held just before p is still there at each "
                 "later token; the dotted line is 0.5. For the LSTM it is exactly ∂c_t/∂c_(p−1) along the cell path "
                 "(the constant error carousel). Units are ranked by how long it stays above 0.5.").format(
                     s=f["symbol"], pos=pos)
               + (" " + _(family.retention_note) if family.retention_note else ""))
    top = cm.view(views.memory_table, ref, ids=text, layer=layer, position=pos)
    if ranking := lazy_expander(_("The {n} units that keep their memory longest, and what each tracks").format(
            n=len(top.data)), "gate_mem_ranking", icon=":material/table:"):
        with ranking:
            units_table(top, table, f)


@st.fragment  # the unit and the scale rerun this tab only
def attention_tab():
    """Memory as attention: what each earlier token still adds to the memory, in the alignment's shape."""
    st.caption(_("Unrolled, s_t = a_t ⊙ s_(t−1) + b_t is s_t = Σ_j (∏_(k=j+1..t) a_k) ⊙ b_j: the product of {s} since "
                 "token j weighs what token j wrote, as an attention weight would. Rows are steps t, columns the "
                 "tokens j they still hold.").format(s=family.symbol or "a"))
    reach = cm.view(iv.reach, ref, ids=text, layer=layer).data
    shown = list(reach["unit"][:32])
    word = _(family.unit)
    unit = st.selectbox(_("Which {what} (longest reach first)").format(what=word), [None, *shown],
                        key=f"gate_att_unit_{layer}", format_func=lambda u: _("all {what}s of the layer").format(
                            what=word) if u is None else _("{what} {u} · {r:.0%} from far back").format(
                            what=word, u=u, r=float(reach.set_index("unit").loc[u, "reach"])))
    footnote = state_line(ref.label, raw, layer=layer, unit=unit, position=pos)
    if unit is None:
        drawn = cm.view(iv.layer_map, ref, ids=text, layer=layer)
        draw_view(drawn, footnote, exports)
        st.caption(iv.layer_caption(drawn.facts))
    else:
        scale = st.segmented_control(_("Shade by"), list(iv.SCALES), default="row", required=True,
                                     format_func=lambda k: _(iv.SCALES[k]), key="gate_att_scale")
        drawn = cm.view(iv.unit_map, ref, ids=text, layer=layer, unit=unit, scale=scale)
        draw_view(drawn, footnote, exports)
        st.caption(iv.caption(drawn.facts))
    at = cm.view(iv.target, ref, ids=text, layer=layer, position=pos)
    draw_view(at, footnote, exports)
    st.caption(iv.target_caption(at.facts))


def units_table(top, table, f):
    """The ranking expander's table (the units that keep their memory longest) and its CSV."""
    import pandas as pd

    t = top.data
    st.table(t.assign(feature=t["feature"].map(feature_label), to_end=t["to_end"].map({True: "✓", False: ""}),
                      log10_kept=t["log10_kept"].map("{:.2f}".format), mean_gate=t["mean_gate"].map("{:.3f}".format),
                      r=t["r"].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")).drop(columns="span_shifted").rename(
        columns={"unit": pgettext("hidden unit", "Unit"), "span": _("tokens above 0.5"),
                 "to_end": _("to the text's end"), "log10_kept": _("log₁₀ ∏ to the end"),
                 "mean_gate": _("mean {s}").format(s=f["symbol"]),
                 "feature": _("its {c} tracks").format(c=f["held"])}).set_index(pgettext("hidden unit", "Unit")))
    st.caption(_("What a unit tracks: the text feature its {c} correlates with most (Pearson r over {n:,} tokens of "
                 "held-out text).").format(c=f["held"], n=top.facts["sample_tokens"]))
    st.download_button(_("Memory spans (CSV)"), table.to_csv(index=False), "memory_spans.csv", "text/csv")


def parameter_tab():
    """Textbook vs PyTorch parameter counts against the loaded weights."""
    import pandas as pd

    from seqviz.introspect.gates import parameter_groups

    shipped = [c for c in cm.list_checkpoints("recurrent_lm") if of(cm.shape(c.ref())).weight_groups][:6]
    tables = [] if ref.path in {c.path for c in shipped} else [parameter_groups(picked.open()).assign(model="this model")]
    tables += [parameter_groups(cm.model(c.ref())).assign(model=c.name) for c in shipped]  # RNN/GRU/LSTM layers
    count = st.column_config.NumberColumn
    st.dataframe(pd.concat(tables, ignore_index=True), hide_index=True, column_config={
        "layer": _("layer"), "cell": _("cell type"), "groups": _("weight groups"), "model": _("model"),
        "formula_one_bias": count(_("textbook (one bias)"), format="localized"),
        "formula_pytorch": count(_("PyTorch (two biases)"), format="localized"),
        "actual": count(_("actual"), format="localized")})
    st.caption(_("Weight groups: RNN 1, GRU 3, LSTM 4. Textbook count per layer: groups × [d_h(d_h + d) + "
                 "d_h]; PyTorch keeps two bias vectors (b_ih, b_hh), so its layers hold groups × [d_h(d_h + d) + "
                 "2·d_h]: the 'actual' column, summed from the loaded weights, matches it."))


tab, container = lazy_tabs(TABS, "gate_tab")  # only the open tab runs
with container:
    need = {"Memory ∏ f": "memory", "Memory as attention": "linear_form", "Parameter count": "weight_groups"}[tab]
    if not family.applies(need):  # the family's own sentence (a Mamba's quotes its size)
        sized = {"n": picked.open().num_parameters()} if need == "weight_groups" else {}  # loaded only to count
        st.info(family.why_not(need, **sized))
    else:
        {"Memory ∏ f": memory_tab, "Memory as attention": attention_tab, "Parameter count": parameter_tab}[tab]()
picked.finish()  # after the charts: the sidebar says what was found; the model loads for the next move
cm.complete(lambda: views.sources(cm.model(ref), text, layer))  # while the visitor reads: what every position slices
