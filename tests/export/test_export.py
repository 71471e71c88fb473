"""seqviz.export: SVG and PNG through vl-convert, footnotes, CJK fonts, the offline HTML file."""

from __future__ import annotations

import re
import struct
import xml.etree.ElementTree as ET

import altair as alt
import pandas as pd
import pytest

from seqviz import export

FRAME = pd.DataFrame({"step": [0, 1, 2, 3], "loss": [2.5, 1.25, 0.75, 3.125]})
CJK = pd.DataFrame({"词": ["我", "昨天", "公园"], "weight": [0.2, 0.5, 0.3]})
# An external resource the browser would fetch: src/href of a tag, or a CSS url(...).
FETCHED = re.compile(r"""<(?:script|link|img|iframe|source|embed)\b[^>]*\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//"""
                     r"""|url\(\s*["']?\s*(?:https?:)?//|@import""", re.IGNORECASE)


def line_chart():
    return alt.Chart(FRAME).mark_line(point=True).encode(
        x=alt.X("step:Q", title="token position"), y=alt.Y("loss:Q", title="surprisal (nats)")
    ).properties(width=240, height=160)


def cjk_chart():
    return alt.Chart(CJK).mark_bar().encode(x=alt.X("词:N", title="源语言"), y=alt.Y("weight:Q", title="权重"))


def svg_size(svg: str) -> tuple[float, float]:
    root = ET.fromstring(svg)
    return float(root.get("width")), float(root.get("height"))


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def texts(svg: str) -> str:
    return " ".join("".join(t.itertext()) for t in ET.fromstring(svg).iter() if t.tag.endswith("}text"))


def test_svg_parses_and_has_axis_titles_and_footnote():
    svg = export.to_svg(line_chart(), footnote="model: tiny-rnn · unit: nats")
    words = texts(svg)
    assert "token position" in words and "surprisal (nats)" in words
    assert "model: tiny-rnn · unit: nats" in words
    assert svg == export.to_svg(line_chart().to_dict(), footnote="model: tiny-rnn · unit: nats")  # dict == chart


def test_footnote_becomes_subtitle_under_an_existing_title():
    svg = export.to_svg(line_chart().properties(title="Loss"), footnote="layer: 1")
    assert "Loss" in texts(svg) and "layer: 1" in texts(svg)
    spec = export.prepare(line_chart().properties(title="Loss"), "layer: 1")
    assert spec["title"]["text"] == "Loss" and spec["title"]["subtitle"] == ["layer: 1"]


def test_png_is_twice_the_chart_size():
    w, h = svg_size(export.to_svg(line_chart()))
    assert png_size(export.to_png(line_chart())) == (round(2 * w), round(2 * h))
    assert png_size(export.to_png(line_chart(), scale=1)) == (round(w), round(h))
    with pytest.raises(ValueError, match="scale"):
        export.to_png(line_chart(), scale=0)


def test_rejects_what_is_not_a_chart():
    with pytest.raises(TypeError, match="Altair chart or a Vega-Lite dict"):
        export.to_svg("fig.svg")


def test_font_stack_lists_cjk_after_the_default():
    # A bare spec (not an Altair chart: the app's CJK theme, once enabled, gives charts a font of its own)
    spec = export.prepare({"mark": "point", "data": {"values": [{"x": 1}]}})
    assert spec["config"]["font"].startswith("sans-serif,") and "WenQuanYi Micro Hei" in spec["config"]["font"]
    themed = export.prepare(line_chart())["config"]["font"]
    assert "WenQuanYi Micro Hei" in themed  # with or without the app's theme
    own = export.with_fonts({"config": {"font": "Georgia"}})
    assert own["config"]["font"].startswith("Georgia, ") and "Noto Sans CJK SC" in own["config"]["font"]


def test_cjk_labels_are_in_the_svg():
    words = texts(export.to_svg(cjk_chart(), footnote="text: “我昨天在公园”"))
    for label in ("源语言", "权重", "昨天", "公园", "我昨天在公园"):
        assert label in words


def test_cjk_font_is_installed_and_renders_glyphs():
    assert export.cjk_font_files(), ("no CJK font found in " + ", ".join(export.FONT_DIRS)
                                     + ": apt-get install fonts-wqy-microhei (Chinese renders as boxes)")
    assert export.register_fonts()

    def glyph(ch):  # two missing glyphs draw the same box; two real glyphs differ
        spec = {"data": {"values": [{"t": ch}]}, "mark": {"type": "text", "fontSize": 40},
                "encoding": {"text": {"field": "t"}}, "width": 60, "height": 60}
        return export.to_png(spec, scale=1)

    assert glyph("公") != glyph("园")


def html_view():
    sections = [export.Section("Surprisal", line_chart(), FRAME, caption="Lower is better."),
                {"title": "源语言", "chart": cjk_chart().to_dict(), "data": CJK}]
    return export.to_html(sections, "Language model · tiny", link="http://localhost:8501/language_model?unit=nats",
                          card={"name": "tiny-rnn", "val_loss": 1.5, "history": [{"step": 1}]},
                          footnote="model: tiny-rnn")


def test_html_opens_offline_and_holds_the_data():
    page = html_view()
    assert page.startswith("<!DOCTYPE html>") and "vegaEmbed" in page
    assert not FETCHED.findall(page)
    links = re.findall(r"""<a\b[^>]*href="([^"]*)""", page)
    assert links == ["http://localhost:8501/language_model?unit=nats"]
    assert '"loss":3.125' in page  # the chart's own data, in the spec
    assert "<td>3.125</td>" in page and "<td>昨天</td>" in page  # the tables
    assert "tiny-rnn" in page and "Lower is better." in page and "history" not in page.split("Model card")[1]
    assert "$schema" not in page.split("const specs")[1]


def test_html_escapes_and_refuses_script_links():
    page = export.to_html([export.Section("</script><b>x", line_chart())], "a <title>")
    assert "<b>x" not in page and "&lt;/script&gt;&lt;b&gt;x" in page
    with pytest.raises(ValueError, match="link"):
        export.to_html([export.Section("s", line_chart())], "t", link="javascript:alert(1)")
    with pytest.raises(ValueError, match="at least one section"):
        export.to_html([], "t")


def test_state_line_names_the_state():
    line = export.state_line("lstm", "To be,\nor not", unit="bits", seed=None)
    assert line == "model: lstm · text: “To be, / or not” · unit: bits"
    assert all(len(x) <= 50 for x in export.wrap("word " * 40, 50))
