"""The sidebar picker tells the truth: the box shows the model in use on every visit, and a
choice made on one page is the one the next page of the same kind shows (issue 14).

Reported: "The sidebar box says shakespeare-char-gru while the caption says Using
shakespeare-char-lstm; on Attention it says dates-attention-gru while the page uses
zh-en-attention-gru. It happens on alternate visits." Streamlit resets a keyed widget to its
default on a page switch while its key stays in st.session_state, so the old
``if key not in st.session_state`` restore never ran on a direct switch between two pages
that both draw the picker. These tests switch pages the way a visitor does and compare the
box with the "Using **<name>**" caption after every run.
"""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from appkit.cache import list_checkpoints
from appkit.registry import PAGES, PageSpec
from appkit.sidebar import NO_SHIPPED, widget_key
from tests.app.test_pages import APP

USING = re.compile(r"Using \*\*(.+?)\*\* \((.+?)\)\.")


def pages_of(model_type: str) -> list[PageSpec]:
    return [p for p in PAGES if p.model_type == model_type and p.exists]


def start(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    if query:
        at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    return at


def visit(at: AppTest, page: PageSpec) -> AppTest:
    at.switch_page(f"pages/{page.path}")
    at.run()
    assert not at.exception, f"{page.path}: {at.exception}"
    return at


def in_use(at: AppTest) -> tuple[str, str]:
    """(label, source) from the sidebar's "Using **label** (source)." caption."""
    found = [m.groups() for c in at.sidebar.caption if (m := USING.search(c.value))]
    assert len(found) == 1, [c.value for c in at.sidebar.caption]
    return found[0]


def box(at: AppTest):
    boxes = [s for s in at.sidebar.selectbox if s.label == "Shipped checkpoint"]
    assert len(boxes) == 1, [s.label for s in at.sidebar.selectbox]
    return boxes[0]


def assert_truthful(at: AppTest, page: PageSpec, expected: str | None = None) -> str:
    """The box shows the shipped model the caption says is in use (and, if given, ``expected``)."""
    label, source = in_use(at)
    assert source == "shipped", (page.path, label, source)
    assert box(at).value == label, f"{page.path}: the box says {box(at).value!r}, the page uses {label!r}"
    if expected is not None:
        assert label == expected, (page.path, label)
    return label


def test_a_choice_follows_every_recurrent_page_on_every_visit(tiny_only):
    lm_pages = pages_of("recurrent_lm")
    assert len(lm_pages) >= 2
    zoo = next(p for p in PAGES if p.default)
    at = visit(start(), lm_pages[0])
    first = assert_truthful(at, lm_pages[0])
    assert first == "tiny-gru"  # the first shipped one, before any choice
    box(at).select("tiny-lstm").run()
    assert not at.exception
    assert_truthful(at, lm_pages[0], "tiny-lstm")
    # direct switches between picker pages (where the box went back to tiny-gru), a page without
    # a picker in between (where it came back), and each page more than once
    tour = [*lm_pages[1:], lm_pages[0], zoo, lm_pages[1], lm_pages[0], lm_pages[1], lm_pages[-1]]
    for page in tour:
        visit(at, page)
        if page.model_type:
            assert_truthful(at, page, "tiny-lstm")
    # a choice made on another page is the one the first page shows next
    box(at).select("tiny-rnn").run()
    assert_truthful(at, lm_pages[-1], "tiny-rnn")
    for page in (lm_pages[0], lm_pages[1], lm_pages[0]):
        assert_truthful(visit(at, page), page, "tiny-rnn")


def test_picking_the_name_the_box_shows_on_arrival_is_never_needed(tiny_only):
    lm, other = pages_of("recurrent_lm")[:2]
    at = visit(start(), lm)
    box(at).select("tiny-lstm").run()
    visit(at, other)
    # Before the fix the box showed tiny-gru here, so picking tiny-gru changed nothing ("re-selecting
    # the shown name does nothing"); now tiny-lstm is shown and picking tiny-gru is a real change.
    box(at).select("tiny-gru").run()
    assert_truthful(at, other, "tiny-gru")
    box(at).select("tiny-gru").run()  # the name shown: nothing changes
    assert_truthful(at, other, "tiny-gru")
    assert_truthful(visit(at, lm), lm, "tiny-gru")


@pytest.mark.skipif(len(list_checkpoints("seq2seq")) < 2, reason="needs two shipped seq2seq checkpoints")
def test_a_model_named_in_the_url_is_the_one_the_box_shows_on_every_seq2seq_page(shipped_plus_tiny):
    names = [c.name for c in list_checkpoints("seq2seq")]
    wanted = "zh-en-attention-gru" if "zh-en-attention-gru" in names else names[1]
    assert wanted != names[0]  # the box's default would be names[0]: the reported lie
    attention = next(p for p in PAGES if p.path == "attention.py")
    assert attention.exists
    at = start()
    at.query_params["seq2seq"] = wanted
    visit(at, attention)
    assert_truthful(at, attention, wanted)
    zoo = next(p for p in PAGES if p.default)
    others = [p for p in pages_of("seq2seq") if p is not attention]
    for page in (*others, attention, zoo, attention, *others, attention):
        visit(at, page)
        if page.model_type:
            assert_truthful(at, page, wanted)


def test_a_name_in_the_url_that_is_not_offered_is_clamped(tiny_only):
    lm = pages_of("recurrent_lm")[0]
    at = start()
    at.query_params["recurrent_lm"] = "no-such-model"
    visit(at, lm)
    assert not at.error, [e.value for e in at.error]
    assert_truthful(at, lm, "tiny-gru")
    assert box(at).options == ["tiny-gru", "tiny-lstm", "tiny-rnn"]


def test_a_typed_folder_is_shown_on_the_next_page_and_the_box_never_names_another_model(tiny_only, monkeypatch):
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(tiny_only))
    lm, other = pages_of("recurrent_lm")[:2]
    at = visit(start(), lm)
    at.sidebar.radio(key=widget_key("recurrent_lm", "source", "language_model")).set_value("Local folder").run()
    folder = str(tiny_only / "tiny-rnn")
    at.sidebar.text_input(key=widget_key("recurrent_lm", "folder", "language_model")).input(folder).run()
    assert in_use(at) == ("tiny-rnn", "local folder")
    for page in (other, lm, other):
        visit(at, page)
        assert in_use(at) == ("tiny-rnn", "local folder"), page.path
        assert at.sidebar.radio[0].value == "Local folder"
        assert at.sidebar.text_input[0].value == folder
    # the Shipped tab does not pretend a shipped model is in use
    at.sidebar.radio[0].set_value("Shipped").run()
    assert box(at).value is None and box(at).placeholder == NO_SHIPPED
    assert in_use(at) == ("tiny-rnn", "local folder")
    box(at).select("tiny-gru").run()  # the first option: a real change, not swallowed
    assert_truthful(at, other, "tiny-gru")
    assert_truthful(visit(at, lm), lm, "tiny-gru")
    assert at.sidebar.radio[0].value == "Shipped"


def test_widget_keys_are_per_page(tiny_only):
    lm, other = pages_of("recurrent_lm")[:2]
    at = visit(start(), lm)
    assert box(at).key == f"picker.{lm.url_path}.recurrent_lm.shipped"
    visit(at, other)
    assert box(at).key == f"picker.{other.url_path}.recurrent_lm.shipped"
    assert at.sidebar.radio[0].key == f"picker.{other.url_path}.recurrent_lm.source"


def test_a_shipped_models_page_ends_its_run_with_its_charts_and_loads_the_model_behind(monkeypatch):
    """The Gates page's first views ship: the run hands the model to the background worker instead of loading it
    (torch's import would hold the run 2-3 s after its charts), and the sidebar's "Found" line, now read from the
    folder's config, is word for word the one the loaded model's describe() gives."""
    from appkit import cache as models
    from appkit.sidebar import found_text
    import seqviz

    handed = []
    monkeypatch.setattr(models, "complete", lambda fn, *args: handed.append((fn, *args)))
    at = start()
    visit(at, next(p for p in PAGES if p.path == "gates.py"))
    label, _source = in_use(at)
    loads = [args[0] for fn, *args in handed if fn is models.model]
    assert [ref.label for ref in loads] == [label], handed
    path = next(c.path for c in list_checkpoints("recurrent_lm") if c.name == label)
    sizes = seqviz.load(path).describe()
    detail = f": {sizes['layers']}-layer {sizes['cell'].upper()}, hidden {sizes['hidden']}, {sizes['vocab_size']:,} tokens."
    found = [c.value for c in at.sidebar.caption if c.value.startswith("Found ")]
    assert len(found) == 1 and found[0].endswith(detail), (found, detail)
    assert found_text(loads[0]) == found[0]
