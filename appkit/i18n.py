"""The app in English and Simplified Chinese: gettext catalogues, the session's language, `_()`.

The catalogues are the library's (``seqviz.text``: ``seqviz/locale/<lang>/LC_MESSAGES/seqviz.po``, one for
the app and the library's views); English is the source language (the msgids). See
``seqviz/locale/README.md`` for extraction and updates.

The session's language, first match wins: a language forced with ``language(...)`` (tests, CLI),
``?lang=zh`` / ``?lang=en`` in the URL, the sidebar switch (``language_switch()``), the browser's
language (``st.context.locale``), English. Outside a Streamlit run (and under AppTest, whose
``st.context.locale`` is None) the default is English.

Never call ``_()`` at import time of a module (its strings would freeze in one language) nor inside
an ``st.cache_*`` function without the language among its arguments; mark such strings ``N_()``
and translate them where they are shown.
"""

from __future__ import annotations

import contextlib
import contextvars

import streamlit as st

from seqviz.export import CJK_FAMILIES  # noqa: F401 - the app's name for it
from seqviz.views.spec import CJK_FONT_STACK, THEME, cjk_theme, enable_cjk_theme  # noqa: F401 - the app's names
from seqviz.text import DOMAIN, LANGUAGES, LOCALE_DIR, SOURCE, catalogue, po_path  # noqa: F401 - the app's names

PARAM = "lang"  # URL query parameter
KEY = "i18n_lang"  # session-state key of the sidebar switch
EXPLICIT = "i18n_lang_explicit"  # session-state flag: the language came from the URL or the switch
# Browser charts: Streamlit's own font for Latin text, then CJK families of each platform (macOS,
# Windows), then those the exported images use (seqviz.export), then the generic family.

_forced: contextvars.ContextVar[str | None] = contextvars.ContextVar("seqviz_lang", default=None)


def N_(message: str) -> str:  # noqa: N802 - gettext's name for "mark for extraction, translate later"
    """``message`` unchanged; marks a string defined at import time for extraction."""
    return message


def normalize(tag) -> str | None:
    """'zh', 'zh-CN', 'zh_Hans_CN', 'EN-us' -> 'zh' / 'en'; anything else -> None."""
    if not isinstance(tag, str):
        return None
    code = tag.strip().replace("_", "-").split("-")[0].lower()
    return code if code in LANGUAGES else None


def browser_language() -> str | None:
    """The language of the visitor's browser (``navigator.language``), when it is one of ours."""
    try:
        return normalize(st.context.locale)
    except Exception:  # noqa: BLE001 - no context (bare run, AppTest): no browser to ask
        return None


def url_language() -> str | None:
    try:
        return normalize(st.query_params.get(PARAM))
    except Exception:  # noqa: BLE001
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


def gettext_in(lang: str, message: str) -> str:
    """``message`` in ``lang`` whatever the session's language (tests, exports)."""
    return catalogue(lang).gettext(message)


# --- choosing the language ------------------------------------------------------------------------

def _chosen() -> None:
    st.session_state[EXPLICIT] = True
    st.query_params[PARAM] = st.session_state[KEY]


def sync_language() -> str:
    """Settle this run's language: remember it for the session and keep ``lang`` in the URL.

    The URL carries ``lang`` whenever it was chosen (URL or switch) or is not English, so a shared
    link opens in the language the sharer saw; an English default leaves URLs as they were.
    Streamlit drops query parameters on a page switch; this writes ``lang`` back every run.
    """
    lang = current_language()
    if url_language():
        st.session_state[EXPLICIT] = True
    st.session_state[KEY] = lang
    if (st.session_state.get(EXPLICIT) or lang != SOURCE) and st.query_params.get(PARAM) != lang:
        st.query_params[PARAM] = lang
    return lang


def language_switch(container=None) -> str:
    """Draw the "English / 中文" switch (in the sidebar unless ``container`` is given); returns the code.

    Call it once per run, early (``app.py``, before ``st.navigation(...).run()``), so every page and
    the navigation's titles see the same language.
    """
    sync_language()  # before the widget: it reads its value from st.session_state[KEY]
    (container or st.sidebar).segmented_control(
        _("Language"), list(LANGUAGES), format_func=LANGUAGES.get, key=KEY, required=True,
        on_change=_chosen, help=_("Also set by ?lang=zh or ?lang=en in the address; "
                                  "the default is your browser's language."))
    return st.session_state[KEY]


# --- library messages -----------------------------------------------------------------------------

# Lead sentences for the library's exceptions, by class name (no library import needed); the
# library's own message follows in English.
LEADS = {
    "CheckpointError": N_("Could not load this checkpoint:"),
    "ConfigError": N_("This configuration cannot describe a model:"),
    "TokenizerError": N_("This vocabulary file cannot be used:"),
    "VocabularyError": N_("Not in the vocabulary:"),
    "DataError": N_("The corpus is not available:"),
    "OSError": N_("Could not read the file:"),
}
DEFAULT_LEAD = N_("Something went wrong:")

def error_lead(error: BaseException, lead: str | None = None) -> str:
    """A translated lead sentence, then the library's English message: "无法加载该检查点：<message>".

    ``lead``: the page's own lead (an English msgid marked with ``N_`` or already ``_()``-ed);
    otherwise one chosen by the error's class.
    """
    if lead is None:
        lead = next((LEADS[c.__name__] for c in type(error).__mro__ if c.__name__ in LEADS), DEFAULT_LEAD)
    text = _(lead)
    gap = "" if text.endswith(("：", "。", "，")) else " "
    return f"{text}{gap}{error}"


# --- card.json lines ------------------------------------------------------------------------------

def card_text(line: str) -> str:
    """A card.json line in the session's language (``seqviz.card_lines.translated``); English: as written."""
    from seqviz.card_lines import translated

    return line if current_language() == SOURCE else translated(line, _)


# --- charts ---------------------------------------------------------------------------------------

def enable_cjk_fonts() -> None:
    """Enable the CJK font theme for Altair charts (app.py, every run; ``seqviz.views.spec``)."""
    enable_cjk_theme()


def localize_chart(chart):
    """A copy of an Altair chart with every title (chart, axis, legend, header, tooltip) translated.

    The library's chart builders write English titles; their constant ones are extracted into the
    catalogue (``babel.cfg``'s ``chart_titles`` method), so ``st.altair_chart(localize_chart(c))``
    shows them in the session's language. Data values (tokens, model names) are left alone.
    """
    if current_language() == SOURCE:
        return chart
    if isinstance(chart, dict):  # a Vega-Lite spec (st.vega_lite_chart): its data rows are left alone
        import copy as copying

        from seqviz.charts.fields import titled

        copy = {k: (v if k in ("data", "datasets") else copying.deepcopy(v)) for k, v in chart.items()}
        titled(copy)  # a tooltip field without a title would show its column name, in English
        _translate_titles(copy)
        return copy
    copy = chart.copy(deep=True)
    _translate_titles(copy)
    return copy


def _title(text: str) -> str:
    return _(text) if text else text  # _("") is the catalogue's header


def _translate_titles(node) -> None:
    from altair.utils.schemapi import SchemaBase

    if isinstance(node, SchemaBase):
        for key, value in list(node._kwds.items()):
            if key == "title" and isinstance(value, str):
                node._kwds[key] = _title(value)
            elif key == "title" and isinstance(value, list):
                node._kwds[key] = [_title(v) if isinstance(v, str) else v for v in value]
            elif key in ("text", "subtitle") and isinstance(value, str) and type(node).__name__ == "TitleParams":
                node._kwds[key] = _title(value)
            else:
                _translate_titles(value)
    elif isinstance(node, dict):
        from seqviz.views.spec import translate_titles

        translate_titles(node, _)
    elif isinstance(node, list | tuple):
        for item in node:
            _translate_titles(item)
