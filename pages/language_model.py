"""Language-model page: per-token surprisal, perplexity, sampled continuations, what the model loses when its
longest memories are switched off, RNN vs GRU vs LSTM."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import draw_view, view_button
from appkit.i18n import _, error_lead
from appkit.sidebar import deferred_picker
from appkit.state import follow_link, keep_options
from seqviz.charts.language import UNIT_NAMES, continuation_html, legend_html, surprisal_html
from seqviz.export import public_card, state_line
from seqviz.inputs import DEFAULT_SAMPLE, SAMPLES
from seqviz.introspect.language import MAX_TOKENS
from seqviz.refs import classic_cells
from seqviz.tables import readable
from seqviz.views import language as views

SIDE_BY_SIDE = 600  # tokens of each model's coloured text in the comparison (the table and chart read them all)

st.title(_("Language model"))
st.caption(_("How surprised is the model by each token? Surprisal is −log p(token | everything before it), "
             "in nats; perplexity = exp(mean surprisal), the number of equally likely choices the model is "
             "effectively hesitating between at each step. Lower is better."))

# The model is loaded (picked.open()) only where the page needs it: the sample texts' scores ship with
# each checkpoint, so the first view is drawn while the server may still be importing torch.
picked = deferred_picker("recurrent_lm")
if picked is None:
    st.stop()
ref = picked.ref
exports = view_button("language_model", f"Language model · {ref.label}")


def open_model():
    """The picked model (loaded once), its card in the HTML file (files that cannot be loaded rerun the page,
    whose picker then reports them and falls back)."""
    model = picked.open()
    exports.card = public_card(model)
    return model


TEMPERATURE, LENGTH, SEED = 0.8, 120, 0  # the continuation's defaults


def use_sample():
    if st.session_state["lm_sample"] is not None:
        st.session_state["lm_text"] = SAMPLES[st.session_state["lm_sample"]]


left, right = st.columns([3, 1])
right.selectbox(_("Sample text"), list(SAMPLES), format_func=_, index=None, key="lm_sample", on_change=use_sample,
                placeholder=_("Pick a sample..."))
unit_name = lambda u: _(UNIT_NAMES[u])  # noqa: E731
follow_link("lm_unit", list(UNIT_NAMES), unit_name)  # a link made in another language names it there
unit = right.radio(_("Unit"), list(UNIT_NAMES), key="lm_unit", horizontal=True, bind="query-params",
                   format_func=unit_name, help=_("1 bit = ln 2 ≈ 0.693 nats."))
text = left.text_area(_("Text"), value=SAMPLES[DEFAULT_SAMPLE], key="lm_text", height=130, bind="query-params",
                      help=_("Only the first {n:,} tokens are read. Press Ctrl+Enter to apply.").format(n=MAX_TOKENS))


def surprisal(ref, text, unit, opened=lambda: None):
    """One model's view: its shipped scores when they hold the text (no model runs), else the model reads it
    (``opened`` is called before it is loaded); a ValueError says why it cannot."""
    if (shown := cm.view_of_path(views.shipped_surprisal, ref, text=text, unit=unit)) is None:
        opened()
        shown = cm.view(views.surprisal, ref, text=text, unit=unit)
    return shown


if not text or not text.strip():
    open_model()
    st.info(_("Type some text above, or pick a sample, to see how surprising the model finds it."))
    st.stop()
try:
    shown = surprisal(ref, text, unit, open_model)  # a text of the visitor's own: the model reads it
except ValueError as e:
    st.warning(_("Nothing to score: {problem}.").format(problem=e))
    st.stop()
f = shown.facts
for note in views.reading_notes(f):
    st.warning(note)
c1, c2, c3, c4 = st.columns(4)
c1.metric(_("Perplexity"), f"{f['perplexity']:.2f}" if f["scored"] else "-",
          help=_("exp(mean loss in nats) over the scored tokens"))
c2.metric(_("Mean loss ({unit}/token)").format(unit=unit_name(unit)), f"{f['mean']:.3f}" if f["scored"] else "-")
c3.metric(_("Tokens scored"), f"{f['scored']:,}", help=_("The first token has no context and is not scored."))
c4.metric(_("Uniform guess perplexity"), f"{f['vocab_size']}",
          help=_("A model that knew nothing would spread p evenly over the vocabulary: perplexity = V."))
if not f["scored"]:
    st.info(_("A single token has nothing before it to predict it from; add more text."))
st.html(legend_html(f["scale"], unit, note=_(" = uniform guess (ln V)")))
st.html(surprisal_html(shown.data, f["kind"], f["scale"], unit))
st.caption(_("Tap or hover a token for its exact loss, its probability and the model's own best guess."))
exports.footnote = state_line(ref.label, text, unit=unit, perplexity=f"{f['perplexity']:.2f}")
if shown.spec is not None:
    draw_view(shown, exports.footnote, exports)


open_model()  # the sampled continuation needs the network


@st.fragment  # moving these controls reruns only this section, not the whole page
def continuation(ref, prompt: str):
    st.subheader(_("Continue the text"))
    g1, g2, g3 = st.columns([2, 2, 1])
    temperature = g1.slider(_("Temperature"), 0.0, 2.0, TEMPERATURE, 0.05, key="lm_temp", bind="query-params",
                            help=_("Divides the logits before the softmax: 0 = always the likeliest token, "
                                   "1 = the model's own distribution, above 1 = flatter, more random."))
    length = g2.slider(_("Tokens to sample"), 20, 400, LENGTH, 20, key="lm_n", bind="query-params")
    seed = g3.number_input(_("Seed"), 0, 2**31 - 1, SEED, key="lm_seed", bind="query-params")
    try:
        sampled = cm.view(views.continuation, ref, text=prompt, n=length, temperature=temperature, seed=int(seed))
    except ValueError as e:
        st.warning(_("Cannot sample: {error}.").format(error=e))
        return
    st.html(continuation_html(sampled.facts["prompt_tail"], sampled.facts["sample"]))
    st.caption(_("The end of the prompt in grey, then the sample (highlighted); the model reads the whole "
                 "prompt first. The same seed and settings give the same sample."))


continuation(ref, f["text"])


@st.fragment  # the switch and k rerun only this section
def switch_off(raw: str):
    """The text's Δ surprisal with the k longest memories of layer 0 switched off (Single units has the rest)."""
    from seqviz import inputs as tx
    from seqviz.views import interventions as iv

    st.subheader(_("Without its longest memories"))
    info = picked.info()
    if (reason := iv.no_memory_to_switch_off(info.config)) is not None:
        return st.info(reason)
    if not st.toggle(_("Switch off the units that keep their memory longest"), key="lm_off", bind="query-params"):
        return
    k = st.slider(_("k units"), 1, max(2, iv.units_of(info) // 2), 1, key="lm_off_k", bind="query-params")
    ids, _notes = tx.read_texts(info, "\n".join(tx.split_texts(raw)[:1]))
    try:
        shown = cm.view(iv.switch_off_text, ref, ids=ids[0] if ids else (), pick="top", k=k)
    except ValueError as e:
        st.info(error_lead(e, _("Cannot switch these units off:")))
        return
    g = shown.facts
    draw_view(shown, state_line(ref.label, raw, units=g["units"], state=g["name"]), exports, csv=False)
    st.caption(iv.switch_off_caption(g))


switch_off(text)


@st.fragment  # choosing the models reruns only this section
def comparison(text: str, unit: str):
    st.subheader(_("RNN vs GRU vs LSTM on the same text"))
    shipped = cm.list_checkpoints("recurrent_lm")
    names = [c.name for c in shipped]
    own = ref.path not in {c.path for c in shipped}  # a model of the visitor's own is compared with them too
    if len(names) < 2 - own:
        st.info(_("Comparison needs at least two shipped language-model checkpoints."))
        return
    keep_options("lm_compare", names)  # a checkpoint that is gone is dropped
    chosen = st.multiselect(_("Models to compare"), names, classic_cells(names), key="lm_compare",
                            bind="query-params")
    results = {ref.label: surprisal(ref, text, unit)} if own else {}  # read above already
    by_name = {c.name: c for c in shipped}
    for c in (by_name[n] for n in chosen if n in by_name):  # in the order chosen (the default: RNN, GRU, LSTM)
        try:
            results[c.name] = surprisal(c.ref(), text, unit)
        except (OSError, ValueError) as e:  # CheckpointError is a ValueError
            st.warning(_("Left out of the comparison: {reason}").format(reason=f"{c.name}: {e}"))
    if not results:
        return
    tables = {name: s.data for name, s in results.items()}
    summary = cm.view_of_data(views.summary, tables=tables)
    if not summary.facts["same_tokens"]:
        st.info(_("These models cut the text into different tokens (their tokenizers differ), so their losses per "
                  "token and perplexities measure different units and do not compare directly."))
    st.dataframe(readable(summary.data, **views.SUMMARY_TABLE), hide_index=True)
    along = cm.view_of_data(views.comparison, tables=tables, unit=unit)
    exports[:] = [s for s in exports if s.heading != along.title]  # a fragment rerun replaces its own chart
    draw_view(along, state_line(None, text, models=", ".join(results), unit=unit, window=along.facts["window"]),
              exports)
    st.caption(_("Each line is a model's surprisal averaged over the last 25 tokens, along the same text."))
    for col, (model_name, s) in zip(st.columns(len(results)), results.items()):
        with col:
            st.markdown(_("**{name}** · perplexity {ppl:.2f}").format(name=model_name, ppl=s.facts["perplexity"])
                        if s.facts["scored"] else f"**{model_name}**")
            st.html(surprisal_html(s.data.head(SIDE_BY_SIDE), s.facts["kind"], s.facts["scale"], unit))
    if any(s.facts["tokens"] > SIDE_BY_SIDE for s in results.values()):
        st.caption(_("Side-by-side text shows the first 600 tokens; the table and chart use all of them."))


comparison(text, unit)
