"""Exposure bias in a character language model: continuing a real text on its own vs teacher-forced."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import draw_runs, view_button
from appkit.i18n import _, error_lead
from appkit.sidebar import deferred_picker
from appkit.state import clamp
from seqviz.export import state_line
from seqviz.inputs import SAMPLES, token_count
from seqviz.views import exposure as views

MIN_TOKENS = 8  # a 2-token prompt range and a 6-token continuation range at the least

st.title(_("Exposure bias (LM)"))
st.caption(_("A character model reads a prompt from a real text, then goes on two ways: teacher-forced, reading "
             "the real continuation, and free-running, reading what it wrote itself. Position t compares how "
             "likely each run finds the real next character. The translator version is on *Exposure bias*."))
picked = deferred_picker("recurrent_lm")
if picked is None:
    st.stop()
ref = picked.ref
model = picked.info()  # config, tokenizer, card: no torch while the first charts come shipped
exports = view_button("exposure_bias_lm", f"Exposure bias (LM) · {ref.label}", model.card)
text = st.text_area(_("A real text"), SAMPLES[next(iter(SAMPLES))], height=110, key="ebl_text", bind="query-params")
n_tokens = token_count(model, text)
if n_tokens < MIN_TOKENS:
    st.info(_("The text has {n} tokens; a prompt and a continuation need at least {min}.").format(
        n=n_tokens, min=MIN_TOKENS))
    st.stop()
c1, c2, c3 = st.columns(3)
top = min(views.PROMPT_MAX, n_tokens - 6)  # leaves at least 6 real tokens to continue
clamp("ebl_prompt", 1, top)
first, length = views.defaults(model, text)
prompt = c1.slider(_("Prompt (tokens)"), 1, top, first, key="ebl_prompt", bind="query-params")
longest = min(views.LONGEST, n_tokens - prompt)  # compared with the text's own continuation
clamp("ebl_n", 5, longest)
n = c2.slider(_("Continuation (tokens)"), 5, longest, min(length, longest), key="ebl_n", bind="query-params")
temp = c3.slider(_("Temperature (0 = greedy)"), 0.0, 2.0, 0.0, 0.1, key="ebl_temp", bind="query-params")
choices = {"text": text, "prompt": prompt, "n": n, "temperature": temp, "seed": 0}
try:
    logprob = cm.view(views.gold_logprob, ref, **choices)
except ValueError as e:
    st.info(error_lead(e, _("Cannot compare the two runs:")))
    st.stop()
f = logprob.facts
if f.get("note"):  # a model of real size continues fewer tokens
    st.info(f["note"])
one_line = lambda s: s.replace("\n", "⏎").replace("`", "'")  # noqa: E731 - in code spans
st.markdown(_("**Prompt:** `{prompt}`  \n**Real text:** `{real}`  \n**Model's own:** `{own}`").format(
    prompt=one_line(f["prompt"]), real=one_line(f["real"]), own=one_line(f["own"])))
div = f["first_divergence"]
m1, m2, m3 = st.columns(3)
m1.metric(_("First divergence"), _("none") if div is None else _("token {t}").format(t=div))
m2.metric(_("Mean log p(real), teacher-forced"), f"{f['mean_logp_tf']:.3f}")
m3.metric(_("Mean log p(real), own prefix"), f"{f['mean_logp_fr']:.3f}")
exports.footnote = state_line(ref.label, text, prompt=prompt, continuation=n, temperature=temp, seed=0)
draw_runs(logprob, cm.view(views.divergence, ref, **choices), "exposure_lm.csv", exports.footnote, exports)
picked.finish()  # after the charts: the sidebar says what was found; the model loads for the next move
