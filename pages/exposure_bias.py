"""Exposure bias: teacher-forced vs free-running decoding, injected errors, the held-out view (or a pairs file's)."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import draw_runs, draw_view, view_button
from appkit.i18n import N_, _
from appkit.pairs import exposure_opening, framing_note, in_use, seed_sentence, sentence_inputs
from appkit.state import clamp, follow_link, forward_moved, keep_option
from appkit.widgets import lazy_tabs
from seqviz.export import state_line
from seqviz.tables import readable
from seqviz.refs import snapshots
from seqviz.views import decoding as views

SECOND = "the model's second choice"
INJECT_TAB, HELD_OUT_TAB, STRATEGIES_TAB = N_("Inject an error"), N_("Over the held-out set"), N_("Decoding strategies")
# The strategies tab is the Decoding strategies page now: an older link (?eb_tab=Decoding strategies) opens it there.
forward_moved("eb_tab", (STRATEGIES_TAB,), "pages/decoding.py", {"eb_tab": None})

st.title(_("Exposure bias"))
st.caption(_("Teacher forcing trains a decoder on the gold previous token; at inference it feeds on its own "
             "output, and one early mistake can lead it into states it never saw in training. Each position t "
             "below predicts the gold token y_t twice: after the gold prefix (teacher-forced, TF) and after the "
             "model's own output (free-running, FR). Errors are counted position by position. The same "
             "comparison for the character language models is on the page *Exposure bias (LM)*."))

picked, base, pairs, step = exposure_opening()
ref = picked.ref  # shares the sentence and stage with Decoding strategies
card = base.card or {}
at = ref.at(step)
twins = {c.name: c for c in cm.list_checkpoints("seq2seq") if c.card.get("task") == card.get("task")
         and c.path != ref.path}  # the other shipped checkpoints of this task: the candidates to compare with
others = st.sidebar.multiselect(_("Compare with"), list(twins), [n for n in twins if views.COMPARED_BY_DEFAULT in n],
                                key="eb_compare",
                                help=_("Shown beside this model in every view, at the same training stage "
                                       "(final weights where it has no such snapshot)."))
rivals = {n: (r := twins[n].ref()).at(step if step in snapshots(r) else None)  # or its final weights
          for n in others}
named = tuple(rivals.items())  # (name, ref) pairs: the compared models, hashable for the caches
exports = view_button("exposure_bias", f"Exposure bias · {ref.label}", base)
st.caption(_("Task: **{task}** · training: **{training}** · {stage} of {steps}").format(
    task=card.get("task", "?"), training=card.get("training", "?"), steps=card.get("training_steps", "?"),
    stage=_("final weights") if step is None else _("snapshot at step {step}").format(step=step)))


def held_out(r, part: str):
    """One model's held-out view (a pairs file's when given): from its exposure.json when that holds these
    weights, else decoded now."""
    if pairs:
        return cm.view(views.held_out, r, part=part, pairs=pairs)
    return cm.view_of_path(views.shipped_held_out, r, part=part) or cm.view(views.held_out, r, part=part)


origin = (card.get("task"), pairs[:1])  # a sentence of another task or pairs file would be all <unk>
has_pairs = bool(pairs) or cm.view_of_path(views.menu, at) is not None
if has_pairs:
    first_errors = held_out(at, "by_position").facts["first_errors"]
    listed = cm.view(views.pair_menu, at, pairs=pairs, first_errors=first_errors) if pairs else \
        cm.view_of_path(views.menu, at, first_errors=first_errors)
    menu, count = dict((label, (src, gold)) for label, src, gold in listed.facts["pairs"]), listed.facts["count"]
    seed_sentence(origin, lambda: next(iter(menu.values()), None))

    def use_pair():
        chosen = st.session_state.get("eb_pick")
        if chosen in menu:  # cleared (Escape) or a stale value: keep the sentence as it is
            st.session_state["eb_src"], st.session_state["eb_ref"] = menu[chosen]

    st.selectbox(_("Held-out pair"), list(menu), format_func=lambda o: o.replace("  (FR errs)", "  " + _("(FR errs)")),
                 index=None, key="eb_pick", on_change=use_pair,
                 placeholder=_("pick one (the ones free running gets wrong come first)"))
else:
    seed_sentence(origin, lambda: None)
sentence = sentence_inputs()
src, reference = sentence["src"], sentence["reference"]
framing_note(ref, pairs, src, reference)  # a plain state dict: which source framing the pairs fit
try:
    logprob = cm.view(views.gold_logprob, at, **sentence)
except ValueError as e:
    st.info(_("Type a source sentence and its reference ({reason}).").format(reason=e))
    st.stop()
f = logprob.facts
gold, div = f["reference"], f["first_divergence"]
st.subheader(_("Two runs of one sentence"))
st.markdown(_("**Free-running output:** {output}").format(output=f["free_running"] or _("(empty)")))
m1, m2, m3 = st.columns(3)
m1.metric(_("First divergence"), _("none") if div is None else _("position {t} ({token})").format(
    t=div, token=repr(f["divergence_token"])))
m2.metric(_("Wrong tokens, TF / FR"), f"{f['wrong_tf']} / {f['wrong_fr']}")
m3.metric(_("Edit distance to the reference"), f["edit_distance"])
exports.footnote = state_line(ref.label, src, reference=reference, step=step, compared=", ".join(rivals) or None)
draw_runs(logprob, cm.view(views.divergence, at, **sentence), "exposure_positions.csv", exports.footnote, exports)
if rivals:
    st.dataframe(cm.view(views.comparison, at, **sentence, rivals=named).data, hide_index=True)


@st.fragment  # the position and the token rerun this section only (issue 14)
def injection():
    exports[:] = [s for s in exports if s.heading != "Injected error"]
    clamp("eb_k", 0, max(len(gold), 1))  # a shorter reference than before
    c1, c2 = st.columns(2)
    k = c1.slider(_("Inject at position"), 0, max(len(gold), 1), min(views.INJECT_AT, len(gold)), key="eb_k",
                  bind="query-params")
    choices = [SECOND] + list(cm.view(views.injectable, at, reference=sentence["reference"], k=k).facts["tokens"])
    keep_option("eb_token", choices, SECOND)
    token_name = lambda o: _("the model's second choice") if o == SECOND else o  # noqa: E731
    follow_link("eb_token", choices, token_name)  # a link made in another language
    token = c2.selectbox(_("Wrong token"), choices, key="eb_token", bind="query-params", format_func=token_name)
    token = None if token == SECOND else token
    try:
        inj = cm.view(views.injection, at, **sentence, k=k, token=token)
    except ValueError as e:
        st.info(_("Cannot inject there: {reason}.").format(reason=e))
        return
    g = inj.facts
    i1, i2, i3 = st.columns(3)
    i1.metric(_("Forced"), _("{token} at {k}").format(token=repr(g["injected"]), k=k))
    i2.metric(_("Wrong tokens after it"), g["errors_after"], help=_("Edits between its continuation and the "
              "reference's, aligned as word error rate aligns: a correct tail shifted by one word counts as correct."))
    i3.metric(_("Back on its own track?"), _("yes, it rejoins") if g["rejoins"] else _("no, it stays off"),
              help=_("Whether the forced run's continuation is at most one edit from the model's own output with "
                     "nothing injected: an error the model would have made anyway is not counted against the "
                     "injection."))
    st.markdown(_("**Continues as:** {output}").format(output=g["output"]))
    st.markdown(_("**Would have said:** {own}").format(own=g["own"]))
    st.caption(_("{own} edits from its own unforced output after position {k}; {ref} edits from the reference in "
                 "all.").format(own=g["edits_vs_own"], k=k, ref=g["edit_distance"]))
    draw_view(inj, state_line(ref.label, src, reference=reference, step=step, injected=f"{g['injected']!r} at {k}"),
              exports)
    if named:  # (name, ref) pairs of the compared models
        st.caption(_("The same injection in the compared models (each with its own second choice when that is picked):"))
        st.dataframe(cm.view(views.comparison, at, **sentence, rivals=named, k=k, token=token).data, hide_index=True)


def held_out_set():
    if not has_pairs:
        st.info(_("This checkpoint keeps no held-out pairs (heldout.json) to measure on: give a pairs file above."))
        return
    name = card.get("name", "this model")
    models = {name: at, **rivals}
    held = state_line(None, None, models=", ".join(models), step=step,
                      pairs=min(count, views.STUDY_PAIRS), pairs_file=in_use())
    by_position = {n: held_out(r, "by_position") for n, r in models.items()}
    curves = cm.view_of_data(views.held_out_compared, tables={n: v.data for n, v in by_position.items()},
                             part="by_position")
    draw_view(curves, held, exports)
    after = cm.view_of_data(views.held_out_compared, tables={n: held_out(r, "after").data for n, r in models.items()},
                            part="after")
    if after.spec is None:
        st.caption(_("No free-running output here has an error followed by enough tokens to measure snowballing."))
    else:
        draw_view(after, held, exports)
    summary = cm.view_of_data(views.held_out_summary, summaries={n: v.facts for n, v in by_position.items()})
    st.dataframe(readable(summary.data, **views.SUMMARY_TABLE), hide_index=True)
    matrix = held_out(at, "matrix")
    if matrix.spec is not None:
        draw_view(matrix, state_line(ref.label, None, step=step), exports)


# Lazy tabs: only the open one runs and is drawn (a page switch drew seven charts before, the browser's
# main cost on this page); the open tab is in the URL. Beam search and the strategies: the Decoding strategies page.
SECTIONS = {INJECT_TAB: injection, HELD_OUT_TAB: held_out_set}
opened, tab = lazy_tabs(list(SECTIONS), "eb_tab")
with tab:
    SECTIONS[opened]()
picked.finish()  # after the charts: the sidebar says what was found; the model loads for the next move
