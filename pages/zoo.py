"""Landing page: a card per shipped checkpoint and a guide to what each page shows."""

import math

import streamlit as st

from appkit.cache import list_checkpoints
from appkit.i18n import N_, _
from appkit.registry import by_section
from appkit.widgets import checkpoint_card
from appkit.state import follow_link
from seqviz.refs import checkpoint_roots

st.title(_("seqviz: look inside sequence models"))
st.markdown(_(
    "Trained recurrent language models, word embeddings and a seq2seq translator, opened up: "
    "per-token surprisal, hidden states, gates, gradients and attention. Every number on these "
    "pages is computed from the checkpoints below when you open the page."))

shipped = list_checkpoints()
st.header(_("Model zoo"))
if not shipped:
    roots = ", ".join(f"`{r}`" for r in checkpoint_roots())
    st.info(_("No checkpoints found in {roots}. Train one with "
              "`python -m seqviz train lm --cell lstm --out checkpoints/my-lstm`, or load one from a "
              "page's sidebar (local folder, upload or Hub repo id).").format(roots=roots))
else:
    orders = {
        N_("Model type, then name"): lambda c: (c.model_type, c.name),
        N_("Validation loss"): lambda c: (c.model_type, c.card.get("val_loss", math.inf)),
        N_("Parameters"): lambda c: -(c.card.get("parameters") or 0),
    }
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    follow_link("zoo_sort", list(orders), _)  # a link made in another language
    order = left.selectbox(_("Sort by"), list(orders), format_func=_, key="zoo_sort", bind="query-params")
    curves = right.toggle(_("Training curves"), key="zoo_curves", bind="query-params",
                          help=_("Training and validation loss against step, from each card's history."))
    cards = sorted(shipped, key=orders[order])
    cols = st.columns(3)
    for i, c in enumerate(cards):
        with cols[i % 3]:
            checkpoint_card(c.name, c.model_type, c.card, curve=curves)
    lms = [c for c in list_checkpoints("recurrent_lm") if c.card.get("val_loss")]
    if len(lms) > 1:
        best = min(lms, key=lambda c: c.card["val_loss"])
        st.caption(_("Lowest validation loss among the language models: **{name}** "
                     "({loss:.3f} nats/token, perplexity {ppl:.2f}).").format(
            name=best.name, loss=best.card["val_loss"], ppl=math.exp(best.card["val_loss"])))

st.header(_("What each page shows"))
st.markdown(_("A guide for a class: open a page from the sidebar; each one has its controls at the "
              "top and keeps them in the URL, so a copied link reopens the same view."))
for section, pages in by_section().items():
    see = _("see the page.")
    rows = [f"- **{_(p.title)}**: {_(p.summary) if p.summary else see}" for p in pages if not p.default]
    if rows:
        st.markdown(f"**{_(section)}**\n\n" + "\n".join(rows))
