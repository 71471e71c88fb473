"""Single units: how often each one saturates, one unit on your text and the text features it tracks,
LSTMVis's pattern search (the units on across a span, found again in the corpus), and what units do, shown
by switching them off or patching their state from another text (``seqviz.views.interventions``)."""

import streamlit as st

from appkit import models as cm
from appkit import texts as tx
from appkit.export import export_buttons, view_button
from appkit.i18n import N_, _, error_lead, pgettext
from appkit.sidebar import deferred_picker
from appkit.state import clamp, follow_link, keep_option
from appkit.widgets import draw_view, lazy_tabs
from seqviz.export import state_line
from seqviz.signals import SIGNALS
from seqviz.views import gates as views
from seqviz.views import interventions as iv
from seqviz.views.gates import ANY, feature_label, label
from seqviz.views.spec import printable

st.title(_("Single units"))
st.caption(_("What one hidden unit or gate does: how often it saturates over held-out text, where it is on in "
             "your text and which text feature it follows, and which units are on together across a span."))
picked = deferred_picker("recurrent_lm", prefer="shakespeare-char-lstm")
if picked is None:
    st.stop()
ref = picked.ref
info = picked.info()  # config, tokenizer, card: no torch while the first charts come shipped
cfg = info.config
exports = view_button("units", f"Single units · {ref.label}", info.card)
raw = st.text_area(_("Text"), views.DEFAULT_TEXT, key="units_text", height=120, bind="query-params",
                   help=_("Up to {n:,} tokens are read; only the first text if you separate several.").format(
                       n=tx.MAX_TOKENS))
text = tx.first_text(info, raw, _("Type a text above to see its units."))
n_tokens = len(text)
c1, c2 = st.columns([1, 3])
keep_option("units_layer", list(range(cfg.n_layers)))
layer = c1.selectbox(_("Layer"), list(range(cfg.n_layers)), key="units_layer", bind="query-params")
follow_link(f"units_signal_{cfg.cell}", SIGNALS[cfg.cell], label)
signal = c2.segmented_control(_("Signal"), list(SIGNALS[cfg.cell]), default=SIGNALS[cfg.cell][0], required=True,
                              format_func=label, key=f"units_signal_{cfg.cell}", bind="query-params")


def saturation_tab():
    sat = cm.view(views.saturation, ref, low=0.1, high=0.9)
    cm.show(st, sat.spec)
    export_buttons(sat.spec, sat.title, state_line(ref.label, None, below=0.1, above=0.9), lambda: sat.data, exports,
                   csv=False)
    st.caption(_("Over {n:,} tokens of held-out text. Each dot is a unit: the fraction of tokens where its "
                 "gate is below 0.1 (left) or above 0.9 (right), as in Karpathy, Johnson & Fei-Fei (2015); tanh "
                 "signals use {low:.1f} / {high:.1f}, the same fraction of their maximal slope. Units on the "
                 "dashed line are always saturated.").format(n=sat.facts["tokens"], low=sat.facts["tanh_low"],
                                                            high=sat.facts["tanh_high"]))
    st.download_button(_("Saturation (CSV)"), lambda: sat.data.to_csv(index=False), "saturation.csv", "text/csv")


def unit_tab():
    features = [ANY] + cm.view(views.unit_ranking, ref, layer=layer, signal=signal).facts["features"]
    keep_option("units_feature", features)
    follow_link("units_feature", features, feature_label)
    chosen = st.selectbox(_("Rank units by their correlation with"), features, key="units_feature",
                          bind="query-params", format_func=feature_label)
    ranking = cm.view(views.unit_ranking, ref, layer=layer, signal=signal, feature=chosen)
    clamp("units_unit", 0, cfg.d_hidden - 1)
    first = int(ranking.data["unit"].iloc[0]) if len(ranking.data) else 0  # the unit that follows a feature best
    unit = st.number_input(pgettext("hidden unit", "Unit"), 0, cfg.d_hidden - 1, first, key="units_unit",
                           bind="query-params")
    shown = cm.view(views.unit_on_text, ref, ids=text, layer=layer, signal=signal, unit=unit)
    cm.show(st, shown.spec)
    export_buttons(shown.spec, shown.title, state_line(ref.label, raw, layer=layer, signal=signal, unit=unit),
                   shown.data, exports)
    if ranking.spec is None:
        st.info(_("No text feature varies over the sample; nothing to rank."))
        return
    cm.show(st, ranking.spec, width="stretch")
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


def pick_units(prefix: str, ids: tuple) -> dict:
    """The units an intervention edits (one, the longest memories, k random), its state and seed: choices."""
    picks = [p for p in iv.PICKS if p != "top" or cfg.cell != "rnn"]  # a plain RNN keeps no memory to rank
    keep_option(f"{prefix}_pick", picks)
    follow_link(f"{prefix}_pick", picks, lambda p: _(iv.PICKS[p]))
    c1, c2, c3 = st.columns([2, 2, 1])
    pick = c1.radio(_("Edit"), picks, format_func=lambda p: _(iv.PICKS[p]), key=f"{prefix}_pick",
                    bind="query-params")
    unit, k = 0, 1
    if pick == "one":
        first = 0 if cfg.cell == "rnn" else cm.view(views.memory_spans, ref, ids=ids, layer=layer, position=0,
                                                    delta=0.0).facts["unit"]  # the longest memory
        clamp(f"{prefix}_unit", 0, cfg.d_hidden - 1)
        unit = c2.number_input(pgettext("hidden unit", "Unit"), 0, cfg.d_hidden - 1, first, key=f"{prefix}_unit",
                               bind="query-params")
    else:
        clamp(f"{prefix}_k", 1, max(1, cfg.d_hidden // 2))
        k = c2.slider(_("k units"), 1, max(2, cfg.d_hidden // 2), 1, key=f"{prefix}_k", bind="query-params")
    seed = c3.number_input(_("Seed"), 0, 999, 0, key=f"{prefix}_seed", bind="query-params",
                           help=_("Draws the random units: the control (and the units, for k random units)."))
    state = None
    if cfg.cell == "lstm":
        state = st.segmented_control(_("State"), ["c", "h"], default="c", required=True, format_func=label,
                                     key=f"{prefix}_state", bind="query-params")
    return {"layer": layer, "state": state, "pick": pick, "unit": unit, "k": k, "seed": seed}


def switch_off_tab():
    """Switch the chosen units off over a span: which tokens got harder, here and over held-out text."""
    st.caption(_("Knowing that a unit follows a feature is a correlation; switching it off shows whether the model "
                 "uses it. Every later step and layer is recomputed, and the same is done to k random units, so the "
                 "effect is seen against chance."))
    choices = pick_units("units_off", text)
    how = st.radio(_("Switched off means"), list(iv.HOW), format_func=lambda h: _(iv.HOW[h]), horizontal=True,
                   key="units_off_how", bind="query-params")
    clamp("units_off_span", 0, n_tokens)
    span = st.slider(_("Switched off over the tokens"), 0, n_tokens, (0, n_tokens), key="units_off_span")
    try:
        shown = cm.view(iv.switch_off_text, ref, ids=text, **choices, how=how, span=tuple(span))
        kinds = cm.view(iv.switch_off_classes, ref, ids=text, **choices, how=how)
        hurt = cm.view(iv.switch_off_tokens, ref, ids=text, **choices, how=how)
    except ValueError as e:
        st.info(error_lead(e, _("Cannot switch these units off:")))
        return
    f, how_shown = shown.facts, _(iv.HOW[how])
    footnote = state_line(ref.label, raw, units=f["units"], state=f["name"], span=f"{f['start']}–{f['stop']}", how=how)
    draw_view(shown, footnote, exports, csv=False)
    st.caption(_("Units {units} of {name} {how} over tokens {start}–{stop}: mean Δ surprisal {d:+.3f} nats per token "
                 "from the span's start, against {r:+.3f} for {k} random units (the mean of {draws} draws). Hit "
                 "hardest: «{tok}» at position {step}, {wd:+.2f} nats ({wr:+.2f} for the random units). Red: "
                 "harder than as trained; blue: easier.").format(
        units=f["units"], name=f["name"], how=how_shown, start=f["start"], stop=f["stop"], d=f["mean_delta"],
        r=f["mean_delta_random"], k=f["n_units"], draws=f["draws"], tok=f["worst_token"].replace("\n", "⏎"),
        step=f["worst_step"], wd=f["worst_delta"], wr=f["worst_delta_random"]))
    draw_view(kinds, footnote, exports, csv=False)
    g = kinds.facts
    quotes = _("Closing quotes ({n}): {d:+.3f} against {r:+.3f} nats.").format(
        n=g["quotes"], d=g["quote_delta"], r=g["quote_delta_random"]) if g["quotes"] else \
        _("The sample holds no closing quote.")
    st.caption(_("Over {n:,} predictions of held-out text, the units switched off at every step: mean Δ {d:+.4f} "
                 "nats against {r:+.4f} for {k} random units. Most affected kind of character: {kind} ({kn} "
                 "predictions), {kd:+.3f} nats against {kr:+.3f} (the random draws reach {hi:+.3f}).").format(
        n=g["sample_tokens"], d=hurt.facts["mean_delta"], r=hurt.facts["mean_delta_random"], k=g["n_units"],
        kind=g["class_label"], kn=g["class_n"], kd=g["class_delta"], kr=g["class_delta_random"],
        hi=g["class_random_high"]) + " " + quotes)
    draw_view(hurt, footnote, exports, csv=False)
    st.download_button(_("Δ surprisal per token (CSV)"), lambda: shown.data.to_csv(index=False), "switch_off.csv",
                       "text/csv")


def patch_tab():
    """Carry the chosen units' state from one text into another and see the next character move."""
    st.caption(_("Two texts that differ early and end alike (here the same words inside and outside a stage "
                 "direction's bracket): the chosen units' state is copied from the other text into this one where "
                 "their common ending starts, and everything after it is recomputed."))
    c1, c2 = st.columns(2)
    source_raw = c1.text_area(_("The other text (the state comes from it)"), iv.PATCH_SOURCE, height=90,
                              key="units_patch_source", bind="query-params")
    target_raw = c2.text_area(_("This text (the state goes into it)"), iv.PATCH_TARGET, height=90,
                              key="units_patch_target", bind="query-params")
    source, _notes = tx.read_texts(info, "\n".join(tx.split_texts(source_raw)[:1]))
    target, _notes = tx.read_texts(info, "\n".join(tx.split_texts(target_raw)[:1]))
    if not source or not target:
        st.info(_("Type both texts to patch one from the other."))
        return
    choices = pick_units("units_patch", source[0])
    try:
        moved = cm.view(iv.patch_next, ref, ids=target[0], source_ids=source[0], **choices)
    except ValueError as e:
        st.info(error_lead(e, _("Cannot patch these texts:")))
        return
    f = moved.facts
    footnote = state_line(ref.label, target_raw, units=f["units"], state=f["name"], position=f["position"])
    draw_view(moved, footnote, exports, csv=False)
    st.caption(_("Token {p} («{tok}») read with units {units} of {name} carried in from the other text (its state "
                 "before token {sp}): KL(after ‖ before) of the next character {kl:.4f} nats, against {kr:.4f} for "
                 "{k} random units and {ka:.4f} when every unit is carried in. The text's own next tokens moved by "
                 "{mv:.3f} nats on average; most likely next: «{b}» ({pb:.2f}) before, «{a}» ({pa:.2f}) after.").format(
        p=f["position"], tok=f["token"].replace("\n", "⏎"), units=f["units"], name=f["name"],
        sp=f["source_position"], kl=f["kl"], kr=f["kl_random"], k=f["n_units"], ka=f["kl_all"], mv=f["moved"],
        b=f["top_before"].replace("\n", "⏎"), pb=f["p_before"], a=f["top_after"].replace("\n", "⏎"),
        pa=f["p_after"]))


TABS = {N_("Saturation"): saturation_tab, N_("Unit inspector"): unit_tab, N_("Pattern search"): pattern_tab,
        N_("Switch units off"): switch_off_tab, N_("Patch a state"): patch_tab}
opened, container = lazy_tabs(list(TABS), "units_tab")  # only the open tab runs
with container:
    TABS[opened]()
picked.open()  # after the charts: the sidebar says what was found
