"""The title of each data field a chart shows in a tooltip without naming it: one table of msgids, read in the language.

A tooltip entry without a title shows its field's column name ("loss_masked", "h_dist"), in English whatever the
page's language. ``titled`` gives every such entry of a Vega-Lite spec the title this table holds for its field (a
field the table lacks keeps its name, and ``tests/lessons`` fails on it), translated by the caller's ``gettext``.
"""

from __future__ import annotations

from seqviz.text import N_

FIELDS = {
    "step": N_("position"), "position": N_("position"), "value": N_("value"), "text": N_("text"),
    "length": N_("length"), "pads": N_("pad tokens"), "distance": N_("distance"), "cosine": N_("cosine"),
    "loss_masked": N_("loss, pads masked"), "loss_pads_counted": N_("loss, pads counted"), "t": "t", "k": "k",
    "table": N_("curve"), "model": N_("model"), "q10": N_("10th percentile"), "q90": N_("90th percentile"),
    "median": N_("median"), "mean": N_("mean"), "series": N_("run"), "run": N_("run"), "loss": N_("loss (nats)"),
    "grad_norm": "‖g‖", "signal": N_("gate"), "path": N_("path"), "gate": N_("gate value"),
    "product": N_("running product ∏"), "perplexity": N_("perplexity"), "rank": N_("rank"), "word": N_("word"),
    "score": N_("score"), "bucket": N_("source length (units)"), "bleu": "BLEU", "source": N_("source"),
    "target": N_("target"), "weight": N_("weight"), "emitted": N_("emitted"), "gold": N_("reference"),
    "status": N_("status"), "h_dist": "‖h − h_TF‖", "forgotten": N_("forgotten, −log gate"), "label": N_("label"),
    "mark": N_("marked"), "shown": N_("token"), "token": N_("token"), "delta": N_("Δ surprisal (nats)"),
    "unit": N_("unit"), "c": N_("threshold c"), "n": N_("sentences"), "prob": "p", "bits": N_("bits"),
    "rise": N_("rise of the loss"), "chosen": N_("chosen"), "∂h_t/∂h_1": "∂h_t/∂h_1",
    "∂C_t/∂C_(t−k)": "∂C_t/∂C_(t−k)",
}


def titled(node, gettext=lambda s: s) -> None:
    """In place: every tooltip entry of a spec (a dict) that names a field but no title gets ``FIELDS``' title for
    it through ``gettext`` (data rows are left alone)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("data", "datasets"):
                continue
            if key == "tooltip":
                for entry in value if isinstance(value, list) else [value]:
                    if isinstance(entry, dict) and "field" in entry and "title" not in entry:
                        entry["title"] = gettext(FIELDS.get(entry["field"], entry["field"]))
            titled(value, gettext)
    elif isinstance(node, list):
        for item in node:
            titled(item, gettext)
