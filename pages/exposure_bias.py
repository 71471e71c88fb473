"""Exposure bias: teacher-forced vs free-running decoding, injected errors, the held-out view, beam search."""

import pandas as pd
import streamlit as st

from appkit import cache_exposure as cx
from appkit.cache import list_checkpoints
from appkit.sidebar import checkpoint_picker
from appkit.widgets import SAMPLES
from seqviz.charts import exposure as ch
from seqviz.decoding import beam_search, beam_tree, gold_fall_off
from seqviz.introspect import exposure as ex
from seqviz.seq2seq.model import Seq2Seq

st.title("Exposure bias")
st.caption("Teacher forcing trains a decoder on the gold previous token; at inference it feeds on its own "
           "output, and one early mistake can lead it into states it never saw in training. Each position t "
           "below predicts the gold token y_t twice: after the gold prefix (teacher-forced, TF) and after the "
           "model's own output (free-running, FR). Errors are counted position by position.")
kind = st.radio("Model", ["Translator (seq2seq)", "Character language model"], horizontal=True, key="eb_kind",
                bind="query-params")
csv = lambda df: df.to_csv(index=False).encode()  # noqa: E731

if kind == "Character language model":
    model = checkpoint_picker("recurrent_lm")
    if model is None:
        st.stop()
    text = st.text_area("A real text", SAMPLES[next(iter(SAMPLES))], height=110, key="eb_text", bind="query-params")
    c1, c2, c3 = st.columns(3)
    prompt = c1.slider("Prompt (tokens)", 1, 120, 40, key="eb_prompt", bind="query-params")
    n = c2.slider("Continuation (tokens)", 5, 200, 60, key="eb_n", bind="query-params")
    temp = c3.slider("Temperature (0 = greedy)", 0.0, 2.0, 0.0, 0.1, key="eb_temp", bind="query-params")
    try:
        run = ex.compare_continuation(model, text, prompt, n, temperature=temp, seed=0)
    except ValueError as e:
        st.info(str(e))
        st.stop()
    st.markdown(f"**Prompt:** `{''.join(run['prompt'])}`  \n**Real text:** `{''.join(run['gold'])}`  \n"
                f"**Model's own:** `{''.join(run['free_running'])}`")
    div = run["first_divergence"]
    table = run["table"]
    m1, m2, m3 = st.columns(3)
    m1.metric("First divergence", "none" if div is None else f"token {div}")
    m2.metric("Mean log p(real), TF", f"{table.gold_logp_tf.mean():.3f}")
    m3.metric("Mean log p(real), own prefix", f"{table.gold_logp_fr.mean():.3f}")
    st.altair_chart(ch.gold_logprob_chart(table, div), width="stretch")
    st.altair_chart(ch.divergence_chart(table), width="stretch")
    st.download_button("Download the per-position table (CSV)", csv(table), "exposure_lm.csv", "text/csv")
    st.stop()

shipped = list_checkpoints("seq2seq")
if "seq2seq" not in st.query_params and any(c.name == "zh-en-small-teacher-forcing" for c in shipped):
    st.query_params["seq2seq"] = "zh-en-small-teacher-forcing"
base = checkpoint_picker("seq2seq")
if base is None:
    st.stop()
if not isinstance(base, Seq2Seq):
    st.info("These views need one of seqviz's own RNN encoder-decoders (teacher forcing, snapshots, beam "
            "search over its steps); a transformers model opens on the Attention page.")
    st.stop()
path, key, card = base.source_path, base.source_key, base.card or {}
stages = ["final"] + [str(s) for s in cx.snapshots(path)]
stage = st.sidebar.selectbox("Training stage (snapshot step)", stages, key="eb_stage",
                             help="Snowballing is clearest before a model converges.")
step = None if stage == "final" else int(stage)
model = cx.model_at(path, key, step)
same_task = [c for c in list_checkpoints("seq2seq") if c.card.get("task") == card.get("task") and c.path != path]
others = st.sidebar.multiselect("Compare with", [c.name for c in same_task], key="eb_compare",
                                default=[c.name for c in same_task if "zh-en-small" in c.name],
                                help="Shown beside this model in every view, at the same training stage "
                                     "(final weights where it has no such snapshot).")
rivals = {c.name: cx.model_at(c.path, cx.key_of(c.path), step if step in cx.snapshots(c.path) else None)
          for c in same_task if c.name in others}
st.caption(f"Task: **{card.get('task', '?')}** · training: **{card.get('training', '?')}** · "
           f"{'final weights' if step is None else f'snapshot at step {step}'} of "
           f"{card.get('training_steps', '?')}")
pairs = cx.heldout(path, key)
view = cx.dataset_view(path, key, step, 1000) if pairs else None
if pairs:
    wrong = [i for i, f in enumerate(view["first_errors"]) if f is not None]
    wrong.sort(key=lambda i: (len(pairs[i].tgt) < 8, len(pairs[i].tgt)))  # short but not trivial first
    picks = (wrong + [i for i in range(len(pairs)) if i not in set(wrong)])[:60]
    labels = {f"{i}: {''.join(pairs[i].src)}" + ("  (FR errs)" if i in set(wrong) else ""): i for i in picks}

    def use_pair():
        p = pairs[labels[st.session_state["eb_pick"]]]
        st.session_state["eb_src"], st.session_state["eb_ref"] = "".join(p.src), " ".join(p.tgt)

    fresh = "eb_src" not in st.session_state and "eb_src" not in st.query_params
    if (fresh or st.session_state.get("eb_task", card.get("task")) != card.get("task")) and picks:
        st.session_state["eb_src"], st.session_state["eb_ref"] = "".join(pairs[picks[0]].src), " ".join(pairs[picks[0]].tgt)
    st.selectbox("Held-out pair", list(labels), index=None, key="eb_pick", on_change=use_pair,
                 placeholder="pick one (the ones free running gets wrong come first)")
st.session_state["eb_task"] = card.get("task")
src = st.text_input("Source sentence", key="eb_src", bind="query-params")
ref = st.text_input("Reference translation (tokens separated by spaces)", key="eb_ref", bind="query-params")
gold = ref.split() if card.get("task") != "dates" else list(ref.replace(" ", ""))
try:
    run = ex.compare_translation(model, src or "", gold)
except ValueError as e:
    st.info(f"Type a source sentence and its reference ({e}).")
    st.stop()
table, div = run["table"], run["first_divergence"]
st.subheader("Two runs of one sentence")
st.markdown(f"**Free-running output:** {' '.join(run['free_running']) or '(empty)'}")
m1, m2, m3 = st.columns(3)
m1.metric("First divergence", "none" if div is None else f"position {div} ({table.gold[div]!r})")
m2.metric("Wrong tokens, TF / FR", f"{int(table.wrong_tf.sum())} / {int(table.wrong_fr.sum())}")
m3.metric("Edit distance to the reference", ex.edit_distance(run["free_running"], gold))
st.altair_chart(ch.gold_logprob_chart(table, div), width="stretch")
st.altair_chart(ch.divergence_chart(table), width="stretch")
st.download_button("Download the per-position table (CSV)", csv(table), "exposure_positions.csv", "text/csv")
if rivals:
    st.dataframe(pd.DataFrame([{"model": n, **ex.sentence_report(m, src, gold)} for n, m in rivals.items()]),
                 hide_index=True)

st.subheader("Inject an error")
if st.session_state.get("eb_k", 0) > len(gold):
    st.session_state["eb_k"] = len(gold)
c1, c2 = st.columns(2)
k = c1.slider("Inject at position", 0, max(len(gold), 1), min(2, len(gold)), key="eb_k", bind="query-params")
choices = ["the model's second choice"] + [t for t in model.tgt_vocab.tokens[3:] if t != (gold + ["<eos>"])[k]]
if st.session_state.get("eb_token", choices[0]) not in choices:
    st.session_state["eb_token"] = choices[0]
token = c2.selectbox("Wrong token", choices, key="eb_token", bind="query-params")
try:
    inj = ex.inject_error(model, src, gold, k, ex.second_choice(model, src, gold, k) if token == choices[0] else token)
except ValueError as e:
    st.info(f"Cannot inject there: {e}.")
    st.stop()
i1, i2, i3 = st.columns(3)
i1.metric("Forced", f"{inj['injected']!r} at {k}")
i2.metric("Wrong tokens after it", inj["errors_after"], help="Position-aligned: after a dropped or added word every later token counts as wrong; the edit distance does not.")
i3.metric("Recovers?", "yes" if inj["recovered"] else f"no (edit distance {inj['edit_distance']})")
st.markdown(f"**Continues as:** {' '.join(inj['output'])}")
st.altair_chart(ch.injection_chart(inj["table"], k), width="stretch")
st.download_button("Download the injection table (CSV)", csv(inj["table"]), "exposure_injection.csv", "text/csv")
if rivals:
    st.caption("The same injection in the compared models (each with its own second choice when that is picked):")
    st.dataframe(pd.DataFrame([{"model": n, **ex.sentence_report(m, src, gold, k, None if token == choices[0] else token)}
                               for n, m in rivals.items()]), hide_index=True)

if view is not None:
    st.subheader("Over the held-out set")
    views = {card.get("name", "this model"): view}
    for c in same_task:
        if c.name in others:
            s = step if step in cx.snapshots(c.path) else None
            views[c.name] = cx.dataset_view(c.path, cx.key_of(c.path), s, 1000)
    add = lambda name, df: df.assign(model=name)  # noqa: E731
    st.altair_chart(ch.error_rate_chart(pd.concat([add(n, v["by_position"]) for n, v in views.items()])),
                    width="stretch")
    after = pd.concat([add(n, v["after"]) for n, v in views.items()])
    if after.empty:
        st.caption("No free-running output here has an error followed by enough tokens to measure snowballing.")
    else:
        st.altair_chart(ch.after_error_chart(after), width="stretch")
    st.dataframe(pd.DataFrame([{"model": n, "sentences": v["summary"]["sentences"],
                                "TF token error": v["summary"]["tf"]["token_error_rate"],
                                "FR token error": v["summary"]["fr"]["token_error_rate"],
                                "exposure gap": v["summary"]["exposure_gap"],
                                "FR exact": v["summary"]["fr"]["exact"]} for n, v in views.items()]), hide_index=True)
    if not view["matrix"].empty:
        st.altair_chart(ch.conditional_heatmap(view["matrix"]), width="stretch")

st.subheader("Decoding strategies")
beam_k = st.slider("Beam size k", 1, 8, 4, key="eb_beam", bind="query-params")
res = beam_search(model, [src], k=beam_k, record=True)
gold_ids = model.tgt_vocab.encode(gold).ids
fell = gold_fall_off(res.history[0], gold_ids)
st.markdown(f"**Beam k={beam_k}:** {' '.join(model.tgt_vocab.strings(res.best[0]))} — "
            + ("the reference stays on the beam." if fell is None else f"the reference falls off the beam at step {fell}."))
tree = beam_tree(res.history[0], model.tgt_vocab.strings, gold_ids)
shown = max(24, (fell or 0) + 6)
st.altair_chart(ch.beam_tree_chart(tree[tree.step < shown]))
if tree.step.max() >= shown:
    st.caption(f"The tree shows the first {shown} steps of {int(tree.step.max()) + 1}.")
if pairs and st.toggle("BLEU and time per sentence of each strategy (200 held-out pairs)", key="eb_strat"):
    frame = cx.strategies(path, key, step, 200, (1, 2, 4, 8))
    st.altair_chart(ch.strategy_chart(frame))
    st.dataframe(frame, hide_index=True)
