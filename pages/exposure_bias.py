"""Exposure bias: teacher-forced vs free-running decoding, injected errors, the held-out view, beam search."""

import streamlit as st

from appkit import models as cm
from appkit.i18n import _
from appkit.export import draw, view_button
from appkit.sections import exposure_bias as sec
from appkit.sidebar import checkpoint_picker
from appkit.widgets import lazy_tabs, two_runs
from seqviz.export import state_line
from seqviz.introspect import exposure as ex
from seqviz.seq2seq.model import Seq2Seq
from seqviz.charts import exposure as exposure_charts

st.title(_("Exposure bias"))
st.caption(_("Teacher forcing trains a decoder on the gold previous token; at inference it feeds on its own "
             "output, and one early mistake can lead it into states it never saw in training. Each position t "
             "below predicts the gold token y_t twice: after the gold prefix (teacher-forced, TF) and after the "
             "model's own output (free-running, FR). Errors are counted position by position. The same "
             "comparison for the character language models is on the page *Exposure bias (LM)*."))

ref = checkpoint_picker("seq2seq", prefer="zh-en-small-teacher-forcing")  # unless one was chosen
if ref is None:
    st.stop()
base = cm.model(ref)
if not isinstance(base, Seq2Seq):
    st.info(_("These views need one of seqviz's own RNN encoder-decoders (teacher forcing, snapshots, beam "
              "search over its steps); a transformers model opens on the Attention page."))
    st.stop()
card = base.card or {}
steps = cm.snapshots(ref)
stage = st.sidebar.selectbox(_("Training stage (snapshot step)"), ["final"] + [str(s) for s in steps],
                             format_func=lambda s: _("final") if s == "final" else s,
                             key="eb_stage", help=_("Snowballing is clearest before a model converges."))
step = None if stage == "final" else int(stage)
model = cm.model(ref.at(step))
twins = {c.name: c for c in cm.list_checkpoints("seq2seq") if c.card.get("task") == card.get("task")
         and c.path != ref.path}  # the other shipped checkpoints of this task: the candidates to compare with
others = st.sidebar.multiselect(_("Compare with"), list(twins), [n for n in twins if "zh-en-small" in n], key="eb_compare",
                                help=_("Shown beside this model in every view, at the same training stage "
                                       "(final weights where it has no such snapshot)."))
rivals = {n: (r := twins[n].ref()).at(step if step in cm.snapshots(r) else None)  # or its final weights
          for n in others}
named = tuple(rivals.items())  # (name, ref) pairs: the compared models, hashable for the caches
exports = view_button("exposure_bias", f"Exposure bias · {ref.label}", base)
st.caption(_("Task: **{task}** · training: **{training}** · {stage} of {steps}").format(
    task=card.get("task", "?"), training=card.get("training", "?"), steps=card.get("training_steps", "?"),
    stage=_("final weights") if step is None else _("snapshot at step {step}").format(step=step)))
pairs = cm.heldout(ref)
view = cm.dataset_view(ref.at(step), 1000) if pairs else None
if pairs:
    menu = ex.heldout_menu(pairs, view["first_errors"])
    if menu and (st.session_state.get("eb_task", card.get("task")) != card.get("task")
                 or "eb_src" not in st.session_state and "eb_src" not in st.query_params):
        st.session_state["eb_src"], st.session_state["eb_ref"] = ex.pair_texts(pairs[next(iter(menu.values()))])

    def use_pair():
        picked = st.session_state.get("eb_pick")
        if picked in menu:  # cleared (Escape) or a stale value: keep the sentence as it is
            st.session_state["eb_src"], st.session_state["eb_ref"] = ex.pair_texts(pairs[menu[picked]])

    st.selectbox(_("Held-out pair"), list(menu), format_func=lambda o: o.replace("  (FR errs)", "  " + _("(FR errs)")),
                 index=None, key="eb_pick", on_change=use_pair,
                 placeholder=_("pick one (the ones free running gets wrong come first)"))
st.session_state["eb_task"] = card.get("task")
src = st.text_input(_("Source sentence"), key="eb_src", bind="query-params") or ""
reference = st.text_input(_("Reference translation (tokens separated by spaces)"), key="eb_ref", bind="query-params")
gold = tuple(ex.reference_tokens(model, reference))
try:
    run = cm.translation_run(ref.at(step), src, gold)
except ValueError as e:
    st.info(_("Type a source sentence and its reference ({reason}).").format(reason=e))
    st.stop()
table, div = run["table"], run["first_divergence"]
st.subheader(_("Two runs of one sentence"))
st.markdown(_("**Free-running output:** {output}").format(output=" ".join(run["free_running"]) or _("(empty)")))
m1, m2, m3 = st.columns(3)
m1.metric(_("First divergence"), _("none") if div is None else _("position {t} ({token})").format(
    t=div, token=repr(table.gold[div])))
m2.metric(_("Wrong tokens, TF / FR"), f"{int(table.wrong_tf.sum())} / {int(table.wrong_fr.sum())}")
m3.metric(_("Edit distance to the reference"), run["edit_distance"])
exports.footnote = state_line(ref.label, src, reference=reference, step=step, compared=", ".join(rivals) or None)
two_runs(table, div, "exposure_positions.csv", exports.footnote, exports)
if rivals:
    st.dataframe(cm.model_comparison(named, src, gold), hide_index=True)


def held_out_set():
    if view is None:
        st.info(_("This checkpoint keeps no held-out pairs (heldout.json) to measure on."))
        return
    both = ex.combine_views({card.get("name", "this model"): view,
                             **{n: cm.dataset_view(r, 1000) for n, r in rivals.items()}})
    held = state_line(None, None, models=", ".join([card.get("name", "this model"), *rivals]), step=step,
                      pairs=min(len(pairs), 1000))
    draw(st, cm.chart_spec(exposure_charts.error_rate_chart, both["by_position"]), "Error rate by position", held,
         both["by_position"], exports)
    if both["after"].empty:
        st.caption(_("No free-running output here has an error followed by enough tokens to measure snowballing."))
    else:
        draw(st, cm.chart_spec(exposure_charts.after_error_chart, both["after"]), "After the first error", held,
             both["after"], exports)
    st.dataframe(both["summary"], hide_index=True)
    if not view["matrix"].empty:
        draw(st, cm.chart_spec(exposure_charts.conditional_heatmap, view["matrix"]), "Conditional error heatmap",
             state_line(ref.label, None, step=step), view["matrix"], exports)


# Lazy tabs: only the open one runs and is drawn (a page switch drew seven charts before, the browser's
# main cost on this page); the open tab is in the URL.
SECTIONS = {sec.INJECT_TAB: lambda: sec.injection(ref, step, model, src, gold, reference, named, exports),
            sec.HELD_OUT_TAB: held_out_set,
            sec.STRATEGIES_TAB: lambda: sec.strategies(ref, step, src, gold, reference, pairs, exports)}
opened, tab = lazy_tabs(list(SECTIONS), "eb_tab")
with tab:
    SECTIONS[opened]()
