"""中文 where Streamlit cannot translate (issue 51): each file uploader has our caption in the visitor's language
under it, saying what Streamlit's own words on it say; the loaders' commonest problem reads in Chinese."""

from __future__ import annotations

import re

import pytest

from appkit.registry import PAGES
from seqviz.files import CheckpointError
from seqviz.text import error_lead, in_language
from tests.i18n.test_pages_zh import open_zh

HINT = re.compile(r"拖到上方.*“Upload”.*最多 \d+ MB")


def in_order(node) -> list:
    """Every element under ``node``, in the order drawn."""
    out = []
    for child in getattr(node, "children", {}).values():
        if getattr(child, "type", None) not in (None, "vertical", "horizontal", "column", "columns"):
            out.append(child)
        out += in_order(child)
    return out


def uploaders_with_hints(at) -> list[tuple[str, str]]:
    """(uploader label, the caption drawn right after it) of every file uploader on the page and sidebar."""
    pairs = []
    for area in (at.main, at.sidebar):
        drawn = in_order(area)
        for i, e in enumerate(drawn):
            if e.type == "file_uploader":
                after = next((d for d in drawn[i + 1:] if d.type in ("caption", "markdown")), None)
                pairs.append((e.label, getattr(after, "value", "")))
    return pairs


@pytest.mark.parametrize("path", ["decoding.py", "word2vec.py"])
def test_every_uploader_has_a_chinese_hint_under_it(path, shipped_plus_tiny):
    at = open_zh(next(p for p in PAGES if p.path == path))
    assert not at.exception, at.exception
    found = uploaders_with_hints(at)
    assert found, f"{path}: no uploader"
    for label, hint in found:
        assert HINT.search(hint), (label, hint)


def test_english_pages_get_no_hint(shipped_plus_tiny):
    from tests.app.test_pages import open_page

    at = open_page(next(p for p in PAGES if p.path == "decoding.py"))
    assert not any(HINT.search(c.value) or "Drag a file" in c.value for c in at.caption)


def test_the_loaders_no_such_file_reads_in_chinese():
    with in_language("zh"):
        shown = error_lead(CheckpointError("models/none", "no such file or folder"))
        here = error_lead(CheckpointError("none", "no such file or folder here"))
    assert "no such" not in shown and "没有这个文件或文件夹" in shown and "models/none" in shown
    assert "no such" not in here and "此处" in here
