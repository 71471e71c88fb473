"""Charts in Chinese: translated titles (localize_chart) and a CJK-capable font stack (the Altair theme)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from appkit.i18n import language, localize_chart
from seqviz.views.spec import CJK_FONT_STACK, THEME, cjk_theme, enable_cjk_theme
from seqviz.export import CJK_FAMILIES
from tests.i18n.completeness import chart_texts


def _chart():
    frame = pd.DataFrame({"step": [0, 1], "loss": [2.0, 1.0], "model": ["a", "b"]})
    line = alt.Chart(frame).mark_line().encode(
        x=alt.X("step:Q", title="training step"), y=alt.Y("loss:Q", title="loss (nats/token)"),
        color=alt.Color("model:N", title="model"), tooltip=[alt.Tooltip("loss:Q", title="token")])
    return alt.vconcat(line, line.properties(title="Mean gate value at each token"))


def test_localize_chart_translates_titles_only_in_chinese():
    chart = _chart()
    assert localize_chart(chart) is chart  # English: untouched
    with language("zh"):
        spec = localize_chart(chart).to_dict()
    assert sorted(set(chart_texts(spec))) == sorted({"训练步数", "损失（奈特/词元）", "模型", "词元",
                                                     "每个词元处各门的均值"})
    assert "training step" in chart_texts(chart.to_dict())  # the original is not changed
    assert spec["datasets"] == chart.to_dict()["datasets"]  # data values (tokens, names) are left alone


def test_library_chart_titles_are_translated():
    from seqviz.charts.language import training_curves

    chart = training_curves([{"step": 1, "train_loss": 3.0, "val_loss": 3.2}, {"step": 2, "train_loss": 2.0}])
    with language("zh"):
        titles = chart_texts(localize_chart(chart).to_dict())
    assert "训练步数" in titles and "损失（奈特/词元）" in titles


def test_font_stack_reuses_the_export_families_and_ends_generic():
    assert all(f'"{f}"' in CJK_FONT_STACK for f in CJK_FAMILIES)
    assert CJK_FONT_STACK.endswith("sans-serif") and "Microsoft YaHei" in CJK_FONT_STACK
    assert cjk_theme() == {"config": {"font": CJK_FONT_STACK}}


def test_theme_puts_the_stack_into_every_chart():
    before = alt.theme.active
    try:
        enable_cjk_theme()
        enable_cjk_theme()  # idempotent
        assert alt.theme.active == THEME
        assert _chart().to_dict()["config"]["font"] == CJK_FONT_STACK
    finally:
        alt.theme.enable(before)


def test_an_empty_title_stays_empty_in_chinese():
    """gettext("") is the catalogue's header: the 3-D trajectory's untitled first half showed "Project-Id-Version:
    seqviz ..." as its title in 中文 (in the shipped results too)."""
    from seqviz.text import catalogue
    from seqviz.views.spec import translate_titles

    spec = {"title": "", "hconcat": [{"title": ""}, {"title": {"text": "", "subtitle": "model"}}],
            "encoding": {"x": {"title": ""}}}
    translate_titles(spec, catalogue("zh").gettext)
    assert spec == {"title": "", "hconcat": [{"title": ""}, {"title": {"text": "", "subtitle": "模型"}}],
                    "encoding": {"x": {"title": ""}}}
    chart = alt.hconcat(_chart().vconcat[0].properties(title=""), _chart().vconcat[1])
    with language("zh"):
        shown = localize_chart(chart).to_dict()
    assert "Project-Id-Version" not in str(shown) and shown["hconcat"][0]["title"] == ""
