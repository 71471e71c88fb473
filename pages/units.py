"""Single units: how often each one saturates, one unit on your text and the text features it tracks, and
LSTMVis's pattern search (the units on across a span, found again in the corpus). What a unit does, shown by
changing it, is the Switch units off page's (``pages/interventions.py``)."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import export_buttons, show, view_button
from appkit.i18n import N_, _, pgettext
from appkit.sidebar import deferred_picker
from appkit.state import carry_over, clamp, follow_link, forward_moved, keep_option
from appkit.widgets import first_text, lazy_tabs
from seqviz import inputs as tx
from seqviz.export import state_line
from seqviz.families import of
from seqviz.views import gates as views
from seqviz.views.gates import ANY, feature_label, label
from seqviz.views.spec import printable

# The intervention tabs are a page of their own now: an older link (?units_tab=Switch units off) opens it there.
forward_moved("units_tab", (N_("Switch units off"), N_("Patch a state")), "pages/interventions.py",
              {"units_tab": "iv_tab"})
st.title(_("Single units"))
st.caption(_("What one hidden unit or gate does: how often it saturates over held-out text, where it is on in "
             "your text and which text feature it follows, and which units are on together across a span."))
picked = deferred_picker("recurrent_lm", prefer="shakespeare-char-lstm")
if picked is None:
    st.stop()
ref = picked.ref
info = picked.info()  # config, tokenizer, card: no torch while the first charts come shipped
cfg = info.config
family = of(cfg)  # what the page offers: the family table's entry, never its name
exports = view_button("units", f"Single units · {ref.label}", info.card)
carry_over("units_text", "units_layer")  # shared with Switch units off on purpose: the text and layer follow the visitor


def controls(signals: bool = True) -> tuple[str, list, int, str | None]:
    """The text, layer and (``signals``) signal, drawn on the tabs that read them: the Saturation tab, which
    covers every layer and signal over held-out text, shows none of them (a control there changed nothing)."""
    raw = st.text_area(_("Text"), views.DEFAULT_TEXT, key="units_text", height=120, bind="query-params",
                       help=_("Up to {n:,} tokens are read; only the first text if you separate several.").format(
                           n=tx.MAX_TOKENS))
    text = first_text(info, raw, _("Type a text above to see its units."))
    c1, c2 = st.columns([1, 3])
    keep_option("units_layer", list(range(cfg.n_layers)))
    layer = c1.selectbox(_("Layer"), list(range(cfg.n_layers)), key="units_layer", bind="query-params")
    if not signals:
        return raw, text, layer, None
    follow_link(f"units_signal_{cfg.cell}", family.signals, label)
    signal = c2.segmented_control(_("Signal"), list(family.signals), default=family.signals[0], required=True,
                                  format_func=label, key=f"units_signal_{cfg.cell}", bind="query-params")
    return raw, text, layer, signal


def saturation_tab():
    bounds = st.select_slider(_("A gate is saturated below / above"), list(views.SATURATION), "0.1 / 0.9",
                              key="units_sat", bind="query-params")
    low, high = views.SATURATION[bounds]
    one = {}
    if views.one_layer(cfg, 0):  # too many units for one chart (a model of real size): a layer at a time
        keep_option("units_layer", list(range(cfg.n_layers)))
        one = views.one_layer(cfg, st.selectbox(_("Layer"), list(range(cfg.n_layers)), key="units_layer",
                                                bind="query-params"))
    sat = cm.view(views.saturation, ref, low=low, high=high, **one)
    f = sat.facts
    if f.get("note"):
        st.info(f["note"])
    show(st, sat.spec)
    export_buttons(sat.spec, sat.title, state_line(ref.label, None, below=f["low"], above=f["high"]),
                   lambda: sat.data, exports, csv=False)
    st.caption(_("Over {n:,} tokens of held-out text. Each dot is a unit: the fraction of tokens where its "
                 "gate is below {lo:g} (left) or above {hi:g} (right), as in Karpathy, Johnson & Fei-Fei (2015) "
                 "(0.1 / 0.9); tanh signals use {low:g} / {high:g}, the same fraction of their maximal slope. Units "
                 "on the dashed line are always saturated.").format(n=f["tokens"], lo=f["low"], hi=f["high"],
                                                                   low=round(f["tanh_low"], 2),
                                                                   high=round(f["tanh_high"], 2)))
    st.download_button(_("Saturation (CSV)"), lambda: sat.data.to_csv(index=False), "saturation.csv", "text/csv")


def unit_tab():
    raw, text, layer, signal = controls()
    features = [ANY] + cm.view(views.unit_ranking, ref, layer=layer, signal=signal).facts["features"]
    keep_option("units_feature", features)
    follow_link("units_feature", features, feature_label)
    chosen = st.selectbox(_("Rank units by their correlation with"), features, key="units_feature",
                          bind="query-params", format_func=feature_label)
    ranking = cm.view(views.unit_ranking, ref, layer=layer, signal=signal, feature=chosen)
    last = ranking.facts["units"] - 1  # the signal's own width: a Mamba's inner signals are wider than d_hidden
    clamp("units_unit", 0, last)
    first = int(ranking.data["unit"].iloc[0]) if len(ranking.data) else 0  # the unit that follows a feature best
    unit = st.number_input(pgettext("hidden unit", "Unit"), 0, last, first, key="units_unit",
                           bind="query-params")
    shown = cm.view(views.unit_on_text, ref, ids=text, layer=layer, signal=signal, unit=unit)
    show(st, shown.spec)
    export_buttons(shown.spec, shown.title, state_line(ref.label, raw, layer=layer, signal=signal, unit=unit),
                   shown.data, exports)
    if ranking.spec is None:
        st.info(_("No text feature varies over the sample; nothing to rank."))
        return
    show(st, ranking.spec, width="stretch")
    export_buttons(printable(ranking.spec, 420), ranking.title, state_line(ref.label, None, layer=layer, signal=signal,
                   feature=chosen), ranking.data, exports, csv=False)
    st.caption(_("Pearson r between each unit's {signal} and simple features of the text, over {n:,} "
                 "tokens of held-out text; the strongest 20. Type a unit above to see it on your text.").format(
        signal=label(signal), n=ranking.facts["sample_tokens"]))
    st.download_button(_("Unit ranking (CSV)"), lambda: ranking.data.to_csv(index=False), "unit_ranking.csv")


def pattern_tab():
    """LSTMVis: the units on across a span, searched in the corpus."""
    from seqviz.introspect.gates import row_tokens, unit_matrix
    from seqviz.introspect.units import pattern_search, select_units

    _raw, text, layer, _signal = controls(signals=False)
    n_tokens = len(text)
    st.caption(_("As in LSTMVis (Strobelt et al. 2018): the units of layer h that are above the threshold "
                 "across the span and not just before or after it form a pattern; the corpus places where the "
                 "same units are on together are listed, best match first."))
    clamp("units_span", 0, n_tokens)
    span = st.slider(_("Span"), 0, n_tokens, (0, min(4, n_tokens)), key="units_span")
    thr = st.slider(_("Threshold"), -0.5, 0.95, 0.3, 0.05, key="units_thr", bind="query-params")
    edges = st.checkbox(_("…and off just before and after it"), True, key="units_edges", bind="query-params")
    if span[1] <= span[0]:
        st.info(_("Select a span of at least one token."))
        return
    trace = cm.trace(ref, (text,))
    tokens = row_tokens(trace)
    units = select_units(unit_matrix(trace, layer, "h"), span[0], span[1], thr, int(edges), int(edges))
    st.write(_("Span «{span}»: {n} unit(s) on: {units}").format(
        span="".join(tokens[span[0]:span[1]]), n=len(units), units=list(map(int, units))[:40]))
    if len(units) and st.toggle(_("Search the held-out corpus"), key="units_search"):
        index = cm.state_index(ref, layer)
        hits = pattern_search(index, units, thr, span[1] - span[0])
        st.caption(_("{n:,} tokens searched ({source}).").format(n=len(index), source=index.info["source"]))
        st.dataframe(hits.assign(**{c: hits[c].str.replace("\n", "⏎") for c in ("before", "match", "after")}),
                     hide_index=True)
        st.download_button(_("Matches (CSV)"), hits.to_csv(index=False), "pattern_matches.csv", "text/csv")


TABS = {N_("Saturation"): saturation_tab, N_("Unit inspector"): unit_tab, N_("Pattern search"): pattern_tab}
opened, container = lazy_tabs(list(TABS), "units_tab")  # only the open tab runs
with container:
    TABS[opened]()
picked.finish()  # after the charts: the sidebar says what was found; the model loads for the next move
