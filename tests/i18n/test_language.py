"""Choosing the language: ?lang= in the URL, the sidebar switch, the browser's language, English."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from appkit import i18n
from appkit.i18n import error_lead, language
from seqviz.text import normalize

SCRIPT = """
import streamlit as st
from appkit.i18n import _, current_language, language_switch

language_switch()
st.title(_("gate"))
st.caption(current_language())
"""


def run(query: dict | None = None) -> AppTest:
    at = AppTest.from_string(SCRIPT, default_timeout=30)
    if query:
        at.query_params.update(query)
    return at.run()


def switch(at: AppTest):
    return at.sidebar.segmented_control[0]


@pytest.mark.parametrize("tag, code", [("zh", "zh"), ("zh-CN", "zh"), ("zh_Hans_CN", "zh"), ("en-US", "en"),
                                       ("EN", "en"), ("fr-FR", None), ("", None), (None, None)])
def test_normalize(tag, code):
    assert normalize(tag) == code


def test_apptest_has_no_browser_locale_so_english():
    at = run()
    assert not at.exception, at.exception
    assert at.title[0].value == "gate" and at.caption[0].value == "en"
    assert "lang" not in at.query_params  # an English default leaves the URL alone
    assert switch(at).value == "en" and switch(at).label == "Language"


def test_url_chooses_chinese_and_stays_in_the_url():
    at = run({"lang": "zh"})
    assert not at.exception, at.exception
    assert at.title[0].value == "门" and switch(at).label == "语言" and switch(at).value == "zh"
    assert at.query_params["lang"] == ["zh"] or at.query_params["lang"] == "zh"
    at.query_params.pop("lang")  # as after a page switch: the session remembers, the URL gets it back
    at.run()
    assert at.title[0].value == "门"
    assert "zh" in str(at.query_params["lang"])


def test_switch_changes_language_and_url():
    at = run()
    switch(at).set_value("zh").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "门" and "zh" in str(at.query_params["lang"])
    switch(at).set_value("en").run()
    assert at.title[0].value == "gate" and "en" in str(at.query_params["lang"])  # chosen: kept in links


def test_unknown_language_in_url_falls_back():
    at = run({"lang": "fr"})
    assert not at.exception and at.title[0].value == "gate"


def test_browser_language_is_the_default(monkeypatch):
    monkeypatch.setattr(i18n, "browser_language", lambda: "zh")
    at = run()
    assert at.title[0].value == "门" and "zh" in str(at.query_params["lang"])
    at = run({"lang": "en"})
    assert at.title[0].value == "gate"  # the URL beats the browser


def test_error_lead_translates_the_lead_and_keeps_the_library_message():
    from seqviz.files import CheckpointError

    error = CheckpointError("ck/config.json", "file is missing")
    assert error_lead(error) == "Could not load this checkpoint: ck/config.json: file is missing"
    with language("zh"):
        assert error_lead(error) == "无法加载该检查点：ck/config.json: file is missing"
        assert error_lead(FileNotFoundError("x")).startswith("无法读取该文件：")
        assert error_lead(RuntimeError("boom")) == "出错了：boom"
    with pytest.raises(ValueError):
        with language("fr"):
            pass
