"""Babel extraction methods for the English text that is not a ``_()`` call: chart titles and lesson files.

``babel.cfg`` names them; ``seqviz/locale/README.md`` says how the catalogues are extracted and updated.
"""

from __future__ import annotations

import ast
import json

from seqviz.text import N_

# Titles seqviz/charts builds with f-strings (extract_chart_titles sees only constants), for the values the pages
# pass: listed here (babel.cfg reads this file as Python) so that the app's localize_chart finds them.
LIBRARY_TITLES = (
    # seqviz.charts.word2vec.sections_chart: the Google analogy sections, its measures and legend (issue 51)
    N_("capital-common-countries"), N_("capital-world"), N_("currency"), N_("city-in-state"), N_("family"),
    N_("gram1-adjective-to-adverb"), N_("gram2-opposite"), N_("gram3-comparative"), N_("gram4-superlative"),
    N_("gram5-present-participle"), N_("gram6-nationality-adjective"), N_("gram7-past-tense"), N_("gram8-plural"),
    N_("gram9-plural-verbs"), N_("semantic"), N_("syntactic"), N_("total"), N_("accuracy"), N_("coverage"),
    N_("measure"),
    N_("turn °"), N_("tilt °"),  # seqviz.charts.trajectory.turntable's sliders
    # seqviz.charts.language.surprisal_html: a token's tooltip
    N_("{token} at position {position}: not scored (no context before it)"),
    N_("{token} at position {position}: {value:.3f} {unit} (p = {p:.3g}); the model expected {expected} (p = {pe:.2f})"),
    N_("surprisal (nats)"), N_("surprisal (bits)"), N_("running mean (nats)"), N_("running mean (bits)"),
    N_("25-token mean (nats)"), N_("25-token mean (bits)"),
    # seqviz.charts.gates: a signal's name as the heatmap's legend, and its heatmap title
    N_("input"), N_("forget"), N_("cell"), N_("output"), N_("reset"), N_("update"), N_("new"), N_("preact"),
    N_("input: token × unit"), N_("forget: token × unit"), N_("cell: token × unit"), N_("output: token × unit"),
    N_("c: token × unit"), N_("h: token × unit"), N_("reset: token × unit"), N_("update: token × unit"),
    N_("new: token × unit"), N_("preact: token × unit"),
    N_("f gate"), N_("z gate"), N_("∏ f (log)"), N_("∏ z (log)"),
    N_("cosine with he − she"),  # seqviz.charts.word2vec.bias_chart on the default axis
    N_("score"), N_("cosine"),  # seqviz.charts.word2vec.topk_chart: the value column's name
    # seqviz.charts.exposure: axis titles passed positionally to its curve builder
    N_("output position (bucket start)"), N_("token error rate"), N_("tokens after the first error (d)"),
    N_("P(error at s + d | first error at s)"), N_("sentences"),
    # seqviz.charts.language: the surprisal legend's unit names and its low end (through seqviz.text._)
    N_("nats"), N_("bits"), N_("0 {unit} (certain)"),
)


def extract_chart_titles(fileobj, keywords, comment_tags, options):
    """Every constant ``title="..."`` keyword and ``title: str = "..."`` default in a chart module
    (``seqviz/charts``), so the app's ``localize_chart`` finds them in the catalogue."""
    tree = ast.parse(fileobj.read().decode(options.get("encoding", "utf-8")))
    for node in ast.walk(tree):
        found = []
        if isinstance(node, ast.Call):
            found = [k.value for k in node.keywords if k.arg == "title"]
        elif isinstance(node, ast.arguments):
            named = node.args[len(node.args) - len(node.defaults):] + node.kwonlyargs
            found = [d for a, d in zip(named, node.defaults + list(node.kw_defaults))
                     if d is not None and a.arg == "title"]
        for value in found:
            if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.strip():
                yield value.lineno, None, value.value, ["chart title (seqviz/charts)"]


def extract_lessons(fileobj, keywords, comment_tags, options):
    """Every title, goal, question, option, note and label of a lesson TOML file (``seqviz/lessons/data``)."""
    import tomllib

    from seqviz.lessons.load import texts

    source = fileobj.read().decode("utf-8")
    lines = source.splitlines()
    for message in dict.fromkeys(texts(tomllib.loads(source))):
        probe = json.dumps(message, ensure_ascii=False)[1:40]
        lineno = next((i + 1 for i, line in enumerate(lines) if probe in line), 1)
        yield lineno, "_", message, []
