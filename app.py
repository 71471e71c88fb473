"""seqviz's entry point: page config, the navigation built from appkit.registry.PAGES, and the run.

Start it with ``streamlit run app.py``. Pages live in ``pages/``; to add one, append a line to
``PAGES`` in ``appkit/registry.py`` (see its docstring).
"""

import streamlit as st


def run() -> None:
    """A visitor's run: the page config, the language, the navigation and the chosen page."""
    from appkit.draw import PAGE_CSS
    from appkit.i18n import _, language_switch  # the library's _ follows the visitor's language from now on
    from appkit.lessons import quiet_page_not_found, route
    from appkit.preload import chart_code_early
    from appkit.registry import by_section
    from seqviz import background
    from seqviz.views.spec import enable_cjk_theme, fast_altair

    st.set_page_config(page_title="seqviz", page_icon=":material/insights:", layout="wide")
    chart_code_done = chart_code_early()  # the browser fetches its chart code while this first run computes
    language_switch()  # before the navigation: its titles and every page follow the chosen language
    enable_cjk_theme()
    st.html(PAGE_CSS)
    fast_altair()

    sections = {
        _(section): [st.Page(f"pages/{p.path}", title=_(p.title), icon=p.icon, url_path=p.url_path,
                             default=p.default) for p in pages]
        for section, pages in by_section().items()
    }
    if not sections:
        st.error(_("No pages found under pages/."))
        st.stop()
    # A run never compiles a page while the warm-up imports torch: that import parses Python sources
    # (torch._sources), and CPython 3.11 shares its AST state between threads, so a page compiled meanwhile
    # could fail with "AST constructor recursion depth mismatch" (seen in 1 of 10 scripted runs of every page).
    background.warmed()
    background.cancel_pending()  # what earlier runs queued and has not started is superseded by this run
    quiet_page_not_found()  # an unknown address: route() says so in the visitor's language
    try:
        page = st.navigation(sections, position="sidebar", expanded=True)
        route(page, [p for pages in sections.values() for p in pages])  # /?lesson=... opens the lesson
        page.run()
    finally:  # also after st.stop(): give the run's freed tensors back to the OS (see seqviz/background.py)
        chart_code_done()
        background.release_freed_memory()
        # Once per process, after the first run: torch & co. for the next model page, while the visitor reads
        # this one (the next run waits for what is left of it, above).
        background.warm_up()


if __name__ == "__main__":  # a visitor's run: Streamlit runs this file as __main__
    run()
else:  # imported once, when the server starts: `streamlit run app.py` serves this st.App (see appkit/startup.py)
    from starlette.middleware import Middleware

    from appkit.startup import lifespan
    from seqviz.background import Serving

    # Serving: background work for a visitor's next move waits until the page's own requests are answered.
    app = st.App(__file__, lifespan=lifespan, middleware=[Middleware(Serving)])
