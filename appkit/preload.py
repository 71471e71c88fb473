"""The browser fetches its chart code while a session's first run computes, not after the first chart arrives.

Streamlit's frontend loads Vega (its chart component and ~30 script chunks) only when the first chart element reaches
the page: on a visitor's first page that came after the server had built the chart, queued behind the sidebar
widgets' own chunks (0.6 s between the chart's message and its code, then 0.45 s to draw). A hidden, data-less chart
sent as the run's first element starts that fetch at once; the run's end takes it out again.
"""

from __future__ import annotations

import streamlit as st

KEY = "seqviz_chart_code"
# Hidden with its element's box (no gap in the sidebar); React still mounts the chart, which is the point.
CSS = f"""<style>[data-testid="stElementContainer"]:has(.st-key-{KEY}), .st-key-{KEY} {{display: none !important;}}
</style>"""
SPEC = {"mark": "point", "width": 1, "height": 1}  # no data: nothing for Streamlit to convert (no pandas yet)


def chart_code_early():
    """At a session's first run, the hidden chart; returns the call that takes it out (a no-op after)."""
    if st.session_state.get(KEY):
        return lambda: None
    st.session_state[KEY] = True
    slot = st.sidebar.empty()
    with slot.container(key=KEY):
        st.html(CSS)
        st.vega_lite_chart(SPEC)
    return slot.empty
