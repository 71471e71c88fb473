"""In Chinese, a lesson chart's legend shows no English: every series a step's chart colours, dashes or
shapes by is translated (tokens, words, model names and numbers excepted), as the lesson page draws it."""

from __future__ import annotations

import json
import re

import pytest

from appkit import lessons as app_lessons
from appkit.i18n import language
from seqviz.charts.presenter import LEGENDS, NARROW, is_token_axis
from seqviz.lessons.load import lessons

LEGEND_FIELDS = ("color", "fill", "stroke", "strokeDash", "shape")
STEPS = [(lid, i, step) for lid, lesson in lessons().items() for i, step in enumerate(lesson.steps)]


def legend_fields(node, found=None):
    """{field: its legend's labelExpr or ""} of the fields a spec's legends list (encoding channels in LEGENDS,
    in any layer)."""
    found = {} if found is None else found
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "encoding":
                for channel in LEGEND_FIELDS:
                    enc = value.get(channel)
                    if isinstance(enc, dict) and enc.get("field") and enc.get("legend", {}) is not None:
                        found[enc["field"]] = found.get(enc["field"]) or (enc.get("legend") or {}).get("labelExpr", "")
            elif key != "datasets":
                legend_fields(value, found)
    elif isinstance(node, list):
        for value in node:
            legend_fields(value, found)
    return found


@pytest.mark.parametrize("lid, i, step", STEPS, ids=lambda x: x if isinstance(x, (str, int)) else "")
def test_a_lesson_charts_legend_reads_in_chinese(lid, i, step):
    with language("zh"):
        spec, numbers, _table = app_lessons.live_view(step, step.control.default)
        charts = [app_lessons.shown_spec(s, present=True) for s in app_lessons.as_list(spec)]
    models = set(step.models) | set(step.cards)
    english = set()
    for shown, (field, relabel) in ((c, f) for c in charts for f in legend_fields(c).items()):
        for rows in shown.get("datasets", {}).values():
            for row in rows:
                value = row.get(field)
                if (isinstance(value, str) and re.search(r"[A-Za-z]{2,}", value)
                        and not re.search(r"[\u4e00-\u9fff]", value) and not any(m in value for m in models)
                        and not re.search(rf'"{re.escape(value)}": "[^"]*[\u4e00-\u9fff]', relabel)):  # shown as that
                    english.add((field, value))
    assert not english, (lid, i + 1, sorted(english)[:8])


def contrast(color: str) -> float:
    """WCAG contrast ratio of a #rrggbb colour on white."""
    rgb = [int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lum = sum(w * (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4) for w, c in zip((0.2126, 0.7152, 0.0722), rgb))
    return 1.05 / (lum + 0.05)


def guides(node, found):
    """Every axis and legend an encoding shows (a dict; None = hidden), every text mark, in any layer."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "encoding":
                for channel, enc in value.items():
                    kind = "axis" if channel in ("x", "y") else "legend" if channel in LEGENDS else None
                    if kind and isinstance(enc, dict) and enc.get(kind, {}) is not None and enc.get("field"):
                        found.append((kind, enc.get(kind) or {}))
            if key == "mark" and (value == "text" or isinstance(value, dict) and value.get("type") == "text"):
                found.append(("text", value if isinstance(value, dict) else {}))
            if key not in ("datasets", "data"):
                guides(value, found)
    elif isinstance(node, list):
        for value in node:
            guides(value, found)
    return found


@pytest.mark.parametrize("lid, i, step", STEPS, ids=lambda x: x if isinstance(x, (str, int)) else "")
def test_presenter_mode_charts_read_from_the_back_row(lid, i, step):
    """Presenter mode sends chart text of 22 px or more, dark enough (>= 4.5:1 on white), legend symbols
    16 px across, on every axis, legend and text mark of every step's chart."""
    spec, _numbers, _table = app_lessons.live_view(step, step.control.default)
    for shown in (app_lessons.shown_spec(s, present=True) for s in app_lessons.as_list(spec)):
        back_row(lid, i, shown)


def back_row(lid, i, shown):
    """Each guide's size and ink as Vega-Lite resolves it: the guide's own property, else the spec's config (the
    presenter theme, seqviz.charts.presenter.PRESENTER), which outranks Streamlit's chart theme."""
    config = shown["config"]
    found = guides(shown, [])
    assert found, (lid, i + 1)
    for kind, own in found:
        guide = {**config.get(kind, {}), **own}
        if kind == "text":
            assert guide.get("fontSize", 0) >= 22, (lid, i + 1, guide)
            continue
        assert guide["labelFontSize"] >= 22 and guide.get("titleFontSize", 22) >= 22, (lid, i + 1, kind, guide)
        for color in ("labelColor", "titleColor"):
            assert contrast(guide[color]) >= 4.5, (lid, i + 1, kind, color, guide[color])
        if kind == "legend":
            assert guide["symbolSize"] >= 256 and guide["titleLimit"] >= 640 and guide["symbolOpacity"] == 1, \
                (lid, i + 1, guide)
    for key, value in config.items():  # no more specific config (axisX, legend styles) undoes the theme
        if key.startswith(("axis", "legend")) and key not in ("axis", "legend"):
            assert not {"labelFontSize", "titleFontSize", "labelColor", "titleColor"} & set(value), (lid, i + 1, key)
    assert config["axis"]["labelFontSize"] >= 22 and contrast(config["axis"]["labelColor"]) >= 4.5
    texts = [{**config.get("text", {}), **g}.get("fontSize", 0) for kind, g in found if kind == "text"]
    axis = (shown.get("encoding") or {}).get("x", {}).get("axis") or next(
        (layer["encoding"]["x"].get("axis") for layer in shown.get("layer", []) if "x" in layer.get("encoding", {})
         and layer["encoding"]["x"].get("axis")), None)
    if is_token_axis(axis):  # a token per step, labelled below it: a 22 px monospace character (0.6 em) fits
        assert shown["width"]["step"] >= 0.6 * config["axis"]["labelFontSize"], (lid, i + 1, shown["width"])
        assert axis["labelOverlap"] is False, (lid, i + 1, axis)  # every token labelled
    for side in ("width", "height"):  # a token strip: one step per token, as large as its letters
        if texts and isinstance(shown.get(side), dict) and not is_token_axis(axis):
            assert shown[side]["step"] >= max(texts) + (4 if side == "height" else -4), (lid, i + 1, side, shown[side])
    if isinstance(shown.get("height"), dict):  # one band per word: as tall as its label, so none is dropped
        assert shown["height"]["step"] >= 30, (lid, i + 1, shown["height"])
    elif isinstance(shown.get("height"), (int, float)):
        assert shown["height"] >= 300, (lid, i + 1, shown["height"])
        # ... of plot: with "fit" the axes, legend and title (22 px text) came out of those 300 px (S8's BLEU
        # curves kept ~50 px of plot, seen at 1400 px)
        # (Streamlit's own default when a spec sets none)
        assert (shown.get("autosize") or {}).get("type", "fit") != "fit", (lid, i + 1, shown.get("autosize"))
    if "title" in shown:
        title = {**config["title"], **(shown["title"] if isinstance(shown["title"], dict) else {})}
        assert title.get("fontSize", 0) >= 22 and contrast(title["color"]) >= 4.5, (lid, i + 1)


def width_ems(text: str) -> float:
    """A line's width in ems, measured here: a CJK (wide) character 1 em, another 0.55 em."""
    import unicodedata

    return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.55 for c in text)


def encodings(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "encoding":
                yield value
            elif key not in ("datasets", "data"):
                yield from encodings(value)
    elif isinstance(node, list):
        for value in node:
            yield from encodings(value)


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("lid, i, step", STEPS, ids=lambda x: x if isinstance(x, (str, int)) else "")
def test_on_a_phone_no_legend_label_or_title_runs_past_the_chart(lid, i, step, lang):
    """Presenter mode on a 390 px phone: every label of a discrete legend, as shown, in one column and in lines of
    at most 10.5 ems of its 22 px font beside its symbol; the chart's title in lines of at most 11.5 ems of 28 px.
    (Seen cut at the chart's edge: "线性情形（tanh′ = 1", "训练好的 LSTM，平均 ∏", "shakespeare-char-rnn (R",
    the title "‖∂L_t/∂h_k‖ 随距离 t − …".)"""
    with language(lang):
        spec, _numbers, _table = app_lessons.live_view(step, step.control.default)
        charts = [app_lessons.shown_spec(s, present=True) for s in app_lessons.as_list(spec)]
    for shown in charts:
        title = shown.get("title")
        text = title.get("text") if isinstance(title, dict) else title
        if isinstance(text, dict):  # chosen in the browser by the plot's width: the narrow lines on a phone
            found = re.fullmatch(rf"width < {NARROW} \? (\[.*?\]) : (\[.*\])", text["expr"])
            text = json.loads(found.group(1))
        for line in [text] if isinstance(text, str) else text or []:
            assert width_ems(line) <= 11.5, (lid, i + 1, line)
        values = {}
        for rows in shown.get("datasets", {}).values():
            for row in rows:
                for k, v in row.items():
                    values.setdefault(k, set()).add(v)
        for enc in encodings(shown):
            for channel in LEGEND_FIELDS:
                e = enc.get(channel)
                if not (isinstance(e, dict) and e.get("field") and e.get("legend", {}) is not None) \
                        or e.get("type") == "quantitative":
                    continue
                legend = {**shown["config"]["legend"], **e["legend"]}  # the theme's, where the legend says nothing
                expr = legend.get("labelExpr", "")
                narrow = re.match(rf"\(width < {NARROW} \? (\{{.*?\}}) : \{{\}}\)\[datum\.value\] \|\| ", expr)
                wrapped = json.loads(narrow.group(1)) if narrow else {}
                names = dict(re.findall(r'"([^"]+)": "([^"]+)"', expr))  # a relabelled value's shown name
                assert legend.get("columns") == 1, (lid, i + 1, legend)
                for value in values.get(e["field"], ()):
                    if not isinstance(value, str):
                        continue
                    for line in wrapped.get(value) or [names.get(value, value)]:
                        assert width_ems(line) <= 10.5, (lid, i + 1, value, line)


# Words a chart may show in Chinese as they are: model families, scores and functions (as the glossary keeps them),
# and one-letter symbols (t, k, c, h ...). Anything else in Latin letters is English left in a Chinese chart.
KEPT = {"LSTM", "GRU", "RNN", "BLEU", "Mamba", "word2vec", "CosAdd", "tanh", "logit", "exp", "log", "ln", "TF",
        "softmax", "max", "inf"}


def titles(node, found=None) -> list[tuple[str, str]]:
    """Every (kind, text) a spec titles something with: chart, axis, legend and header titles (a string, lines, or
    a presenter expression choosing lines by width), and each tooltip entry's title (None where it has none)."""
    found = [] if found is None else found
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("datasets", "data"):
                continue
            if key == "tooltip":
                for entry in value if isinstance(value, list) else [value]:
                    if isinstance(entry, dict) and "field" in entry:
                        found.append(("tooltip " + entry["field"], entry.get("title")))
            elif key == "title":
                text = value.get("text") if isinstance(value, dict) else value
                if isinstance(text, dict) and "expr" in text:
                    found += [("title", json.loads(f'"{s}"')) for s in re.findall(r'"((?:[^"\\]|\\.)*)"', text["expr"])]
                else:
                    found += [("title", t) for t in (text if isinstance(text, list) else [text]) if isinstance(t, str)]
                if isinstance(value, dict) and isinstance(value.get("subtitle"), str):
                    found.append(("subtitle", value["subtitle"]))
            titles(value, found)
    elif isinstance(node, list):
        for value in node:
            titles(value, found)
    return found


def english(text: str, allowed: set[str]) -> list[str]:
    """The English words of ``text``: not a kept term, not the step's own data, not a station's name (S6)."""
    return [w for w in re.findall(r"[A-Za-z][A-Za-z0-9]+", text)
            if w not in KEPT and w not in allowed and not re.fullmatch(r"S\d", w)]


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("lid, i, step", STEPS, ids=lambda x: x if isinstance(x, (str, int)) else "")
def test_every_tooltip_field_has_a_title_and_a_chinese_chart_titles_no_english(lid, i, step, lang):
    """As a class sees each step's charts (presenter mode, at every value of its control): no tooltip field shows
    its column name for want of a title, and in Chinese no title, axis, legend or tooltip reads English (the
    step's own data words excepted: tokens, the analogy's words, the word asked about)."""
    for value in (step.control.options or (step.control.default,)):
        with language(lang):
            spec, numbers, _table = app_lessons.live_view(step, value)
            charts = [app_lessons.shown_spec(s, present=True) for s in app_lessons.as_list(spec)]
        words = {w for v in (*numbers.values(), *step.params.values(), value) if isinstance(v, str)
                 for w in re.findall(r"[A-Za-z][A-Za-z0-9]+", v)}
        for kind, text in (t for chart in charts for t in titles(chart)):
            assert text is not None, (lid, i + 1, value, f"{kind} has no title")
            if lang == "zh":
                assert not english(text, words), (lid, i + 1, value, kind, text)
