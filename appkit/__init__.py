"""App-only helpers for seqviz's Streamlit pages (the library in seqviz/ never imports Streamlit).

Importing this package also fixes one Streamlit quirk, once per server process: while no session has yet run
``app.py`` (which calls ``st.navigation``), Streamlit treats the ``pages/`` folder the old (v1) way, so a cold server
opened straight at ``/language_model`` would run that page alone, without app.py's layout and navigation. Every page
imports appkit, so the first such run switches the process to st.navigation and reruns, through app.py, onto the page.
"""

import streamlit as st


def leave_pages_folder_mode() -> bool:
    """Switch the process to st.navigation's mode (what st.navigation itself sets); whether it was in the old one.
    Also called when the server starts (appkit/startup.py), before any session."""
    try:
        from streamlit.runtime.pages_manager import PagesManager  # private API: no-op if it moves
    except ImportError:
        return False
    was = bool(getattr(PagesManager, "uses_pages_directory", False))
    PagesManager.uses_pages_directory = False
    return was


def _leave_pages_folder_mode_in_a_run() -> None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    if get_script_run_ctx(suppress_warning=True) is not None and leave_pages_folder_mode():
        st.rerun()  # the page ran alone: again, through app.py's navigation


_leave_pages_folder_mode_in_a_run()
