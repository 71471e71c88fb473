"""Widget state that belongs to its page: kept values pulled back into a widget's range before it is built.

Every page names its widget keys with its own prefix (``gate_``, ``gf_``, ``att_``, ``w2v_``, ``lm_``,
``traj_``, ``eb_``, ``ebl_``, ``zoo_``), so no value travels between pages by accident. What still
can go out of range is a range that depends on data: the position slider of a shorter text, the
unit box of a smaller model, the word count of a smaller vocabulary. Call ``clamp`` (numbers) or
``keep_option`` (choices) with the range you are about to give the widget, just before building it:
Streamlit raises ``StreamlitValueAboveMaxError`` on a kept value outside the range, and silently
drops an option that is gone. URL values are checked by Streamlit itself (``bind="query-params"``
ignores a value outside the range).
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st


def clamp(key: str, lo, hi) -> None:
    """Pull ``st.session_state[key]`` (if kept) into [lo, hi]; a (lo, hi) pair for range sliders too."""
    if key not in st.session_state:
        return
    value = st.session_state[key]

    def inside(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return v
        return type(v)(min(max(v, lo), hi))

    if isinstance(value, (tuple, list)):
        fixed = type(value)(inside(v) for v in value)
    else:
        fixed = inside(value)
    if fixed != value:
        st.session_state[key] = fixed


def keep_option(key: str, options: Sequence, default=None) -> None:
    """Replace a kept choice that is no longer among ``options`` by ``default`` (or the first option)."""
    if key in st.session_state and st.session_state[key] not in options and options:
        st.session_state[key] = default if default in options else options[0]
