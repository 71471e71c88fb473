"""App-only helpers for seqviz's Streamlit pages (the library in seqviz/ never imports Streamlit).

Importing this package also fixes one Streamlit quirk, once per server process: while no
session has yet run ``app.py`` (which calls ``st.navigation``), Streamlit treats the
``pages/`` folder the old (v1) way, so a cold server opened straight at ``/language_model``
would run that page alone, without app.py's layout and navigation. Every page imports
appkit, so the first such run switches the process to st.navigation and reruns, which then
goes through app.py and lands on the requested page.
"""

import streamlit as st


def _leave_pages_folder_mode() -> None:
    try:
        from streamlit.runtime.pages_manager import PagesManager  # private API: no-op if it moves
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:
        return
    if getattr(PagesManager, "uses_pages_directory", False) and get_script_run_ctx() is not None:
        PagesManager.uses_pages_directory = False  # what st.navigation itself sets
        st.rerun()


_leave_pages_folder_mode()
