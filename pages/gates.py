"""Gate activations per token: heatmaps, per-token means, saturation, unit inspector, pattern search, memory."""

import streamlit as st

from appkit import models as cm
from appkit import texts as tx
from appkit.export import export_buttons, view_button
from appkit.i18n import N_, _, current_language
from appkit.sections import gates as sec
from appkit.sections.gates import label
from appkit.widgets import lazy_tabs
from appkit.sidebar import checkpoint_picker
from appkit.state import clamp, follow_link, keep_option
from seqviz.charts.gates import heatmap_frame, printable
from seqviz.export import state_line
from seqviz.introspect.gates import SIGNALS, gate_means, row_tokens

UNITS_SHOWN = 32  # rows of the heat map at first: large enough to read from the back of a room
SORTS = {"variance": N_("variance"), "value": N_("value"), "index": N_("index")}
TABS = [N_("Memory ∏ f"), N_("Saturation"), N_("Unit inspector"), N_("Pattern search"), N_("Parameter count")]
st.title(_("Gate activations per token"))
st.caption(_("What each gate did at each token. LSTM: input gate i, forget gate f, output gate o, the candidate g̃ "
             "(what may be written) and the cell state c = f·c + i·g̃ (the memory); GRU: reset r, update z, "
             "candidate h̃. A plain RNN has no gates: its h and pre-activation are shown."))
ref = checkpoint_picker("recurrent_lm", prefer="shakespeare-char-lstm")  # three gates, unless one was chosen
if ref is None:
    st.stop()
model = cm.model(ref)
cfg = model.config
exports = view_button("gates", f"Gate activations · {ref.label}", model)
DEFAULT = "HAMLET.\nTo be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n" \
          "The slings and arrows of outrageous fortune. [Exit.]\n"
raw = st.text_area(_("Text"), DEFAULT, key="gate_text", height=120, bind="query-params",
                   help=_("Up to {n:,} tokens are read; only the first text if you separate several.").format(
                       n=tx.MAX_TOKENS))
ids, notices = tx.read_texts(model, "\n".join(tx.split_texts(raw)[:1]))
for notice in notices:
    st.warning(notice)
if not ids:
    st.info(_("Type a text above to see its gates."))
    st.stop()
text, lang = tuple(ids[:1]), current_language()  # the first text; the charts' language
trace = cm.trace(ref, text)
tokens = row_tokens(trace)
picked = (st.session_state.get("gate_heat") or {}).get("selection", {}).get("pick") or []
if picked and picked[0].get("step") != st.session_state.get("gate_clicked"):  # a click on the heatmap
    st.session_state["gate_pos"] = st.session_state["gate_clicked"] = int(picked[0]["step"])
follow_link(f"gate_signal_{cfg.cell}", SIGNALS[cfg.cell], label)  # a link made in another language
# The signal on a row of its own: in a quarter of the width the LSTM's six names were cut off.
signal = st.segmented_control(_("Signal"), list(SIGNALS[cfg.cell]), default=SIGNALS[cfg.cell][0], required=True,
                              format_func=label, key=f"gate_signal_{cfg.cell}", bind="query-params")
c1, c2, c3 = st.columns([1, 2, 2])
keep_option("gate_layer", list(range(cfg.n_layers)))
layer = c1.selectbox(_("Layer"), list(range(cfg.n_layers)), key="gate_layer", bind="query-params")
follow_link("gate_sort", list(SORTS), lambda k: _(SORTS[k]))
order_by = c2.radio(_("Sort units by"), list(SORTS), format_func=lambda k: _(SORTS[k]), horizontal=True,
                    key="gate_sort", bind="query-params",
                    help=_("value = value at the chosen position (click a heatmap cell)."))
UNITS = (4, max(5, min(96, cfg.d_hidden)))  # the unit count's range
clamp("gate_units", *UNITS)
n_units = c3.slider(_("Units shown"), *UNITS, min(UNITS_SHOWN, cfg.d_hidden), key="gate_units", bind="query-params")
clamp("gate_pos", 0, max(len(tokens) - 1, 1))
pos = min(st.slider(_("Position"), 0, max(len(tokens) - 1, 1), key="gate_pos", bind="query-params",
                    help=_("The token to sort by and to start the memory product at; clicking the heatmap sets it.")),
          len(tokens) - 1)
values, order, win, heat_frame = sec.heat_parts(trace, layer, signal, order_by, n_units, pos)
heat = cm.view_spec(sec.heat_spec, ref, text, layer, signal, order_by, n_units, sec.heat_at(order_by, pos), lang)
cm.show(st, heat, width="stretch", on_select="rerun", key="gate_heat", selection_mode="pick")
exports.footnote = state_line(ref.label, raw, layer=layer, signal=signal, sorted_by=order_by, position=pos,
                              tokens=f"{win[0]}–{win[-1]} of {len(tokens)}")
export_buttons(printable(heat, {"step": 12}), f"{signal} heatmap", exports.footnote, heat_frame, exports, csv=False)
means = gate_means(trace, cfg.cell, layer)
means_spec = cm.view_spec(sec.means_spec, ref, text, layer, win[0], lang)
cm.show(st, means_spec, width="stretch")
export_buttons(printable(means_spec, {"step": 12}), "Gate means per token", exports.footnote,
               means[means["step"].isin(win)], exports, csv=False)
if len(tokens) > sec.WINDOW:
    st.caption(_("Tokens {first}–{last} of {n}: the page of {window} holding the position.").format(
        first=win[0], last=win[-1], n=len(tokens), window=sec.WINDOW))
d1, d2 = st.columns(2)
d1.download_button(_("Heatmap values (CSV)"), lambda: heatmap_frame(values, tokens, order).to_csv(index=False),
                   f"{signal}_layer{layer}.csv", "text/csv")
d2.download_button(_("Gate means (CSV)"), lambda: means.to_csv(index=False), f"gate_means_layer{layer}.csv", "text/csv")


tab, container = lazy_tabs(TABS, "gate_tab")  # only the open tab runs
view = sec.GateView(ref, model, raw, ids, trace, tokens, layer, signal, pos, values, order, exports)
with container:
    if tab == "Memory ∏ f" and cfg.cell == "rnn":
        st.info(_("A plain RNN has no gate that keeps its state: its memory is rewritten through tanh every step."))
    else:
        {"Memory ∏ f": sec.memory_tab, "Saturation": sec.saturation_tab, "Unit inspector": sec.unit_tab,
         "Pattern search": sec.pattern_tab, "Parameter count": sec.parameter_tab}[tab](view)
