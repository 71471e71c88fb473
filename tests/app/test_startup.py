"""The server imports what its pages need when it starts (appkit/startup.py), not during its first visitor's run.

``streamlit run app.py`` serves the ``st.App`` that app.py defines when imported as a module; a visitor's run
(app.py as ``__main__``) draws the pages as before.
"""

from __future__ import annotations

import importlib.util
import os
import signal
from pathlib import Path

from seqviz.background import imported_by
from tests.conftest import ROOT


def test_imported_by_lists_a_scripts_modules_in_order(tmp_path):
    script = tmp_path / "page.py"
    script.write_text("import os\nimport a.b as ab, c\nfrom d.e import f\nfrom . import g\n"
                      "def later():\n    import h\n    from i import j\n")
    assert imported_by(script) == ["os", "a.b", "c", "d.e"]  # a relative import names no module to warm
    assert imported_by(script, anywhere=True) == ["os", "a.b", "c", "d.e", "h", "i"]


def test_every_module_a_page_imports_is_warmed():
    pages = sorted((ROOT / "pages").glob("*.py"))
    names = {n for p in pages for n in imported_by(p)}
    assert {"appkit.cache", "seqviz.views.gates", "pandas"} <= names  # what the gate and word pages import first


def test_app_py_imported_as_a_module_is_the_server_and_runs_no_page():
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(ROOT / "app.py")
    assert found.is_asgi_app and found.app_name == "app", found
    spec = importlib.util.spec_from_file_location("seqviz_app_module", ROOT / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # no page config, no navigation: those are a visitor's run
    import streamlit as st

    assert isinstance(module.app, st.App)
    assert Path(module.app._resolve_script_path()) == ROOT / "app.py"


def _mapped(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


def test_a_started_server_has_imported_torch_before_its_first_visitor():
    """Once /_stcore/health answers, the server process has torch's library mapped and no session has run."""
    from tests.browser.driver import free_port, start_server, stop_server

    env = {k: v for k, v in os.environ.items() if not k.startswith("SEQVIZ_") or k == "SEQVIZ_DATA"}
    server = start_server(env, free_port())
    try:
        assert "libtorch_cpu" in _mapped(server.pid)
    finally:
        stop_server(server)  # SIGTERM: uvicorn shuts down gracefully, then ends the process by the signal
    said = server.stdout.read().decode(errors="replace")
    assert server.returncode == -signal.SIGTERM, (server.returncode, said[-2000:])
    assert "Traceback" not in said and "terminate called" not in said, said[-2000:]


def test_warm_parses_every_language_s_catalogue(monkeypatch):
    """A first Chinese visit's run does not parse the catalogue (it took a quarter of that run's first second)."""
    from appkit import startup
    from seqviz import text

    monkeypatch.setattr(text, "_catalogues", {})
    startup.warm()
    assert set(text._catalogues) == set(text.LANGUAGES)
    assert text._catalogues["zh"].gettext("Gate activations per token") != "Gate activations per token"
