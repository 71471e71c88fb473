"""Widget state that belongs to its page: kept values pulled back into a widget's range before it is built.

Every page names its widget keys with its own prefix (``gate_``, ``units_``, ``gf_``, ``att_``, ``w2v_``, ``lm_``,
``traj_``, ``eb_``, ``ebl_``, ``zoo_``); the pages of one topic share theirs on purpose (``w2v_``: the analogy, the
word limit; ``gf_``: the text; ``units_text`` and ``units_layer``), so a link made before a tab became a page still
names its controls. A range that depends on data (a shorter text's positions, a smaller model's units) can still
leave a kept value outside it: call ``clamp`` (numbers) or ``keep_option`` (choices) with the range just before
building the widget (Streamlit raises on a kept value above the maximum and silently drops a gone option; it
ignores a URL value outside the range itself).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from appkit.i18n import LANGUAGES, _, current_language, language


def clamp(key: str, lo, hi) -> None:
    """Pull ``st.session_state[key]`` (if kept) into [lo, hi]; a (lo, hi) pair for range sliders too."""
    if key not in st.session_state:
        return
    value = st.session_state[key]

    def inside(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return v
        return type(v)(min(max(v, lo), hi))

    fixed = type(value)(map(inside, value)) if isinstance(value, (tuple, list)) else inside(value)
    if fixed != value:
        st.session_state[key] = fixed


def keep_option(key: str, options: Sequence, default=None) -> None:
    """Replace a kept choice that is no longer among ``options`` by ``default`` (or the first option)."""
    if key in st.session_state and st.session_state[key] not in options and options:
        st.session_state[key] = default if default in options else options[0]


def keep_options(key: str, options: Sequence) -> None:
    """Drop from a kept multiselect choice the options that are gone (a checkpoint removed since)."""
    kept = st.session_state.get(key)
    if kept is not None and any(o not in options for o in kept):
        st.session_state[key] = [o for o in kept if o in options]


def follow_link(key: str, options: Sequence, format_func: Callable = str, store: Callable | None = None) -> None:
    """Open a shared link's choice whatever the language it was made in. A choice bound to the URL is written there as
    its label, ``format_func(option)``, in the language of whoever made the link, which another language's Streamlit
    ignores (it shows the default). Call this just before building the widget: it chooses the option that label
    names (kept as ``store(option)``, the option itself by default) for this session's first run of the widget."""
    wanted = st.query_params.get(key)
    if wanted is None or key in st.session_state or wanted in {str(format_func(o)) for o in options}:
        return
    for lang in [other for other in LANGUAGES if other != current_language()]:
        with language(lang):
            found = [o for o in options if str(format_func(o)) == wanted]
        if found:
            st.session_state[key] = found[0] if store is None else store(found[0])
            return


def forward_moved(key: str, moved: Sequence[str], page: str, renames: dict[str, str | None]) -> None:
    """A shared link to a tab that moved to another page opens it there: when the URL's ``key`` names one of
    ``moved`` (msgids, in any language), switch to ``page`` with the link's parameters, those named in
    ``renames`` under their new keys (a prefix such as ``{"gate_": "units_"}`` renames every key it starts; one
    renamed to None is left out, e.g. the tab key of a page without tabs)."""
    wanted = st.query_params.get(key)
    labels = {}
    for lang in LANGUAGES:
        with language(lang):
            labels.update({_(m): m for m in moved})
    if wanted not in labels:
        return
    params = {}
    for k, v in st.query_params.items():
        old = next((o for o in renames if k.startswith(o)), None)
        if old is None or renames[old] is not None:
            params[k if old is None else renames[old] + k[len(old):]] = v
    st.switch_page(page, query_params=params)


def carry_over(*keys: str) -> None:
    """Give back the values of URL-bound widgets that several pages draw under the same keys (the word2vec pages'
    analogy, the gradient pages' text), as the visitor left them on the other page: Streamlit keeps such a value in
    st.session_state across a page switch, but the widget can start from its default where the URL no longer names
    it. Call this just before building the widgets."""
    for key in keys:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def chart_controls(chart_key: str, controls: dict, identity) -> tuple[dict, dict]:
    """The values of a chart's own controls (Vega-Lite selections bound to inputs, switched in the browser).

    ``controls``: selection name -> (field, session and URL key, default, parse), ``parse`` raising ValueError on a
    bad URL text. Each value is the one last chosen in the chart (``st.session_state[chart_key]``), else the
    session's, else the URL's, else the default; it is kept in both, as the chart forgets it when drawn anew. Returns
    (the values now, the values to open the chart on): the second change only with ``identity`` (everything else the
    chart shows), so a chart whose own control moved is sent unchanged and keeps showing what the visitor chose.
    """
    chosen = ((st.session_state.get(chart_key) or {}).get("selection") or {})
    now = {}
    for name, (field, key, default, parse) in controls.items():
        picked = chosen.get(name) or []
        value = picked[0].get(field) if picked and isinstance(picked[0], dict) else None
        if value is None:
            value = st.session_state.get(key, st.query_params.get(key, default))
        try:
            value = parse(value)
        except (TypeError, ValueError):
            value = default
        st.session_state[key] = now[name] = value
        if value == default:
            st.query_params.pop(key, None)
        elif st.query_params.get(key) != str(value):
            st.query_params[key] = str(value)
    kept = st.session_state.get(f"{chart_key}_opened")
    if kept is None or kept[0] != identity:
        kept = (identity, dict(now))
        st.session_state[f"{chart_key}_opened"] = kept
    return now, kept[1]
