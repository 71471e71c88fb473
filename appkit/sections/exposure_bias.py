"""Sections of the exposure-bias page (pages/exposure_bias.py): the injection and decoding-strategy fragments."""

import streamlit as st

from appkit import models as cm
from appkit.export import draw
from appkit.i18n import N_, _
from appkit.models import ModelRef
from appkit.state import clamp, follow_link, keep_option
from seqviz.export import state_line
from seqviz.introspect import exposure as ex
from seqviz.charts import exposure as exposure_charts

SECOND = "the model's second choice"
BEAM_K = 4  # the beam slider's default
INJECT_AT = 2  # the injection slider's default (a shorter reference: its last position)
INJECT_TAB, HELD_OUT_TAB, STRATEGIES_TAB = N_("Inject an error"), N_("Over the held-out set"), N_("Decoding strategies")


@st.fragment  # the position and the token rerun this section only (issue 14)
def injection(ref: ModelRef, step: int | None, model, src: str, gold: tuple, reference: str,
              named: tuple, exports: list):
    exports[:] = [s for s in exports if s.heading != "Injected error"]
    clamp("eb_k", 0, max(len(gold), 1))  # a shorter reference than before
    c1, c2 = st.columns(2)
    k = c1.slider(_("Inject at position"), 0, max(len(gold), 1), min(INJECT_AT, len(gold)), key="eb_k",
                  bind="query-params")
    choices = [SECOND] + ex.injection_choices(model, list(gold), k)
    keep_option("eb_token", choices, SECOND)
    token_name = lambda o: _("the model's second choice") if o == SECOND else o  # noqa: E731
    follow_link("eb_token", choices, token_name)  # a link made in another language
    token = c2.selectbox(_("Wrong token"), choices, key="eb_token", bind="query-params", format_func=token_name)
    token = None if token == SECOND else token
    try:
        inj = cm.injection(ref.at(step), src, gold, k, token)
    except ValueError as e:
        st.info(_("Cannot inject there: {reason}.").format(reason=e))
        return
    i1, i2, i3 = st.columns(3)
    i1.metric(_("Forced"), _("{token} at {k}").format(token=repr(inj["injected"]), k=k))
    i2.metric(_("Wrong tokens after it"), inj["errors_after"], help=_("Position-aligned: after a dropped or added "
              "word every later token counts as wrong; the edit distance does not."))
    i3.metric(_("Recovers?"), _("yes") if inj["recovered"] else _("no (edit distance {d})").format(d=inj["edit_distance"]))
    st.markdown(_("**Continues as:** {output}").format(output=" ".join(inj["output"])))
    draw(st, cm.chart_spec(exposure_charts.injection_chart, inj["table"], k), "Injected error", state_line(
        ref.label, src, reference=reference, step=step, injected=f"{inj['injected']!r} at {k}"), inj["table"], exports)
    if named:  # (name, ref) pairs of the compared models
        st.caption(_("The same injection in the compared models (each with its own second choice when that is picked):"))
        st.dataframe(cm.model_comparison(named, src, gold, k, token), hide_index=True)


@st.fragment  # the beam size and the strategies toggle rerun this section only
def strategies(ref: ModelRef, step: int | None, src: str, gold: tuple, reference: str, pairs: list,
               exports: list):
    exports[:] = [s for s in exports if s.heading not in ("Beam tree", "Decoding strategies")]
    beam_k = st.slider(_("Beam size k"), 1, 8, BEAM_K, key="eb_beam", bind="query-params")
    beam = cm.beam(ref.at(step), src, gold, beam_k)
    fell = beam["fell_off"]
    st.markdown(_("**Beam k={k}:** {output} — {verdict}").format(
        k=beam_k, output=" ".join(beam["best"]), verdict=_("the reference stays on the beam.") if fell is None
        else _("the reference falls off the beam at step {step}.").format(step=fell)))
    draw(st, cm.chart_spec(exposure_charts.beam_tree_chart, beam["tree"]), "Beam tree", state_line(
        ref.label, src, reference=reference, beam=beam_k, step=step), beam["tree"], exports, width="content")
    if beam["shown"] < beam["steps"]:
        st.caption(_("The tree shows the first {shown} steps of {n}.").format(shown=beam["shown"], n=beam["steps"]))
    if pairs and st.toggle(_("BLEU and time per sentence of each strategy (200 held-out pairs)"), key="eb_strat",
                           persist_state="page"):
        frame = cm.strategies(ref.at(step), 200, (1, 2, 4, 8))
        draw(st, cm.chart_spec(exposure_charts.strategy_chart, frame), "Decoding strategies",
             state_line(ref.label, None, step=step, pairs=200), frame, exports, width="content", csv=False)
        st.dataframe(frame, hide_index=True)
