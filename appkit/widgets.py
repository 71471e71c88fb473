"""Small drawing helpers shared by pages (tabs, texts, model cards, shared controls); no computation here."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from appkit.i18n import _, card_text, error_lead, localize_chart
from appkit.state import carry_over, follow_link

def lazy_tabs(names: Sequence[str], key: str):
    """Tabs of which only the open one runs and is drawn: ``names`` are msgids (marked ``N_``), the open tab kept in
    the URL under ``key`` (a link made in one language opens the same tab in any: ``follow_link``). Returns (the open
    tab's msgid, its container): run only that tab's section in it."""
    follow_link(key, names, _, store=_)  # the tabs' value is the label itself
    tabs = st.tabs([_(name) for name in names], key=key, bind="query-params")
    opened = next((i for i, tab in enumerate(tabs) if tab.open), 0)
    return names[opened], tabs[opened]


def lazy_expander(label: str, key: str, **options):
    """A collapsed expander whose content is sent only once opened (the browser draws what a collapsed one holds):
    its container while open (kept in the session under ``key``), else None."""
    box = st.expander(label, key=key, on_change="rerun", **options)
    return box if box.open else None


def first_text(model, raw: str, empty: str) -> tuple[int, ...]:
    """The ids of the first of ``raw``'s texts (``seqviz.inputs.read_texts``), its notices shown as warnings; the
    run stops with the info ``empty`` when no token of it is left."""
    from seqviz.inputs import read_texts, split_texts

    ids, notices = read_texts(model, "\n".join(split_texts(raw)[:1]))
    for notice in notices:
        st.warning(notice)
    if not ids:
        st.info(empty)
        st.stop()
    return ids[0]


def checkpoint_card(name: str, model_type: str, card: dict, curve: bool = False) -> None:
    """One zoo card: the facts of a model card (``seqviz.card_lines``), every number read from card.json."""
    from seqviz.card_lines import provenance, scores

    with st.container(border=True):
        st.markdown(f"#### {name}")
        arch = card.get("architecture")
        st.caption(f"{model_type} · {card_text(str(arch)) if arch else _('architecture not recorded')}")
        facts, lines = scores(card), provenance(card, card_text)
        if facts:
            st.markdown(" · ".join(facts))
        st.markdown("  \n".join(lines) if lines else _("_This checkpoint has no card.json._"))
        if curve and isinstance(card.get("history"), list) and len(card["history"]) > 1:
            from seqviz.charts.language import card_curves  # altair: only when asked (start-up time)

            try:
                st.altair_chart(localize_chart(card_curves(card["history"])), width="stretch")
            except ValueError as e:
                st.caption(_("No training curve: {error}").format(error=e))


# ------------------------------------------------------------------ controls two pages of one topic share
# The analogy the word2vec pages open with, by the URL parameter its box is bound to; the lab's other settings
# (their defaults: seqviz.word2vec.analogy.METHODS' first, top 10, a, b, c excluded) where the lab is not drawn.
ANALOGY = {"w2v_a": "man", "w2v_b": "woman", "w2v_c": "king", "w2v_expected": "queen"}
LAB = {"w2v_method": "3CosAdd", "w2v_k": 10, "w2v_exclude": True}


def analogy_row() -> tuple[str, str, str, str]:
    """a : b :: c : ? and the expected answer, four boxes bound to the URL: the Analogy lab's query, which the
    Word map page draws (a bound value follows the visitor to the other page)."""
    labels = ("a", _("b (a is to b ...)"), _("c (... as c is to ?)"), _("Expected answer (optional)"))
    carry_over(*ANALOGY)
    return tuple(col.text_input(label, default, key=key, bind="query-params")
                 for col, label, (key, default) in zip(st.columns(4), labels, ANALOGY.items()))


def lab_setting(key: str):
    """A lab setting (``LAB``) where its widget is not drawn: kept for the session, else in the URL, else its default."""
    return st.session_state[key] if key in st.session_state else st.query_params.get(key, LAB[key])


def gradient_text(ref) -> tuple[dict, list[str]]:
    """The text the gradient pages backpropagate through and its length, bound to the URL and shared by both
    pages: ({"text", "tokens"}, which every view of the model takes; the tokens it reads). A text the model
    cannot read stops the page with a warning."""
    from appkit import cache
    from seqviz.config import MAX_GRADIENT_TOKENS
    from seqviz.views.gradients import DEFAULT_TEXT, TOKENS, token_pieces

    c1, c2 = st.columns([3, 1])
    carry_over("gf_text", "gf_tokens")
    text = c1.text_area(_("Text"), DEFAULT_TEXT, key="gf_text", height=90, bind="query-params")
    n_tok = c2.slider(_("Tokens"), 20, MAX_GRADIENT_TOKENS, TOKENS, 10, key="gf_tokens", bind="query-params",
                      help=_("G has one row per loss and one column per state: the cost grows with the square."))
    try:
        pieces = cache.view(token_pieces, ref, text=text, tokens=n_tok).data["token"].tolist()
    except ValueError as e:
        st.warning(f"{ref.label}: {error_lead(e)}.")
        st.stop()
    return {"text": text, "tokens": n_tok}, pieces
