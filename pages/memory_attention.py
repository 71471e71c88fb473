"""Memory as attention: what each earlier token still adds to the memory, over a window of steps, and one step's
shares beside exact knockouts of each token's write."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import draw_view, view_button
from appkit.i18n import _
from appkit.sidebar import deferred_picker
from appkit.state import clamp, keep_option
from appkit.widgets import first_text
from seqviz import inputs as tx
from seqviz.export import state_line
from seqviz.families import of
from seqviz.views import implicit as iv

st.title(_("Memory as attention"))
st.caption(_("Unrolled, a gated linear recurrence s_t = a_t ⊙ s_(t−1) + b_t is s_t = Σ_j (∏_(k=j+1..t) a_k) ⊙ b_j: "
             "the product of decays since token j weighs what token j wrote, as an attention weight would (the "
             "LSTM's ∏ f; Mamba's hidden attention, Ali, Zimerman & Wolf 2025). Rows are steps t, columns the "
             "tokens j they still hold, in the shape of Bahdanau's alignment."))
picked = deferred_picker("recurrent_lm", prefer="shakespeare-char-lstm")  # the lesson's model, unless one was chosen
if picked is None:
    st.stop()
ref = picked.ref
info = picked.info()  # config, tokenizer, card: no torch while the first charts come shipped
cfg = info.config
family = of(cfg)  # what the page offers: the family table's entry, never its name
if (why := family.why_not("linear_form")) is not None:  # a tanh RNN: its own sentence, and where to look instead
    st.info(why)
    st.page_link("pages/gradient_flow.py", label=_("Gradient flow: which input tokens a prediction reads"),
                 icon=":material/trending_down:")
    picked.finish()
    st.stop()
exports = view_button("memory_attention", f"Memory as attention · {ref.label}", info.card)
raw = st.text_area(_("Text"), iv.DEFAULT_TEXT, key="ma_text", height=120, bind="query-params",
                   help=_("Up to {n:,} tokens are read; only the first text if you separate several.").format(
                       n=tx.MAX_TOKENS))
text = first_text(info, raw, _("Type a text above to see what its memory holds."))
if (kept := iv.tokens_for(cfg, len(text))) < len(text):  # a model of real size: fewer tokens, and it says why
    st.info(iv.cut_note(len(text), kept))
    text = text[:kept]
last = iv.last_step(len(text))
keep_option("ma_layer", list(range(cfg.n_layers)))
layer = st.selectbox(_("Layer"), list(range(cfg.n_layers)), key="ma_layer", bind="query-params")


@st.fragment  # the step, the unit and the shading rerun the charts only
def charts():
    exports.clear()  # a fragment's rerun draws its charts again
    clamp("ma_pos", 0, max(last, 1))
    pos = min(st.slider(_("Step"), 0, max(last, 1), last, key="ma_pos", bind="query-params",
                        help=_("The step whose memory is read (the map's last row, outlined) and whose next-token "
                               "loss the knockouts change; it opens on the last step that has a next token.")), last)
    reach = cm.view(iv.reach, ref, ids=text, layer=layer).data.set_index("unit")["reach"]
    word = _(family.unit)
    c1, c2 = st.columns([3, 2])
    keep_option(f"ma_unit_{layer}", [None, *reach.index])  # another text ranks other units
    unit = c1.selectbox(_("Which {what} (longest reach first)").format(what=word), [None, *reach.index],
                        key=f"ma_unit_{layer}", format_func=lambda u: _("all {what}s of the layer").format(
                            what=word) if u is None else _("{what} {u} · {r:.0%} from far back").format(
                            what=word, u=u, r=float(reach[u])))
    footnote = state_line(ref.label, raw, layer=layer, unit=unit, step=pos)
    if unit is None:
        drawn = cm.view(iv.layer_map, ref, ids=text, layer=layer, position=pos)
    else:
        scale = c2.segmented_control(_("Shade by"), list(iv.SCALES), default="row", required=True,
                                     format_func=lambda k: _(iv.SCALES[k]), key="ma_scale")
        drawn = cm.view(iv.unit_map, ref, ids=text, layer=layer, unit=int(unit), scale=scale, position=pos)
    draw_view(drawn, footnote, exports)
    st.caption(iv.caption(drawn.facts))
    bars = cm.view(iv.target, ref, ids=text, layer=layer, position=pos)
    draw_view(bars, footnote, exports)
    st.caption(iv.target_caption(bars.facts))
    st.caption(_("Each knockout removes that token's write b_j from layer {l}'s recurrence (b_j = 0, every later state "
                 "following) and runs the model on: the lower bar is the change of the loss at step {p}, in nats, "
                 "orange where removing the write raises the loss (the token helped the prediction), green where it "
                 "lowers it. Above, red: the step's own token, which reaches the loss through the layer's output at "
                 "that step and is not knocked out; grey: the tokens before the window, summed.").format(l=layer, p=pos))
    # while the visitor reads: what the next step and the other layers at this step slice, this layer first
    cm.complete(lambda: iv.prepare(cm.model(ref), text, layer, pos))


charts()
picked.finish()  # after the charts: the sidebar says what was found; the model loads for the next move
