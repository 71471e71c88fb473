"""Charts out of the app: SVG and PNG through the Vega team's vl-convert, a view as one offline HTML file.

``to_svg`` / ``to_png`` take an Altair chart or a Vega-Lite dict (what ``chart.to_dict()``
returns) and render it without a browser; a footnote naming the page's state (model, text,
control values) is written into the image. ``to_html`` writes a page's view as one file
that opens offline: Vega, Vega-Lite and Vega-Embed are bundled inline, each chart stays
interactive, the numbers behind it follow as a table, then the model card and the link
that reopens the view in the app. Never imports Streamlit.

CJK labels need a CJK-capable font on the machine (Debian: ``fonts-wqy-microhei``); the
known system font folders are registered with vl-convert and the charts' font stack lists
CJK families after the default, so Chinese tokens render instead of tofu boxes.
"""

from __future__ import annotations

import copy
import html
import json
import os
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported where a table is written: a page's first run needs none
    import pandas as pd

# The default first (Vega's sans-serif), then CJK-capable families for glyphs it lacks.
CJK_FAMILIES = ("WenQuanYi Micro Hei", "Noto Sans CJK SC", "Noto Sans CJK JP", "Source Han Sans SC",
                "Droid Sans Fallback")
FONT_STACK = ", ".join(["sans-serif"] + [f"'{f}'" for f in CJK_FAMILIES])
# Debian's folders for those families; $SEQVIZ_FONT_DIRS (os.pathsep list) adds others.
FONT_DIRS = ("/usr/share/fonts/truetype/wqy", "/usr/share/fonts/opentype/noto", "/usr/share/fonts/truetype/noto",
             "/usr/share/fonts/truetype/droid", "/usr/share/fonts/opentype/source-han-sans")
CJK_FILE_HINTS = ("wqy", "cjk", "sourcehan", "source-han", "droidsansfallback")
CHAR_PX = 5.6  # about one character's width in the 10 px footnote, to wrap it inside the chart's width
TABLE_ROWS = 5000  # rows of a section's numbers written into the HTML file (the CSV download has them all)
EMBED_OPTIONS = {"mode": "vega-lite", "renderer": "svg",  # no "Open in Vega Editor": it needs the network
                 "actions": {"export": True, "source": True, "compiled": False, "editor": False}}

_fonts_lock = threading.Lock()
_fonts_done: list[str] | None = None


def font_dirs() -> list[Path]:
    """Font folders that exist here: the known CJK ones, then those in ``$SEQVIZ_FONT_DIRS``."""
    extra = [p for p in os.environ.get("SEQVIZ_FONT_DIRS", "").split(os.pathsep) if p]
    return [Path(p) for p in (*FONT_DIRS, *extra) if Path(p).is_dir()]


def cjk_font_files() -> list[Path]:
    """CJK-capable font files found in ``font_dirs()`` (empty: Chinese labels render as boxes)."""
    found = []
    for folder in font_dirs():
        for f in sorted(folder.rglob("*")):
            if f.suffix.lower() in (".ttf", ".ttc", ".otf", ".otc") and any(
                    h in f.name.lower().replace("_", "") for h in CJK_FILE_HINTS):
                found.append(f)
    return found


def register_fonts() -> list[str]:
    """Register ``font_dirs()`` with vl-convert once per process; returns the folders registered."""
    global _fonts_done
    with _fonts_lock:
        if _fonts_done is None:
            import vl_convert as vlc

            done = []
            for folder in font_dirs():
                try:
                    vlc.register_font_directory(str(folder))
                    done.append(str(folder))
                except Exception:  # noqa: BLE001 - an unreadable folder must not stop an export
                    continue
            _fonts_done = done
        return list(_fonts_done)


def spec_of(chart_or_spec) -> dict:
    """A private copy of the Vega-Lite spec of an Altair chart or a spec dict (TypeError otherwise)."""
    if isinstance(chart_or_spec, dict):
        return copy.deepcopy(chart_or_spec)
    if not hasattr(chart_or_spec, "to_dict"):
        raise TypeError(f"expected an Altair chart or a Vega-Lite dict, got {type(chart_or_spec).__name__}")
    import altair as alt

    try:
        return chart_or_spec.to_dict()
    except alt.MaxRowsError:  # the same lift the app applies (appkit.cache's views)
        alt.data_transformers.disable_max_rows()
        return chart_or_spec.to_dict()


def wrap(text: str, width: int = 80) -> list[str]:
    """``text`` as lines of at most ``width`` characters, broken at ' · ' or spaces where possible."""
    lines = []
    for paragraph in str(text).splitlines() or [""]:
        line = ""
        for word in paragraph.split(" "):
            if line and len(line) + 1 + len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        while len(line) > width:
            lines.append(line[:width])
            line = line[width:]
        lines.append(line)
    return [line for line in lines if line.strip()]


def state_line(model: str | None = None, text: str | None = None, **controls) -> str:
    """A footnote naming a page's state: 'model: X · text: “To be, or…” · unit: nats'."""
    parts = [f"model: {model}"] if model else []
    if text is not None:
        shown = " ".join(str(text).replace("\n", " / ").split())  # "/": a glyph every font has
        parts.append(f"text: “{shown[:60]}{'…' if len(shown) > 60 else ''}”")
    parts += [f"{k.replace('_', ' ')}: {v}" for k, v in controls.items() if v is not None]
    return " · ".join(parts)


def with_footnote(spec: dict, footnote: str | None) -> dict:
    """The spec with ``footnote`` under its title (as a subtitle), or as a small caption below it."""
    width = spec.get("width") if isinstance(spec.get("width"), (int, float)) else 300  # Vega's default
    lines = wrap(footnote, max(50, int(width / CHAR_PX))) if footnote else []
    if not lines:
        return spec
    title = spec.get("title")
    if isinstance(title, (str, list)):
        title = {"text": title}
    if isinstance(title, dict) and title.get("text") not in (None, "", []):
        old = title.get("subtitle") or []
        title = {**title, "subtitle": ([old] if isinstance(old, str) else list(old)) + lines,
                 "subtitleColor": title.get("subtitleColor", "#555555"), "subtitleFontSize": 10}
    else:  # no title to hang a subtitle on (Vega drops a subtitle under an empty title)
        title = {"text": lines, "orient": "bottom", "anchor": "start", "fontSize": 10,
                 "fontWeight": "normal", "color": "#555555", "offset": 8}
    return {**spec, "title": title}


def with_fonts(spec: dict) -> dict:
    """The spec with the CJK-capable font stack as its default font (families it names are kept first)."""
    config = dict(spec.get("config") or {})
    font = config.get("font")
    if font and not any(f in font for f in CJK_FAMILIES):
        config["font"] = f"{font}, " + ", ".join(f"'{f}'" for f in CJK_FAMILIES)
    elif not font:
        config["font"] = FONT_STACK
    return {**spec, "config": config}


def prepare(chart_or_spec, footnote: str | None = None) -> dict:
    """The spec that is rendered: a copy with the footnote and the font stack."""
    return with_fonts(with_footnote(spec_of(chart_or_spec), footnote))


def to_svg(chart_or_spec, footnote: str | None = None) -> str:
    """The chart as an SVG document (text stays text: searchable, scalable, editable)."""
    import vl_convert as vlc

    register_fonts()
    return vlc.vegalite_to_svg(prepare(chart_or_spec, footnote))


def to_png(chart_or_spec, scale: float = 2.0, footnote: str | None = None) -> bytes:
    """The chart as PNG bytes, ``scale`` pixels per CSS pixel (2: sharp on slides and high-DPI screens)."""
    import vl_convert as vlc

    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    register_fonts()
    return vlc.vegalite_to_png(prepare(chart_or_spec, footnote), scale=scale)


# ------------------------------------------------------------------ one view as one HTML file
@dataclass
class Section:
    """One chart of a view: its heading, the chart, the numbers behind it, a caption."""

    heading: str
    chart: object  # an Altair chart or a Vega-Lite dict
    data: pd.DataFrame | None = None  # written as a table under the chart
    caption: str = ""


@lru_cache(maxsize=1)
def javascript_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script defining ``window.vegaEmbed`` (about 0.9 MB).

    Built by vl-convert from the copies it ships (no network); the first call takes seconds.
    """
    import vl_convert as vlc

    bundle = vlc.javascript_bundle()
    return bundle.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")  # cannot close the tag


def _script_json(value) -> str:
    """JSON for a <script> element: '<' occurs only inside strings, where \\u003c means the same.

    NaN stays NaN, which is valid JavaScript (JSON would refuse it).
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).replace("<", "\\u003c")


def slug(name: str) -> str:
    """A file and widget-key friendly name: 'Gate heatmap (layer 0)' -> 'gate_heatmap_layer_0'."""
    return re.sub(r"[^0-9A-Za-z._-]+", "_", name).strip("_").lower() or "chart"


def view_file(sections, title: str, link=None, card=None, footnote=None, spec=spec_of) -> str:
    """``to_html`` of a page's view, its arguments read now: ``sections`` (``Section``s or dicts, their ``data`` a
    frame or a callable returning one), ``link``, ``card`` and ``footnote`` (or callables returning them); each
    chart's spec through ``spec``. A view that drew no chart (its page stopped first) is a page saying so."""
    now = [_section(s) for s in sections]
    if not now:
        return (f"<!DOCTYPE html><meta charset='utf-8'><title>{html.escape(title)}</title>"
                f"<h1>{html.escape(title)}</h1><p>This view drew no chart.</p>")
    called = [x() if callable(x) else x for x in (link, card, footnote)]
    return to_html([Section(s.heading, spec(s.chart), s.data() if callable(s.data) else s.data, s.caption)
                    for s in now], title, *called)


def _section(item) -> Section:
    if isinstance(item, Section):
        return item
    if isinstance(item, dict):
        return Section(item.get("heading") or item.get("title") or "", item["chart"], item.get("data"),
                       item.get("caption", ""))
    raise TypeError(f"a section is a Section or a dict with a 'chart', got {type(item).__name__}")


def _table(frame: pd.DataFrame) -> str:
    shown = frame.head(TABLE_ROWS)
    note = f" (the first {TABLE_ROWS:,} of {len(frame):,})" if len(frame) > TABLE_ROWS else ""
    return (f"<details><summary>The numbers behind the chart: {len(frame):,} rows{note}</summary>"
            + shown.to_html(index=False, border=0, na_rep="", float_format=lambda v: f"{v:.6g}") + "</details>")


def _card_table(card: dict) -> str:
    rows = []
    for key, value in card.items():
        if key == "history":  # the training curve: long, and drawn on the model pages
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        text = text if len(text) <= 400 else text[:400] + "…"
        rows.append(f"<tr><th>{html.escape(str(key))}</th><td>{html.escape(text)}</td></tr>")
    return "<table class='card'>" + "".join(rows) + "</table>"


def _safe_link(link: str) -> str:
    if not str(link).lower().startswith(("http://", "https://", "/", "?", "./")):
        raise ValueError(f"the link must be an http(s) address or a relative one, got {link!r}")
    return html.escape(str(link), quote=True)


STYLE = ("body{font-family:system-ui,sans-serif,'WenQuanYi Micro Hei','Noto Sans CJK SC';max-width:1100px;"
         "margin:2rem auto;padding:0 1rem;color:#222}h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem}"
         ".note{color:#555;font-size:.9rem}table{border-collapse:collapse;font-size:.8rem;margin:.5rem 0}"
         "th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}"
         "details{margin:.5rem 0}summary{cursor:pointer;color:#444}.chart{overflow-x:auto}")


BULKY_CARD_FIELDS = ("history", "snapshots", "evaluation", "bleu_by_length", "path")


def public_card(card) -> dict:
    """A model card (or a model's ``card``) fit to leave the server: without the long fields drawn elsewhere and
    without file paths."""
    card = card if card is None or isinstance(card, dict) else getattr(card, "card", None)
    return {k: v for k, v in (card or {}).items() if k not in BULKY_CARD_FIELDS
            and not (isinstance(v, str) and (v.startswith(("/", "~", "\\")) or re.match(r"^[A-Za-z]:[\\/]", v)))}


def to_html(sections, title: str, link: str | None = None, card: dict | None = None,
            footnote: str | None = None) -> str:
    """One self-contained HTML file of a view: interactive charts, their numbers, the card, the link back.

    ``sections``: ``Section`` objects (or dicts with the same keys). The file loads nothing
    from the network: the Vega libraries and every chart's data are inside it.
    """
    parts = [_section(s) for s in sections]
    if not parts:
        raise ValueError("to_html needs at least one section")
    specs = []
    for s in parts:
        spec = with_fonts(spec_of(s.chart))
        spec.pop("$schema", None)  # the mode is given to vegaEmbed; the file names no schema URL
        specs.append(spec)
    body = [f"<h1>{html.escape(title)}</h1>"]
    if footnote:
        body.append(f"<p class='note'>{html.escape(footnote)}</p>")
    if link:
        body.append(f"<p class='note'><a href=\"{_safe_link(link)}\">Reopen this view in seqviz</a> "
                    "(needs the app running)</p>")
    for i, s in enumerate(parts):
        body.append(f"<section><h2>{html.escape(s.heading)}</h2><div class='chart' id='chart-{i}'></div>")
        if s.caption:
            body.append(f"<p class='note'>{html.escape(s.caption)}</p>")
        if getattr(s.data, "columns", None) is not None and len(s.data.columns):  # a DataFrame
            body.append(_table(s.data))
        body.append("</section>")
    if card:
        body.append("<section><h2>Model card</h2>" + _card_table(card) + "</section>")
    run = (f"const specs = {_script_json(specs)};\nconst options = {_script_json(EMBED_OPTIONS)};\n"
           "specs.forEach((spec, i) => vegaEmbed('#chart-' + i, spec, options).catch(error => {\n"
           "  document.getElementById('chart-' + i).textContent = 'The chart could not be drawn: ' + error;\n"
           "}));")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n"
            f"<script>{javascript_bundle()}</script>\n</head>\n<body>\n" + "\n".join(body)
            + f"\n<script>\n{run}\n</script>\n</body>\n</html>\n")
