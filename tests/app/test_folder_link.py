"""A model opened from a local folder is kept in the URL (issue 51): a copied link reopens that folder, and a link
to a folder the server may not open, or that is gone, opens the page's default model with a sentence in the
visitor's language (``appkit.folder_link``)."""

from __future__ import annotations

import os
import shutil

import pytest

from appkit import folder_link
from seqviz import refs
from appkit.registry import PAGES
from appkit.sidebar import widget_key
from seqviz.text import gettext_in
from tests.app.test_links import open_link
from tests.app.test_pages import open_clean
from tests.app.test_picker_truth import in_use
from tests.conftest import ROOT, build_tiny_lm, tiny_card

# One page of each kind, and the folder each opens: (page, model_type, a checkpoint copied into the allowed folder)
KINDS = [("language_model.py", "recurrent_lm", None), ("attention.py", "seq2seq", "dates-attention-gru"),
         ("word2vec.py", "word2vec", "word2vec-shakespeare-cbow")]


@pytest.fixture
def work(tmp_path, tiny_lm_dir, monkeypatch):
    """An allowed working folder holding my-lstm (a tiny LSTM unlike the shipped tiny ones) and copies of a shipped
    seq2seq and word2vec checkpoint; the app's checkpoints are the tiny LMs and the repository's others."""
    work = tmp_path / "work"
    model = build_tiny_lm("lstm", seed=7)
    model.save_pretrained(work / "my-lstm", tiny_card(model, "my-lstm"))
    for _page, _kind, name in KINDS[1:]:
        shutil.copytree(ROOT / "checkpoints" / name, work / f"my-{name}")
    shipped = [ROOT / "checkpoints" / n for n in ("zh-en-attention-gru", "word2vec-shakespeare")]
    roots = tmp_path / "roots"
    for folder in shipped:
        shutil.copytree(folder, roots / folder.name)
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", os.pathsep.join([str(tiny_lm_dir), str(roots)]))
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(work))
    return work


def typed(page_path: str, model_type: str, folder) -> object:
    """``page_path`` with ``folder`` typed into its picker's Local folder box."""
    page = next(p for p in PAGES if p.path == page_path)
    at = open_clean(page)
    stem = page_path[:-3]
    at.sidebar.radio(key=widget_key(model_type, "source", stem)).set_value("Local folder").run()
    at.sidebar.text_input(key=widget_key(model_type, "folder", stem)).input(str(folder)).run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    return at


def sidebar(at) -> list[str]:
    return [c.value for c in at.sidebar.caption]


def shown(at) -> list[str]:
    """The main area's numbers and texts a model decides (metrics, markdown), to compare two openings."""
    return [f"{m.label}={m.value}" for m in at.main.metric] + [m.value for m in at.main.markdown]


@pytest.mark.parametrize("page_path, model_type, copied", KINDS, ids=[k[0] for k in KINDS])
def test_a_copied_link_reopens_the_local_folder(page_path, model_type, copied, work):
    folder = work / (f"my-{copied}" if copied else "my-lstm")
    at = typed(page_path, model_type, folder)
    assert in_use(at) == (folder.name, "local folder")
    link = dict(at.query_params)
    assert link[folder_link.param(model_type)] == str(folder)
    again = open_link(page_path, link)  # a new visitor, with the copied URL's parameters only
    assert in_use(again) == (folder.name, "local folder")
    assert shown(again) == shown(at)  # the same model's numbers
    assert again.sidebar.text_input(key=widget_key(model_type, "folder", page_path[:-3])).value == str(folder)
    assert not again.warning, [w.value for w in again.warning]


def test_a_shipped_choice_after_a_folder_drops_the_folder_from_the_url(work):
    at = typed("language_model.py", "recurrent_lm", work / "my-lstm")
    at.sidebar.radio(key=widget_key("recurrent_lm", "source", "language_model")).set_value("Shipped").run()
    at.sidebar.selectbox(key=widget_key("recurrent_lm", "shipped", "language_model")).select("tiny-rnn").run()
    assert in_use(at) == ("tiny-rnn", "shipped")
    assert folder_link.param("recurrent_lm") not in at.query_params and at.query_params["recurrent_lm"] == "tiny-rnn"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("case", ["outside", "gone", "hidden", "off", "wrong kind"])
def test_a_link_to_a_folder_it_cannot_open_shows_the_default_and_says_why(case, lang, work, tmp_path, monkeypatch):
    outside = tmp_path / "elsewhere"
    shutil.copytree(work / "my-lstm", outside / "my-lstm")
    shutil.copytree(work / "my-lstm", work / ".hidden" / "my-lstm")
    folder, sentence = {"outside": (outside / "my-lstm", refs.NOT_ALLOWED),
                        "gone": (work / "deleted-since", refs.GONE),
                        "hidden": (work / ".hidden" / "my-lstm", refs.NOT_ALLOWED),
                        "off": (work / "my-lstm", refs.NOT_ALLOWED),
                        "wrong kind": (work / "my-word2vec-shakespeare-cbow", refs.UNUSABLE)}[case]
    if case == "off":
        monkeypatch.setenv("SEQVIZ_LOCAL_PATHS", "0")
    default = open_link("language_model.py", {"lang": lang})
    at = open_link("language_model.py", {"lang": lang, folder_link.param("recurrent_lm"): str(folder)})
    assert sidebar(at) == sidebar(default)  # "Using ...": the page's own default, not the folder
    said = [w.value for w in at.warning]
    lead = gettext_in(lang, sentence).split("{path}")[0]
    assert any(w.startswith(lead) and str(folder) in w for w in said), said
    assert folder_link.param("recurrent_lm") not in at.query_params  # a copied link no longer names it
    if lang == "zh":
        assert lead != gettext_in("en", sentence).split("{path}")[0], "no translation: this case could not fail"


@pytest.mark.parametrize("page", [p for p in PAGES if p.model_type and p.exists], ids=lambda p: p.path)
def test_every_page_with_a_picker_opens_the_linked_folder(page, work):
    """The picker is one (appkit.sidebar): a link naming a folder of the page's kind opens it on every such page."""
    folder = {"recurrent_lm": work / "my-lstm", **{kind: work / f"my-{name}" for _p, kind, name in KINDS[1:]}}
    at = open_link(page.path, {folder_link.param(page.model_type): str(folder[page.model_type])})
    assert in_use(at) == (folder[page.model_type].name, "local folder")
