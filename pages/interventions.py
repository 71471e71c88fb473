"""Switch units off, patch a state: what a unit does, shown by changing it (``seqviz.views.interventions``):
the chosen units zeroed, set to their mean or carried in from another text at every step of a span, every
later step and layer recomputed, against the same edit of k random units."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import draw_view, view_button
from appkit.i18n import N_, _, error_lead, pgettext
from appkit.sidebar import deferred_picker
from appkit.state import carry_over, clamp, follow_link, keep_option
from appkit.widgets import first_text, lazy_tabs
from seqviz import inputs as tx
from seqviz.export import state_line
from seqviz.families import of
from seqviz.views import gates as views
from seqviz.views import interventions as iv
from seqviz.views.gates import label

st.title(_("Switch units off"))
st.caption(_("Knowing that a unit follows a feature is a correlation; switching it off shows whether the model "
             "uses it. Every later step and layer is recomputed, and the same is done to k random units, so the "
             "effect is seen against chance."))
picked = deferred_picker("recurrent_lm", prefer="shakespeare-char-lstm")
if picked is None:
    st.stop()
ref = picked.ref
info = picked.info()
cfg = info.config
family = of(cfg)  # which states an edit takes, whether the memory ranks them: the family's entry
exports = view_button("interventions", f"Switch units off · {ref.label}", info.card)
carry_over("units_text", "units_layer")  # shared with Single units on purpose: the text and layer follow the visitor
keep_option("units_layer", list(range(cfg.n_layers)))
layer = st.selectbox(_("Layer"), list(range(cfg.n_layers)), key="units_layer", bind="query-params")


def pick_units(prefix: str, ids: tuple) -> dict:
    """The units an intervention edits (one, the longest memories, k random), its state and seed: choices."""
    state = None
    if len(family.edit_states) > 1:  # an LSTM's c or h, a Mamba's channel states s or its block output h
        states = list(family.edit_states)
        keep_option(f"{prefix}_state", states)  # an LSTM's c, kept when a Mamba is picked, is not one of its states
        state = st.segmented_control(_("State"), states, default=states[0], required=True, format_func=label,
                                     key=f"{prefix}_state", bind="query-params")
    width = iv.units_of(info, layer, state)
    ranked = family.ranks(state)  # the memory ranks c's or s's units (and an LSTM's h, unit for unit)
    picks = [p for p in iv.PICKS if (p != "top" or ranked) and (p != "most" or width <= iv.MOST_UNITS)]
    keep_option(f"{prefix}_pick", picks)
    follow_link(f"{prefix}_pick", picks, lambda p: _(iv.PICKS[p]))
    c1, c2, c3 = st.columns([2, 2, 1])
    pick = c1.radio(_("Edit"), picks, format_func=lambda p: _(iv.PICKS[p]), key=f"{prefix}_pick",
                    bind="query-params")
    unit, k = 0, 1
    if pick == "one":
        first = cm.view(views.memory_spans, ref, ids=ids, layer=layer, position=0, delta=0.0).facts["unit"] \
            if ranked else 0  # the longest memory
        clamp(f"{prefix}_unit", 0, width - 1)
        unit = c2.number_input(pgettext("hidden unit", "Unit"), 0, width - 1, first, key=f"{prefix}_unit",
                               bind="query-params")
    else:
        clamp(f"{prefix}_k", 1, max(1, width // 2))
        k = c2.slider(_("k units"), 1, max(2, width // 2), min(iv.OPENING_K, max(1, width // 2)), key=f"{prefix}_k",
                      bind="query-params")
    seed = c3.number_input(_("Seed"), 0, 999, 0, key=f"{prefix}_seed", bind="query-params",
                           help=_("Draws the random units: the control (and the units, for k random units)."))
    return {"layer": layer, "state": state, "pick": pick, "unit": unit, "k": k, "seed": seed}


def switch_off_tab():
    """Switch the chosen units off over a span: which tokens got harder, here and (when asked) over held-out text."""
    # the text is this tab's own: the patch tab reads two texts of its own (issue 51: a box that changed nothing there)
    raw = st.text_area(_("Text"), views.DEFAULT_TEXT, key="units_text", height=120, bind="query-params",
                       help=_("Up to {n:,} tokens are read; only the first text if you separate several.").format(
                           n=tx.MAX_TOKENS))
    text = first_text(info, raw, _("Type a text above to see its units."))
    n_tokens = len(text)
    choices = pick_units("units_off", text)
    how = st.radio(_("Switched off means"), list(iv.HOW), format_func=lambda h: _(iv.HOW[h]), horizontal=True,
                   key="units_off_how", bind="query-params")
    clamp("units_off_span", 0, n_tokens)
    span = st.slider(_("Switched off over the tokens"), 0, n_tokens, (0, n_tokens), key="units_off_span")
    heldout = st.toggle(_("Also over held-out text"), key="units_off_heldout", bind="query-params",
                        help=_("The same units switched off over {n:,} held-out characters, and {d} random draws: "
                               "the kind of character and the characters it hurts most (computed once per set of "
                               "units, then kept).").format(n=iv.SAMPLE_CHUNKS * iv.SAMPLE_LENGTH, d=iv.DRAWS))
    try:
        shown = cm.view(iv.switch_off_text, ref, ids=text, **choices, how=how, span=tuple(span))
        if heldout:
            kinds = cm.view(iv.switch_off_classes, ref, ids=text, **choices, how=how)
            hurt = cm.view(iv.switch_off_tokens, ref, ids=text, **choices, how=how)
    except ValueError as e:
        st.info(error_lead(e, _("Cannot switch these units off:")))
        return
    f = shown.facts
    if f.get("note"):  # a model of real size reads fewer tokens
        st.info(f["note"])
    footnote = state_line(ref.label, raw, units=f["units"], state=f["name"], span=f"{f['start']}–{f['stop']}", how=how)
    draw_view(shown, footnote, exports, csv=False)
    st.caption(iv.text_caption(f))
    if heldout:
        held_out(kinds, hurt, footnote)
    st.download_button(_("Δ surprisal per token (CSV)"), lambda: shown.data.to_csv(index=False), "switch_off.csv",
                       "text/csv")


def held_out(kinds, hurt, footnote) -> None:
    """The held-out sample's kinds of character and the characters hurt most, with the numbers they rest on."""
    draw_view(kinds, footnote, exports, csv=False)
    g = kinds.facts
    quotes = _("Closing quotes ({n}): {d:+.3f} against {r:+.3f} nats.").format(
        n=g["quotes"], d=g["quote_delta"], r=g["quote_delta_random"]) if g["quotes"] else \
        _("The sample holds no closing quote.")
    st.caption(_("Over {n:,} predictions of held-out text, the units switched off at every step: mean Δ {d:+.4f} "
                 "nats against {r:+.4f} for {random}. Most affected kind of character: {kind} ({kn} "
                 "predictions), {kd:+.3f} nats against {kr:+.3f} (the random draws reach {hi:+.3f}).").format(
        n=g["sample_tokens"], d=hurt.facts["mean_delta"], r=hurt.facts["mean_delta_random"], random=iv.random_units(g["n_units"]),
        kind=g["class_label"], kn=g["class_n"], kd=g["class_delta"], kr=g["class_delta_random"],
        hi=g["class_random_high"]) + " " + quotes)
    draw_view(hurt, footnote, exports, csv=False)


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
                 "{random} and {ka:.4f} when every unit is carried in. The text's own next tokens moved by "
                 "{mv:.3f} nats on average; most likely next: «{b}» ({pb:.2f}) before, «{a}» ({pa:.2f}) after.").format(
        p=f["position"], tok=f["token"].replace("\n", "⏎"), units=f["units"], name=f["name"],
        sp=f["source_position"], kl=f["kl"], kr=f["kl_random"], random=iv.random_units(f["n_units"]), ka=f["kl_all"], mv=f["moved"],
        b=f["top_before"].replace("\n", "⏎"), pb=f["p_before"], a=f["top_after"].replace("\n", "⏎"),
        pa=f["p_after"]))


TABS = {N_("Switch units off"): switch_off_tab, N_("Patch a state"): patch_tab}
opened, container = lazy_tabs(list(TABS), "iv_tab")  # only the open tab runs
with container:
    TABS[opened]()
picked.finish()  # after the charts: the sidebar says what was found; the model loads for the next move
