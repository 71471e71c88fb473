"""Presenter mode for a chart's Vega-Lite spec: a theme read from the back of a room, on a projector or a phone.

Most of it is Vega-Lite ``config`` (``PRESENTER``): text of 22 px or more, ink of 4.5:1 contrast or more on white,
legend symbols 16 px across. A spec's ``config`` outranks Streamlit's chart theme, not a guide's own properties:
``present`` drops those so the theme decides. What a theme cannot say depends on the data or the width: a step per
token grown with its text, every label of a token axis shown (a step wide enough for it; a phone scrolls), and
long titles and legend labels in lines chosen in the browser by the drawn width (``wrap`` breaks only between words,
at CJK punctuation and between scripts, never inside a formula such as "t − k" or "(≤ c)").
"""

from __future__ import annotations

import json
import math
import re
import unicodedata

INK = "#31333F"  # Streamlit's text colour: 12.6:1 on white (its grey axis text, #808495, is 3.7:1)
FONT, TITLE_FONT, HEIGHT = 22, 28, 300  # px; a chart drawn shorter keeps too little plot under 22 px axes
TOKEN_STEP = 14  # px per token of a token axis: a 22 px monospace character is ~13 px wide; 84 fit a projector
GUIDE = {"labelFontSize": FONT, "titleFontSize": FONT + 2, "labelColor": INK, "titleColor": INK}
PRESENTER = {"axis": GUIDE, "header": GUIDE, "text": {"fontSize": FONT},
             "legend": {**GUIDE, "symbolSize": 256, "symbolStrokeWidth": 4, "symbolOpacity": 1, "labelLimit": 640,
                        "titleLimit": 640, "columns": 1, "labelBaseline": "top", "rowPadding": 8},
             "title": {"fontSize": TITLE_FONT, "subtitleFontSize": FONT, "color": INK, "subtitleColor": INK,
                       "limit": 0}}  # limit 0: a title given in lines is not cut at the plot's width
TYPE = {*GUIDE, *PRESENTER["legend"], *PRESENTER["title"], "fontSize"} - {"limit"}
# Lines of a legend label and of a chart title, in ems of their font (a CJK character is one em, another about
# 0.55): on a 390 px phone a legend under the plot keeps ~230 px (10.5 ems of 22 px) beside its symbol, the title
# ~330 px (11.5 ems of 28 px). Wider than NARROW px the plot keeps a line up to WIDE ems (a 1,400 px projector).
LABEL_EMS, TITLE_EMS, WIDE_EMS, NARROW = 10.5, 11.5, 40.0, 700
LEGENDS = ("color", "fill", "stroke", "strokeDash", "shape", "size", "opacity")
WIDE = r"\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef"  # CJK ideographs, their punctuation and full-width forms
OPERATORS = "−-+=×·/≤≥<>→←↔≈∝⊙∘^"  # a space beside one of these holds a formula together ("t − k")
OPENING, CLOSING = "（(【「『[{“‘«", "）)】」』]}”’»，,。.、：:；;！!？?%"


def present(spec: dict) -> dict:
    """A copy of ``spec`` in the presenter theme: ``PRESENTER`` as its config, its guides' and text marks' own
    typography dropped, a step per token grown with its text, token axes labelled at every token, room for the
    plot, and the title and legends in lines chosen by the drawn width."""
    grow = FONT / min(_text_sizes(spec) or [FONT])
    tokens = _token_axis(spec)
    spec = _untyped(spec)
    for side in ("width", "height"):  # a step per token or word (a strip's cells, a bar's band) fits its text
        if isinstance(spec.get(side), dict) and "step" in spec[side]:
            least = FONT + 8 if side == "height" else 0
            spec[side] = {**spec[side], "step": max(math.ceil(spec[side]["step"] * grow), least)}
    if tokens and not isinstance(spec.get("width"), (int, float)):  # every token labelled: a step each (a phone
        # scrolls the chart, ``appkit.lessons``)
        spec["width"] = {"step": TOKEN_STEP}
    if isinstance(spec.get("height"), (int, float)):  # the height is the plot's: "fit" took axes and legend out of it
        spec["height"] = max(spec["height"], HEIGHT)
        auto = spec.get("autosize") if isinstance(spec.get("autosize"), dict) else {"contains": "padding"}
        if isinstance(spec.get("width"), dict):  # a step per token: the chart as wide as its tokens
            spec["autosize"] = {**auto, "type": "pad"}
        elif auto.get("type", "fit") == "fit":
            spec["autosize"] = {**auto, "type": "fit-x"}
    config = spec.get("config", {})  # its guides' own sizes dropped too (axisX outranks axis)
    spec["config"] = {**config, **{k: {**config.get(k, {}), **v} for k, v in PRESENTER.items()}}
    title = spec.get("title")
    text = title.get("text") if isinstance(title, dict) else title
    if isinstance(text, str) and ems(text) > TITLE_EMS:
        spec["title"] = {**(title if isinstance(title, dict) else {}), "text": by_width(text, TITLE_EMS)}
    _wrap_legends(spec, _values(spec))
    return spec


def by_width(text: str, narrow: float) -> dict:
    """``text`` as a Vega expression: in lines of ``narrow`` ems where the plot is under ``NARROW`` px wide, of
    ``WIDE_EMS`` ems otherwise (a projector keeps a title on one line that a phone breaks)."""
    return {"expr": f"width < {NARROW} ? {json.dumps(wrap(text, narrow), ensure_ascii=False)} : "
                    f"{json.dumps(wrap(text, WIDE_EMS), ensure_ascii=False)}"}


def is_token_axis(axis) -> bool:
    """Whether an axis labels each step with its token (``seqviz.charts.gates.token_axis``: a lookup of the tokens
    by step, in a monospace font)."""
    return isinstance(axis, dict) and axis.get("labelFont") == "monospace" and \
        bool(re.fullmatch(r"\[.*\]\[datum\.value\]", str(axis.get("labelExpr", "")), re.S))


def _token_axis(spec) -> bool:
    """Whether an x encoding of the spec, in any layer, is a token axis."""
    if isinstance(spec, dict):
        encoding = spec.get("encoding") if isinstance(spec.get("encoding"), dict) else {}
        if is_token_axis((encoding.get("x") or {}).get("axis")):
            return True
        return any(_token_axis(v) for k, v in spec.items() if k not in ("datasets", "data"))
    return any(_token_axis(v) for v in spec) if isinstance(spec, list) else False


def _untyped(node, key: str = ""):
    """A copy without font sizes, guide colours, legend layout and label overlap of its own (data rows shared)."""
    if isinstance(node, list):
        return [_untyped(v, key) for v in node]
    if not isinstance(node, dict) or key in ("datasets", "data"):
        return node
    guide = key in ("axis", "legend", "header", "title") or key.startswith(("axis", "legend"))
    mark = key == "mark" and node.get("type") == "text"
    tokens = key == "axis" and is_token_axis(node)  # a step per token: every label shown, none dropped
    out = {k: _untyped(v, k) for k, v in node.items()
           if not ((guide and k in TYPE) or (mark and k == "fontSize") or (tokens and k == "labelOverlap"))}
    if key == "axis" and isinstance(node.get("labelFontSize"), (int, float)):
        out = _angled_at(out, FONT / node["labelFontSize"])
    return {**out, "labelOverlap": False} if tokens else out


def _angled_at(axis: dict, grow: float) -> dict:
    """An axis that angles its labels once a column is narrower than they need (``width / n < need``, written for
    its own font size: ``seqviz.charts.attention.source_axis``) asks for ``grow`` times the room at the theme's."""
    def scaled(value):
        if isinstance(value, dict) and isinstance(value.get("expr"), str):
            return {**value, "expr": re.sub(r"(width / \d+ < )(\d+(?:\.\d+)?)",
                                            lambda m: f"{m.group(1)}{float(m.group(2)) * grow:.0f}", value["expr"])}
        return value
    return {k: scaled(v) if k in ("labelAngle", "labelAlign") else v for k, v in axis.items()}


def _text_sizes(node) -> list[float]:
    """The font sizes of a spec's text marks (Vega's default 11 px where a mark sets none)."""
    if isinstance(node, dict):
        mark = node.get("mark")
        own = [11.0] if mark == "text" else [mark.get("fontSize", 11.0)] if isinstance(mark, dict) and \
            mark.get("type") == "text" else []
        return own + [x for k, v in node.items() if k not in ("datasets", "data", "mark") for x in _text_sizes(v)]
    return [x for v in node for x in _text_sizes(v)] if isinstance(node, list) else []


def ems(text: str) -> float:
    """The width of ``text`` in ems of its font: 1 for a wide (CJK) character, 0.55 for another."""
    return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.55 for c in text)


def _pieces(text: str) -> list[str]:
    """``text`` cut where a line may break: after a space, after CJK punctuation, before an opening bracket,
    between a CJK run and a Latin one. A run of CJK ideographs stays whole (a segmenter would know its words; the
    run does not break them), as does a short bracketed group ("(≤ c)", "（标出最大的上升）") and a formula's
    operators with their operands ("t − k")."""
    atoms = []
    for group, rest in re.findall(r"([（(][^（()）]{1,12}[)）]\s*)|([^（(]+|[（(])", text):
        if group:
            atoms.append(group)
            continue
        for run in re.findall(rf"[{WIDE}]+\s*|[^\s{WIDE}]+\s*|\s+", rest):
            atoms += re.findall(r"[^，、：；。！？）」』】]*[，、：；。！？）」』】]+\s*|.+$", run) \
                if re.match(f"[{WIDE}]", run) else [run]
    out: list[str] = []
    for part in atoms:
        glue = out and (out[-1].rstrip()[-1:] in OPERATORS + OPENING or part.lstrip()[:1] in OPERATORS + CLOSING
                        or not out[-1][-1:].isspace() and not re.match(f"[{WIDE}]", part)
                        and not re.search(f"[{WIDE}]$", out[-1]))
        if glue:
            out[-1] += part
        else:
            out.append(part)
    return out


def wrap(text: str, width: float) -> list[str]:
    """``text`` in lines of at most ``width`` ems, broken only where ``_pieces`` allows (a piece longer than a line
    is cut at the line's width, the one place a word may break)."""
    lines, line = [], ""
    for piece in _pieces(text):
        while ems(piece.rstrip()) > width and not line:  # a piece longer than a line: cut it
            cut = next(i for i in range(len(piece), 0, -1) if ems(piece[:i]) <= width)
            lines.append(piece[:cut].rstrip())
            piece = piece[cut:]
        if line and ems((line + piece).rstrip()) > width:
            lines.append(line.rstrip())
            line = piece.lstrip()
        else:
            line += piece
    return [*lines, line.rstrip()] if line.strip() else lines or [text]


def _values(spec: dict) -> dict[str, set]:
    """Each field's string values across the spec's datasets (what a legend of that field labels)."""
    found: dict[str, set] = {}
    for rows in (spec.get("datasets") or {}).values():
        for row in rows if isinstance(rows, list) else []:
            for k, v in row.items():
                if isinstance(v, str):
                    found.setdefault(k, set()).add(v)
    return found


def _wrap_legends(node, values: dict) -> None:
    """In place: each discrete legend's long labels in lines of ``LABEL_EMS`` where the plot is narrow (a map from
    each stored value to its lines, before any ``labelExpr`` it had): the one thing a theme cannot say."""
    if isinstance(node, list):
        for v in node:
            _wrap_legends(v, values)
    if not isinstance(node, dict):
        return
    for channel, enc in (node.get("encoding") or {}).items():
        legend = enc.get("legend", {}) if isinstance(enc, dict) and channel in LEGENDS else None
        if legend is None or enc.get("type") == "quantitative" or "field" not in enc:
            continue
        found = re.fullmatch(r"\((\{.*\})\)\[datum\.value\] \|\| datum\.value", legend.get("labelExpr") or "", re.S)
        shown = json.loads(found.group(1)) if found else {}  # seqviz.charts.palette.label_expr's relabelling
        stored = set(values.get(enc["field"], ())) | {v for v in (enc.get("scale") or {}).get("domain") or ()
                                                      if isinstance(v, str)}
        lines = {v: ls for v in sorted(stored) if len(ls := wrap(shown.get(v, v), LABEL_EMS)) > 1}
        if lines:
            enc["legend"] = {**legend, "labelExpr": f"(width < {NARROW} ? {json.dumps(lines, ensure_ascii=False)} : "
                                                    f"{{}})[datum.value] || ({legend.get('labelExpr') or 'datum.label'})"}
    for k, v in node.items():
        if k not in ("datasets", "data", "encoding"):
            _wrap_legends(v, values)


# A chart's title in lines of at most EMS ems of Streamlit's 16 px title font (``seqviz.charts.presenter.ems``) while
# the chart's box is under PX px wide: Streamlit cuts a title at its box's width less 40 px with "…" (issue 51: "Which
# memories matter …" at 390 px). Chosen in the browser by the box's width (Vega's containerSize, which nested views of
# a concatenation see too, unlike ``width``).
TITLE_LINES = ((480, 18.0), (760, 26.0), (1000, 42.0))  # (box under PX px, lines of EMS ems); wider: one line


def fit_titles(node) -> None:
    """In place: every chart title of a spec longer than a phone's line, in lines chosen by the width of
    the chart's box (``TITLE_LINES``); a title already in lines, or an expression, is left alone
    (``appkit.draw.show`` calls it on every chart it draws)."""
    if isinstance(node, list):
        for v in node:
            fit_titles(v)
    if not isinstance(node, dict):
        return
    title = node.get("title")
    if "mark" in node or "layer" in node or any(k in node for k in ("vconcat", "hconcat", "concat", "facet", "spec")):
        fitted = dict(title) if isinstance(title, dict) else {"text": title} if isinstance(title, str) else None
        for key in ("text",) if fitted else ():  # a subtitle takes no expression in Vega-Lite
            text = fitted.get(key)
            if isinstance(text, str) and ems(text) > TITLE_LINES[0][1]:
                expr = json.dumps(text, ensure_ascii=False)
                for px, most in reversed(TITLE_LINES):
                    expr = f"containerSize()[0] < {px} ? {json.dumps(wrap(text, most), ensure_ascii=False)} : {expr}"
                fitted[key] = {"expr": expr}
        if fitted and fitted != title and fitted != {"text": title}:
            node["title"] = fitted
    for k, v in node.items():
        if k not in ("datasets", "data", "title", "encoding"):
            fit_titles(v)


def title_text(title) -> str | None:
    """A chart title's whole text, as built or as ``fit_titles`` left it (a ``{"text": {"expr": ...}}`` whose last
    branch is the title on one line): what a test or an export names the chart by."""
    if isinstance(title, dict):
        title = title.get("text")
    if isinstance(title, dict) and isinstance(title.get("expr"), str):
        return json.loads(title["expr"][title["expr"].rfind(' : "') + 3:] if ' : "' in title["expr"] else title["expr"])
    return " ".join(title) if isinstance(title, list) else title
