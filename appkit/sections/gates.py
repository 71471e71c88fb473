"""Sections of the gate page (pages/gates.py): its charts as views (``models.view_spec``), the memory fragment
and the bodies of its lazy tabs."""

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from appkit import models as cm
from appkit.export import export_buttons
from appkit.i18n import N_, _, current_language, language, localize_chart, ngettext, pgettext
from appkit.models import ModelRef
from appkit.state import clamp, follow_link, keep_option
from seqviz.charts.gates import heatmap_frame, printable
from seqviz.export import state_line
from seqviz.introspect import memory as mem
from seqviz.introspect.gates import (SIGNALS, gate_means, order_units, parameter_groups, retention_name, row_tokens,
                                     thresholds, unit_matrix)
from seqviz.introspect.units import pattern_search, select_units
from seqviz.charts import gates as gates_charts

SIGNAL_LABELS = {"input": N_("input gate i"), "forget": N_("forget gate f"), "cell": N_("candidate g̃"),
                 "output": N_("output gate o"), "c": N_("cell state c"), "h": N_("hidden state h"),
                 "reset": N_("reset gate r"), "update": N_("update gate z"), "new": N_("candidate h̃"),
                 "preact": N_("pre-activation")}
FEATURES = {"inside_brackets": N_("inside brackets"), "inside_quotes": N_("inside quotes"),
            "position_in_line": N_("position in the line"), "position_in_word": N_("position in the word"),
            "after_newline": N_("after a line break"), "is_uppercase": N_("capital letter"), "is_vowel": N_("vowel"),
            "is_space": N_("space"), "is_punctuation": N_("punctuation"), "speaker_line": N_("speaker's name line"),
            "any feature": N_("any feature"), "": N_("nothing simple (|r| < 0.3)")}
label = lambda s: _(SIGNAL_LABELS[s]) if s in SIGNAL_LABELS else s  # noqa: E731
symbol = lambda cell: "f" if cell == "lstm" else "z"  # noqa: E731 - the retention gate's letter (GRU: update z)
held = lambda cell: "c" if cell == "lstm" else "h"  # noqa: E731 - the state the retention gate keeps
feature = lambda f: _(FEATURES[f]) if f in FEATURES else f  # noqa: E731


WINDOW = 64  # tokens per heatmap page


# ------------------------------------------------------------------ the page's charts, as views
# Each takes small arguments (the model, the text's ids, the page's choices, the language), so that
# ``models.view_spec`` keeps it under them.
def heat_parts(trace, layer: int, signal: str, order_by: str, n_units: int, pos: int):
    """What the heat map shows: (values [T, U], the units shown in order, the window's steps, its frame)."""
    tokens = row_tokens(trace)
    values = unit_matrix(trace, layer, signal)
    order = order_units(values, order_by, pos)[:n_units]
    lo = pos // WINDOW * WINDOW  # pages of WINDOW tokens: moving within a page redraws nothing
    win = list(range(lo, min(lo + WINDOW, len(tokens))))
    return values, order, win, heatmap_frame(values, tokens, order, win)


def heat_at(order_by: str, pos: int) -> int:
    """The position a heat map depends on: its window's start, or the position itself when sorted by value."""
    return pos if order_by == "value" else pos // WINDOW * WINDOW


def heat_spec(ref: ModelRef, ids: tuple, layer: int, signal: str, order_by: str, n_units: int, pos: int,
              lang: str) -> dict:
    """The token × unit heat map (``pos``: ``heat_at``'s)."""
    with language(lang):
        trace = cm.trace(ref, ids)
        _values, order, win, frame = heat_parts(trace, layer, signal, order_by, n_units, pos)
        return localize_chart(cm.chart_spec(gates_charts.gate_heatmap, frame, signal, row_tokens(trace)[: win[-1] + 1], order, pick="pick",
            legend=label(signal), title=_("{signal}: token × unit").format(signal=label(signal))))


def means_spec(ref: ModelRef, ids: tuple, layer: int, lo: int, lang: str) -> dict:
    """Each gate's mean over the units, per token of the window starting at ``lo``."""
    with language(lang):
        trace, cell = cm.trace(ref, ids), cm.model(ref).config.cell
        tokens = row_tokens(trace)
        win = range(lo, min(lo + WINDOW, len(tokens)))
        means = gate_means(trace, cell, layer)
        return localize_chart(cm.chart_spec(gates_charts.gate_means_chart, means[means["step"].isin(win)],
                                            tokens[: win[-1] + 1], {s: label(s) for s in SIGNALS[cell]}))


@st.cache_data(max_entries=16, show_spinner=False)
def memory_frame(ref: ModelRef, ids: tuple, layer: int, pos: int, unit: int, delta: float, lang: str) -> pd.DataFrame:
    """The memory charts' frame: ``unit``'s retention gate and its product from ``pos``, as trained and with
    the bias shifted by ``delta`` (its runs named in ``lang``)."""
    with language(lang):
        cell = cm.model(ref).config.cell
        trace, sym = cm.trace(ref, ids), symbol(cell)
        shifted = cm.what_if_gates(ref, ids[0], layer, delta)
        runs = (_("as trained"), _("b_{s} {d:+.1f}").format(s=sym, d=delta))
        return mem.product_frame(unit_matrix(trace, layer, retention_name(cell)), shifted if delta else None, unit,
                                 row_tokens(trace), pos, labels=runs)


def memory_spec(ref: ModelRef, ids: tuple, layer: int, pos: int, unit: int, delta: float, which: str,
                lang: str) -> dict:
    """One of the memory tab's two charts: ``which`` "retention" (the gate per token) or "product" (∏ f)."""
    with language(lang):
        cell = cm.model(ref).config.cell
        f, sym = retention_name(cell), symbol(cell)
        frame = memory_frame(ref, ids, layer, pos, unit, delta, lang)
        if which == "retention":  # titled with its unit: it is also saved as a picture of its own
            return localize_chart(cm.chart_spec(gates_charts.retention_chart, frame, f, title=label(f),
                                                step_title=_("position"), head=_("Unit {u}: {g} at each token").format(
                                                    u=unit, g=label(f))))
        start = row_tokens(cm.trace(ref, ids))[pos].replace("\n", "⏎")
        return localize_chart(cm.chart_spec(  # a short title: on a phone a longer one is cut off
            gates_charts.memory_chart, frame, f, product_title=_("∏ {s} (log scale)").format(s=sym), title=_(
                "Unit {u}: ∏ {s} since position {p} («{t}»)").format(u=unit, s=sym, p=pos, t=start),
            step_title=_("position")))


@dataclass
class GateView:
    """What the tabs read: the model, the text and its trace, and the page's chosen layer, signal and position."""
    ref: ModelRef
    model: object
    raw: str
    ids: list
    trace: object
    tokens: list
    layer: int
    signal: str
    pos: int
    values: object
    order: object
    exports: list


@st.fragment  # the unit and the bias shift rerun this tab only (issue 14)
def memory_tab(g: GateView):
    ref, cfg, raw, ids, trace, tokens = g.ref, g.model.config, g.raw, g.ids, g.trace, g.tokens
    layer, pos, exports = g.layer, g.pos, g.exports
    f, sym, state = retention_name(cfg.cell), symbol(cfg.cell), held(cfg.cell)
    table = mem.memory_units(trace, cfg.cell, layer, pos)
    ranking, n_sample = cm.unit_ranking(ref, layer, state)
    top = table.head(8).merge(mem.tracked_features(ranking, table["unit"][:8]), on="unit")
    span = dict(zip(table["unit"], table["span"]))
    more = lambda u: ("≥ " if span[u] == len(tokens) - pos else "")  # noqa: E731 - kept to the text's end
    unit = st.selectbox(_("Unit (longest memory first)"), list(table["unit"]), key=f"gate_mem_unit_{layer}_{pos}",
                        format_func=lambda u: _("unit {u} · {more}{n} tokens").format(u=u, more=more(u), n=span[u]))
    delta = st.slider(_("Shift the bias b_{s} of the {g} by Δ (a copy of the model)").format(g=label(f), s=sym),
                      -3.0, 3.0, 1.0, 0.5, key="gate_dbias", bind="query-params")
    text, lang = tuple(ids[:1]), current_language()
    shifted = cm.what_if_gates(ref, text[0], layer, delta)
    spans_new = mem.spans(shifted, pos)
    m1, m2 = st.columns(2)
    m1.metric(_("Unit {u}: ∏{s} > 0.5 for").format(u=unit, s=sym), ngettext("{n} token", "{n} tokens", span[unit]).format(
              n=f"{more(unit)}{span[unit]}"),
              f"{int(spans_new[unit] - span[unit]):+d} " + _("with Δ = {d:+.1f}").format(d=delta))
    m2.metric(_("Median over the {n} units").format(n=len(table)), ngettext("{n} token", "{n} tokens", int(
              table["span"].median())).format(n=int(table["span"].median())),
              f"{int(pd.Series(spans_new).median() - table['span'].median()):+d} " + _("with Δ = {d:+.1f}").format(d=delta))
    frame = memory_frame(ref, text, layer, pos, unit, delta, lang)
    footnote = state_line(ref.label, raw, layer=layer, unit=unit, start=pos, bias_shift=delta)
    # The product is the lesson; the gate per token behind its steps is one click away. Collapsed, the browser
    # does not draw it: a page switch's drawing was ~0.12 s shorter (chromium, 6 interleaved switches each).
    for which, heading, where in (("product", f"Memory product unit {unit}", st.container()), (
            "retention", f"Gate per token unit {unit}",
            st.expander(_("The {g} of this unit at each token").format(g=label(f)), icon=":material/show_chart:"))):
        with where:
            spec = cm.view_spec(memory_spec, ref, text, layer, pos, unit, delta, which, lang)
            cm.show(st, spec, width="stretch")
            export_buttons(printable(spec), heading, footnote, frame, exports, csv=False)
    st.caption(_("∏ {s} from position p = {pos} is how much of the state held just before p is still there at each "
                 "later token; the dotted line is 0.5. For the LSTM it is exactly ∂c_t/∂c_(p−1) along the cell path "
                 "(the constant error carousel). Units are ranked by how long it stays above 0.5.").format(s=sym, pos=pos)
               + (" " + _("PyTorch's GRU keeps z·h_(t−1), so its update gate z is the retention.") if sym == "z" else ""))
    # The ranking behind the unit box, one click away: collapsed, the browser does not draw it (a page switch's
    # drawing 0.18 s shorter, chromium, 8 interleaved switches each). A static table: eight rows read from the
    # back of a room in the page's own type, at a fraction of an interactive grid's cost.
    with st.expander(_("The {n} units that keep their memory longest, and what each tracks").format(n=len(top)),
                     icon=":material/table:"):
        st.table(top.assign(feature=top["feature"].map(feature), to_end=top["to_end"].map({True: "✓", False: ""}),
                            log10_kept=top["log10_kept"].map("{:.2f}".format), mean_gate=top["mean_gate"].map("{:.3f}".format),
                            r=top["r"].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")).rename(columns={
            "unit": pgettext("hidden unit", "Unit"), "span": _("tokens above 0.5"), "to_end": _("to the text's end"),
            "log10_kept": _("log₁₀ ∏ to the end"), "mean_gate": _("mean {s}").format(s=sym),
            "feature": _("its {c} tracks").format(c=state)}).set_index(pgettext("hidden unit", "Unit")))
        st.caption(_("What a unit tracks: the text feature its {c} correlates with most (Pearson r over {n:,} tokens of "
                     "held-out text).").format(c=state, n=n_sample))
        st.download_button(_("Memory spans (CSV)"), table.to_csv(index=False), "memory_spans.csv", "text/csv")


def saturation_tab(g: GateView):
    """The Saturation tab: each unit's fraction of saturated tokens over held-out text."""
    ref, cfg, exports = g.ref, g.model.config, g.exports
    sat = cm.saturation(ref, 0.1, 0.9)
    cm.show(st, spec := localize_chart(cm.chart_spec(gates_charts.saturation_chart, sat,
                                                            {s: label(s) for s in SIGNALS[cfg.cell]})))
    export_buttons(spec, "Saturation", state_line(ref.label, None, below=0.1, above=0.9), sat, exports, csv=False)
    st.caption(_("Over {n:,} tokens of held-out text. Each dot is a unit: the fraction of tokens where its "
                 "gate is below 0.1 (left) or above 0.9 (right), as in Karpathy, Johnson & Fei-Fei (2015); tanh "
                 "signals use {low:.1f} / {high:.1f}, the same fraction of their maximal slope. Units on the "
                 "dashed line are always saturated.").format(n=int(sat["tokens"].iloc[0]),
                                                            low=thresholds("h")[0], high=thresholds("h")[1]))
    st.download_button(_("Saturation (CSV)"), lambda: sat.to_csv(index=False), "saturation.csv", "text/csv")


def unit_tab(g: GateView):
    """The Unit inspector tab: one unit on the text, and the units ranked by a text feature."""
    ref, raw, tokens, layer, signal = g.ref, g.raw, g.tokens, g.layer, g.signal
    values, order, exports = g.values, g.order, g.exports
    clamp("gate_unit", 0, values.shape[1] - 1)
    unit = st.number_input(pgettext("hidden unit", "Unit"), 0, values.shape[1] - 1, int(order[0]), key="gate_unit",
                           bind="query-params")
    cm.show(st, spec := localize_chart(cm.chart_spec(gates_charts.unit_text_chart, tokens, values[:, unit],
                                                            label(signal), unit, line_width=30)))
    export_buttons(spec, f"Unit {unit} on the text", state_line(ref.label, raw, layer=layer, signal=signal,
                   unit=unit), pd.DataFrame({"step": range(len(tokens)), "token": tokens,
                                             signal: values[:, unit]}), exports)
    ranking, n_sample = cm.unit_ranking(ref, layer, signal)
    keep_option("gate_feature", ["any feature"] + sorted(set(ranking["feature"])))
    follow_link("gate_feature", ["any feature"] + sorted(set(ranking["feature"])), feature)
    chosen = st.selectbox(_("Rank units by their correlation with"), ["any feature"] + sorted(set(ranking["feature"])),
                          key="gate_feature", bind="query-params", format_func=feature)
    top = (ranking if chosen == "any feature" else ranking[ranking["feature"] == chosen]).head(20)
    if top.empty:
        st.info(_("No text feature varies over the sample; nothing to rank."))
    else:
        cm.show(st, spec := localize_chart(cm.chart_spec(gates_charts.ranking_chart, top)), width="stretch")
        export_buttons(printable(spec, 420), "Unit ranking", state_line(ref.label, None, layer=layer, signal=signal,
                       feature=chosen), top, exports, csv=False)
        st.caption(_("Pearson r between each unit's {signal} and simple features of the text, over {n:,} "
                     "tokens of held-out text; the strongest 20. Type a unit above to see it on your text.").format(
            signal=label(signal), n=n_sample))
        st.download_button(_("Unit ranking (CSV)"), lambda: ranking.to_csv(index=False), "unit_ranking.csv")


def pattern_tab(g: GateView):
    """The Pattern search tab (LSTMVis): the units on across a span, searched in the corpus."""
    ref, trace, tokens, layer, pos = g.ref, g.trace, g.tokens, g.layer, g.pos
    st.caption(_("As in LSTMVis (Strobelt et al. 2018): the units of layer h that are above the threshold "
                 "across the span and not just before or after it form a pattern; the corpus places where the "
                 "same units are on together are listed, best match first."))
    clamp("gate_span", 0, len(tokens))
    span = st.slider(_("Span"), 0, len(tokens), (pos, min(pos + 4, len(tokens))), key="gate_span")
    thr = st.slider(_("Threshold"), -0.5, 0.95, 0.3, 0.05, key="gate_thr", bind="query-params")
    edges = st.checkbox(_("…and off just before and after it"), True, key="gate_edges", bind="query-params")
    if span[1] <= span[0]:
        st.info(_("Select a span of at least one token."))
        st.stop()
    units = select_units(unit_matrix(trace, layer, "h"), span[0], span[1], thr, int(edges), int(edges))
    st.write(_("Span «{span}»: {n} unit(s) on: {units}").format(
        span="".join(tokens[span[0]:span[1]]), n=len(units), units=list(map(int, units))[:40]))
    if len(units) and st.toggle(_("Search the held-out corpus"), key="gate_search"):
        index = cm.state_index(ref, layer)
        hits = pattern_search(index, units, thr, span[1] - span[0])
        st.caption(_("{n:,} tokens searched ({source}).").format(n=len(index), source=index.info["source"]))
        st.dataframe(hits.assign(**{c: hits[c].str.replace("\n", "⏎") for c in ("before", "match", "after")}),
                     hide_index=True)
        st.download_button(_("Matches (CSV)"), hits.to_csv(index=False), "pattern_matches.csv", "text/csv")


def parameter_tab(g: GateView):
    """The Parameter count tab: textbook vs PyTorch counts against the loaded weights."""
    ref, model = g.ref, g.model
    shipped = cm.list_checkpoints("recurrent_lm")[:6]
    tables = [] if ref.path in {c.path for c in shipped} else [parameter_groups(model).assign(model="this model")]
    for c in shipped:
        tables.append(parameter_groups(cm.model(c.ref())).assign(model=c.name))
    count = st.column_config.NumberColumn
    st.dataframe(pd.concat(tables, ignore_index=True), hide_index=True, column_config={
        "formula_one_bias": count(_("textbook (one bias)"), format="localized"),
        "formula_pytorch": count(_("PyTorch (two biases)"), format="localized"),
        "actual": count(_("actual"), format="localized")})
    st.caption(_("Weight groups: RNN 1, GRU 3, LSTM 4. Textbook count per layer: groups × [d_h(d_h + d) + "
                 "d_h]; PyTorch keeps two bias vectors (b_ih, b_hh), so its layers hold groups × [d_h(d_h + d) + "
                 "2·d_h]: the 'actual' column, summed from the loaded weights, matches it."))
