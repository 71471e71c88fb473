"""The app in English and Simplified Chinese: the session's language and `_()` (the catalogues are ``seqviz.text``'s).

The session's language, first match wins: a language forced with ``language(...)`` (tests, CLI), ``?lang=`` in the
URL, the sidebar switch (``language_switch()``), the browser's (``st.context.locale``), English (also outside a run
and under AppTest). Importing this module makes the library's ``_`` (``seqviz.text``) follow it too. Never call
``_()`` at import time (its strings would freeze in one language) nor inside an ``st.cache_*`` function without the
language among its arguments: mark such strings ``N_()`` and translate them where they are shown.
"""

from __future__ import annotations

import contextlib
import contextvars

import streamlit as st

from seqviz import text
from seqviz.text import LANGUAGES, SOURCE, catalogue, normalize
from seqviz.text import N_, error_lead  # noqa: F401 - what pages import from here
from seqviz.views.spec import translated

PARAM = "lang"  # URL query parameter
KEY = "i18n_lang"  # session-state key of the sidebar switch
EXPLICIT = "i18n_lang_explicit"  # session-state flag: the language came from the URL or the switch

_forced: contextvars.ContextVar[str | None] = contextvars.ContextVar("seqviz_lang", default=None)


def browser_language() -> str | None:
    """The language of the visitor's browser (``navigator.language``), when it is one of ours."""
    try:
        return normalize(st.context.locale)
    except Exception:  # noqa: BLE001 - no context (bare run, AppTest): no browser to ask
        return None


def url_language() -> str | None:
    try:
        return normalize(st.query_params.get(PARAM))
    except Exception:  # noqa: BLE001 - no script run
        return None


def current_language() -> str:
    """The language this session shows (see the module docstring for the order); settled once per run."""
    forced = _forced.get()
    if forced:
        return forced
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return SOURCE
    # Asking the URL and the session costs ~0.1 ms, and a page asks once per message (370 times for the
    # gate page, 0.04 s a run): the answer is kept for the run, whose cursors dict is its own.
    kept = getattr(ctx, "_seqviz_language", None)
    if kept is not None and kept[0] is ctx.cursors:
        return kept[1]
    lang = url_language() or st.session_state.get(KEY) or browser_language() or SOURCE
    ctx._seqviz_language = (ctx.cursors, lang)
    return lang


@contextlib.contextmanager
def language(lang: str):
    """Force a language in this thread/context (tests, the CLI): ``with language("zh"): ...``."""
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {sorted(LANGUAGES)}, got {lang!r}")
    token = _forced.set(lang)
    try:
        yield
    finally:
        _forced.reset(token)


def _(message: str) -> str:
    """``message`` (an English msgid) in the session's language."""
    return catalogue(current_language()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form for ``n`` (``.format(n=n)`` it afterwards): ``ngettext("{n} token", "{n} tokens", n)``."""
    return catalogue(current_language()).ngettext(singular, plural, n)


def pgettext(context: str, message: str) -> str:
    """``message`` in the session's language, told apart from the same English in another context."""
    return catalogue(current_language()).pgettext(context, message)


_.ngettext = ngettext  # seqviz.text.ngettext asks the translator for its plural forms
text.install(_)  # the library's views, notices and error leads in the session's language too


# --- choosing the language ------------------------------------------------------------------------
def _chosen() -> None:
    st.session_state[EXPLICIT] = True
    st.query_params[PARAM] = st.session_state[KEY]


def sync_language() -> str:
    """Settle this run's language: remember it for the session and keep ``lang`` in the URL (written back every run:
    Streamlit drops it on a page switch) whenever it was chosen or is not English, so a shared link opens in the
    language the sharer saw; an English default leaves URLs as they were."""
    lang = current_language()
    if url_language():
        st.session_state[EXPLICIT] = True
    st.session_state[KEY] = lang
    if (st.session_state.get(EXPLICIT) or lang != SOURCE) and st.query_params.get(PARAM) != lang:
        st.query_params[PARAM] = lang
    return lang


def language_switch(container=None) -> str:
    """Draw the "English / 中文" switch (in the sidebar unless ``container`` is given); returns the code. Called once
    per run, early (``app.py``, before ``st.navigation(...).run()``): every page and title see the same language."""
    sync_language()  # before the widget: it reads its value from st.session_state[KEY]
    (container or st.sidebar).segmented_control(
        _("Language"), list(LANGUAGES), format_func=LANGUAGES.get, key=KEY, required=True,
        on_change=_chosen, help=_("Also set by ?lang=zh or ?lang=en in the address; "
                                  "the default is your browser's language."))
    return st.session_state[KEY]


# --- card lines and charts ------------------------------------------------------------------------
def card_text(line: str) -> str:
    """A card.json line in the session's language (``seqviz.card_lines.translated``); English: as written."""
    from seqviz.card_lines import translated

    return line if current_language() == SOURCE else translated(line, _)


def localize_chart(chart):
    """A copy of an Altair chart or a Vega-Lite spec with every title (chart, axis, legend, header, tooltip) in the
    session's language (``seqviz.views.spec.translated``; the builders' English titles are extracted into the
    catalogue by ``babel.cfg``'s ``chart_titles``). Data values (tokens, names) are left alone."""
    return chart if current_language() == SOURCE else translated(chart, _)
