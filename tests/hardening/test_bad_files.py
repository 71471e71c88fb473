"""Every bad file in tests/hardening/cases.py: refused by the library, the command line and the app.

For each case: the library raises ``CheckpointError`` with the case's message (never a raw
KeyError, UnicodeDecodeError, MemoryError ...), no code in the file ran, ``python -m seqviz
inspect`` exits 2 with one line, and in the app (AppTest) the picker shows one ``st.error``
with the same message, raises nothing, and the page works again on a shipped checkpoint.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from seqviz.checkpoints import CheckpointError, allowed_dirs, check_allowed
from seqviz.cli import main as cli
from tests.conftest import ROOT
from tests.hardening.cases import CASES, build, good_folder, open_case, oversize_bytes

IDS = [c.name for c in CASES]
BY_NAME = {c.name: c for c in CASES}
SUBPROCESS = ("pickled-code-pt", "zip-bomb", "path-outside-allowed")  # the rest run in-process (fast)


@pytest.fixture
def allowed(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(tmp_path / "allowed"))
    return tmp_path / "allowed"


def test_the_table_covers_the_issue():
    assert len(CASES) >= 15 and len(set(IDS)) == len(IDS)
    assert {c.route for c in CASES} == {"folder", "upload", "vectors"}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_library_refuses_with_one_clear_message(case, tmp_path, allowed):
    built = build(case, tmp_path)
    t0 = time.perf_counter()
    with pytest.raises(CheckpointError) as err:  # any other exception type escapes and fails the test
        open_case(case, built, tmp_path)
    assert case.message in str(err.value), str(err.value)
    assert "\n" not in str(err.value) and str(err.value).isprintable(), repr(str(err.value))
    assert time.perf_counter() - t0 < 10, "refusing must not first read or allocate what the file claims"
    if built.marker is not None:
        assert not built.marker.exists(), f"{built.marker} exists: the file's code ran"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_inspect_exits_2_with_one_line(case, tmp_path, allowed, capsys):
    built = build(case, tmp_path)
    assert cli(["inspect", str(built.path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: "), err
    assert (case.cli_message or case.message) in err, err
    assert err.isprintable() or err[:-1].isprintable(), repr(err)  # no terminal escapes echoed
    if built.marker is not None:
        assert not built.marker.exists()


@pytest.mark.parametrize("name", SUBPROCESS)
def test_inspect_as_a_separate_process(name, tmp_path, allowed):
    case = BY_NAME[name]
    built = build(case, tmp_path)
    env = dict(os.environ, SEQVIZ_ALLOWED_DIRS=str(allowed), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "seqviz", "inspect", str(built.path)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert case.message in proc.stderr and "Traceback" not in proc.stderr
    if built.marker is not None:
        assert not built.marker.exists()


# ------------------------------------------------------------------ the allowed-folder rule itself
def test_allowed_dirs_default_and_override(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQVIZ_ALLOWED_DIRS", raising=False)
    monkeypatch.chdir(tmp_path)
    # The home folder is never a default (it holds ~/.netrc, secrets.toml, the Hub token): issue 20.
    assert allowed_dirs(["/srv/ck"]) == [Path("/srv/ck").resolve(), tmp_path.resolve()]
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")]))
    assert allowed_dirs() == [(tmp_path / "a").resolve(), (tmp_path / "b").resolve()]


def test_escapes_through_dots_and_links_are_refused(tmp_path, monkeypatch):
    inside = tmp_path / "inside"
    folder = good_folder(inside / "ck")
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(inside))
    assert check_allowed(folder) == folder.resolve()
    (inside / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    for sneaky in (inside / ".." / "outside", inside / "link" / "ck", Path("/etc"), inside.parent):
        with pytest.raises(CheckpointError, match="outside the folders this app may open"):
            check_allowed(sneaky)
    assert check_allowed(tmp_path / "outside", extra=[tmp_path / "outside"])  # checkpoint roots: always


def test_a_model_type_that_is_not_a_string_gets_a_message(tmp_path):
    """Found by the config fuzzing: ``{"model_type": [...]}`` crashed seqviz.load with a TypeError."""
    from seqviz.registry import load

    folder = good_folder(tmp_path / "ck")
    (folder / "config.json").write_text('{"model_type": ["recurrent_lm"]}')
    with pytest.raises(CheckpointError, match=r"config.json: model_type must be a string$"):
        load(folder)


# ------------------------------------------------------------------ the app: one message, and it keeps working
@pytest.fixture(scope="module")
def app_env(hardening_root, tmp_path_factory):
    """Tiny LMs (fast) and the shipped word2vec vectors (for the vector-file cases)."""
    mp = pytest.MonkeyPatch()
    allowed = tmp_path_factory.mktemp("app-cases") / "allowed"
    mp.setenv("SEQVIZ_CHECKPOINTS", str(hardening_root))
    mp.setenv("SEQVIZ_ALLOWED_DIRS", str(allowed))
    st.cache_data.clear()
    st.cache_resource.clear()
    yield allowed.parent
    mp.undo()


@pytest.fixture(scope="module")
def lm_app(app_env):
    """One visitor's session on the language-model page, reused by every checkpoint case."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/language_model.py").run()
    assert not at.exception and at.metric, at.exception
    return at


@pytest.fixture(scope="module")
def w2v_app(app_env):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/word2vec.py").run()
    assert not at.exception, at.exception
    return at


def errors(at) -> list[str]:
    return [e.value for e in at.error]


def source(at, name: str):
    radio = at.sidebar.radio[0]
    assert radio.label == "Source"
    if radio.value != name:
        radio.set_value(name).run()
    return at


def works_on_a_shipped_checkpoint(at, name: str = "tiny-lstm") -> None:
    source(at, "Shipped")
    at.sidebar.selectbox[0].select(name).run()
    assert not at.exception and not at.error, errors(at)
    assert any(name in c.value for c in at.sidebar.caption) and at.metric


@pytest.mark.parametrize("case", [c for c in CASES if c.route != "vectors"], ids=lambda c: c.name)
def test_app_shows_one_message_and_keeps_working(case, lm_app, app_env, tmp_path):
    at = lm_app
    built = build(case, app_env if case.name != "path-outside-allowed" else tmp_path)
    if case.route == "folder":
        source(at, "Local folder")
        at.sidebar.text_input[0].input(str(built.path)).run()
    else:
        files = built.files or [(built.path.name, oversize_bytes())]
        source(at, "Upload")
        at.sidebar.file_uploader[0].set_value([(n, d, "application/octet-stream") for n, d in files]).run()
        at.sidebar.file_uploader[0].clear()
    assert not at.exception, at.exception
    shown = errors(at)
    assert len(shown) == 1 and case.message in shown[0], shown
    assert shown[0].startswith(("Could not use that checkpoint: ", "Could not load ")), shown[0]
    assert at.metric, "the page keeps working on the previous or a shipped checkpoint"
    if built.marker is not None:
        assert not built.marker.exists()
    works_on_a_shipped_checkpoint(at)


@pytest.mark.parametrize("case", [c for c in CASES if c.route == "vectors"], ids=lambda c: c.name)
def test_word2vec_page_refuses_bad_vector_files(case, w2v_app, app_env):
    at = w2v_app
    built = build(case, app_env)
    name, data = built.files[0]
    at.file_uploader(key="w2v_file").set_value((name, data, "application/octet-stream")).run()
    assert not at.exception, at.exception
    shown = errors(at)
    assert len(shown) == 1 and shown[0].startswith("Could not read that vector file: "), shown
    assert case.message in shown[0], shown[0]
    assert at.metric and any("word2vec-shakespeare" in c.value for c in at.sidebar.caption)  # still working
    if built.marker is not None:
        assert not built.marker.exists()
    at.file_uploader(key="w2v_file").clear().run()
    assert not at.exception and not at.error
