"""The app's one colour per gate and signal, and one label format for log axes, used by every chart.

A gate keeps its colour on every chart of every page (the style guide's "one per-cell table of
signals ... that everything imports"). The hues are Okabe & Ito's (2008) colour-blind-safe set,
dark enough for a line on white from the back of a room. The GRU's gates reuse the hue of the
LSTM gate that plays the same part (update z keeps the past like the forget gate, the candidate
h̃ is written like the LSTM's candidate g̃) in a darker shade, so a GRU and an LSTM side by side read
alike without two gates sharing one colour.
"""

from __future__ import annotations

import altair as alt

# signal name (seqviz.introspect.gates.SIGNALS) -> colour
SIGNAL_COLOURS = {
    "input": "#0072B2",   # input gate i: blue
    "forget": "#009E73",  # forget gate f: bluish green (the memory that is kept)
    "output": "#D55E00",  # output gate o: vermillion
    "cell": "#CC79A7",    # candidate g̃ (the LSTM's cell candidate): reddish purple
    "c": "#E69F00",       # cell state c: orange
    "h": "#444444",       # hidden state h: dark grey
    "reset": "#56B4E9",   # GRU reset gate r: sky blue
    "update": "#006B4F",  # GRU update gate z (PyTorch's z keeps h_(t-1)): dark green, the forget gate's part
    "new": "#8E3C6F",     # GRU candidate h̃: dark purple, the candidate's part
    "preact": "#7A7A2E",  # RNN pre-activation: olive
    "decay": "#4DB38F",   # Mamba's decay exp(Δ·A): a lighter green, the forget gate's part
    "output_z": "#9E3F00",  # Mamba's output gate SiLU(z): dark vermillion, the output gate's part
    "s": "#A87000",       # Mamba's state s (its slowest state per channel): dark orange, the cell state's part
}
WHAT_IF = "#000000"  # a what-if drawn over a signal's own colour (dashed)
# Models compared on one chart, in the order given (the order a visitor chose them in): Okabe & Ito's hues, dark
# enough for a line on white. Streamlit's theme would give the first two a dark and a light blue.
MODEL_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")

# One format for every log axis: "1", "1e-5", "1e-10" (d3's ".0e"), never "0.00001" beside "1e-10".
# Vega puts ticks at 2..9 x 10^k on a short log range; only powers of ten (and 0.5, the memory
# threshold) are labelled, so an axis never reads "5e-1, 6e-2, 7e-3".
LOG_LABEL_EXPR = ("abs(log(datum.value) / LN10 - round(log(datum.value) / LN10)) > 1e-6 && datum.value != 0.5 ? '' "
                  ": datum.value >= 1 ? format(datum.value, ',.0f') : format(datum.value, '.0e')")


def colour(signal: str) -> str:
    """The colour of one signal; KeyError for a name that is not a signal (a typo should fail loudly)."""
    return SIGNAL_COLOURS[signal]


def signal_scale(signals) -> alt.Scale:
    """An ordinal colour scale giving each of ``signals`` its own colour, in that order."""
    names = list(dict.fromkeys(signals))
    return alt.Scale(domain=names, range=[SIGNAL_COLOURS[s] for s in names])


def model_scale(models) -> alt.Scale:
    """An ordinal colour scale giving each of ``models`` its own colour, in that order (the legend's too)."""
    names = list(dict.fromkeys(models))
    return alt.Scale(domain=names, range=[MODEL_COLOURS[i % len(MODEL_COLOURS)] for i in range(len(names))])


def log_axis(title: str, **kwargs) -> alt.Axis:
    """A log axis labelled in the one format (``LOG_LABEL_EXPR``)."""
    return alt.Axis(title=title, labelExpr=LOG_LABEL_EXPR, **kwargs)


def label_expr(labels: dict[str, str]) -> str:
    """A Vega expression mapping each stored value to its shown label (others shown as stored)."""
    import json

    return f"({json.dumps(labels, ensure_ascii=False)})[datum.value] || datum.value"
