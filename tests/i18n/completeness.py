"""Finding English the Chinese interface still shows: ``untranslated(strings)`` and what feeds it.

``shown_texts(at)`` collects what an AppTest run shows (titles, captions, notices, widget labels,
help and options, tab and expander labels, metric labels, chart titles); ``untranslated`` keeps the
strings with an English word left after allowing model names, token strings, numbers, units,
formulas, file names, acronyms and the technical names the seeds keep in English. Used on every
page in ``lang=zh`` (phase 2), and on the catalogue itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Model names are shown as they are: the shipped folders' names and the tests' tiny ones.
MODEL_NAMES = tuple(sorted({p.name for p in (ROOT / "checkpoints").iterdir() if p.is_dir()}
                           | {"tiny-rnn", "tiny-gru", "tiny-lstm"}))

# Words Chinese text keeps in Latin letters (lower-case; acronyms in capitals pass on their own).
ALLOWED_WORDS = frozenset("""
nats nat bits ms px log ln exp max min argmax softmax sigmoid tanh relu logit logits vs cos sin
seqviz streamlit altair vega pytorch torch safetensors fasttext glove gensim word2vec seq2seq
hugging face hub huggingface shakespeare bahdanau luong karpathy mikolov elman hochreiter
schmidhuber cho pearson google wikipedia lstmvis bertviz tensorboard skip-gram t-sne tsne umap
sgns pmi adam sgd english wordsim simlex
vaswani levy goldberg linzen strobelt bolukbasi venna kaski johnson fei-fei sacrebleu transformer transformers logsumexp
marian bart tensorboard projector gensim diag inf nan float float32 float64 jozefowicz
mamba mingru minlstm silu feng gu dao spearman
falconmamba zuo minlm lucidrains mingru-pytorch rmsnorm lerp
recurrentgemma griffin hawk de
xlstm mlstm slstm beck
""".split())
_UNITS = r"(?:nats?|bits?|ms|s|px|%|MiB|GiB|KiB|MB|GB|KB|k|M)"
_PATTERNS = [
    re.compile(r"<[^<>]{0,200}>"),  # HTML tags and special tokens (<pad>, <unk>)
    re.compile(r"\{[^{}\s]*\}"),  # format placeholders ({task}, {loss:.3f}) and formula indices (h_{t−1})
    re.compile(r"\]\([^)]*\)"),  # a markdown link's target (its text stays)
    re.compile(r"`[^`]*`"),  # code spans
    re.compile(r"\$[^$]+\$"),  # LaTeX
    re.compile(r"\bhttps?://\S+|\bwww\.\S+"),  # URLs
    re.compile(r"(?:~|\.{1,2})?/?[\w.-]+(?:/[\w.-]+)+\.\w+|[\w.-]+\.(?:json|safetensors|csv|txt|html|svg|png|"
               r"zip|vec|bin|model|pt|npy|py|tsv|md)\b|(?<![\w.])\.(?:bin|txt|vec|pt|pth|npz|zip|json|safetensors)\b"),
    # file names and paths, and bare extensions (.bin、.txt)
    re.compile(r"'[^'\n]{0,60}'|\"[^\"\n]{0,60}\"|“[^”\n]{0,60}”|‘[^’\n]{0,60}’|「[^」\n]{0,60}」|«[^»\n]{0,60}»"),  # tokens
    re.compile(r"\?\w+=\w+"),  # ?lang=zh
    re.compile(r"[+-]?\d[\d,.]*\s*" + _UNITS + r"?(?![A-Za-z])"),  # numbers and units
    re.compile(r"\S*[\d_\\^]\S*"),  # names with a digit or underscore: h_t, W_hh, PC1, 3CosAdd, tiny-lstm-2
]
_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*(?:-[A-Za-z]+)*")


def english_words(text: str, allow: Iterable[str] = ()) -> list[str]:
    """The English words ``text`` still shows once the allowed parts are taken out."""
    # a one-character item (a character token: "e", "l") is never a word, and taken out it would cut words
    for item in sorted((a for a in allow if len(a.strip()) > 1), key=len, reverse=True):
        text = text.replace(item, " ")
    for pattern in _PATTERNS:
        text = pattern.sub(" ", text)
    words = []
    for word in _WORD.findall(text.replace("**", " ")):
        bare = word.strip("'’")
        if len(bare) < 2 or bare.lower() in ALLOWED_WORDS:
            continue
        if bare.isupper() or (bare[:-1].isupper() and bare.endswith("s") and len(bare) > 2):
            continue  # RNN, BLEU, LSTMs
        words.append(bare)
    return words


def untranslated(strings: Iterable[str], allow: Iterable[str] = (), catalogue_strings: Iterable[str] = ()) -> list[str]:
    """The strings that still hold an English word.

    ``allow``: further texts shown as they are (model names, the tokens of the text on screen);
    ``catalogue_strings``: translations taken as right whatever they keep in English (a
    translator's choice, e.g. "Teacher Forcing（教师强制）").
    """
    allow, kept = [*MODEL_NAMES, *allow], set(catalogue_strings)
    out = []
    for s in strings:
        s = str(s).strip()
        if s and s not in kept and english_words(s, allow):
            out.append(s)
    return out


def chart_texts(spec) -> list[str]:
    """Every title (chart, axis, legend, header, tooltip) in a Vega-Lite spec (dict or JSON)."""
    spec = json.loads(spec) if isinstance(spec, str) else spec
    found: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "title" and isinstance(value, str):
                    found.append(value)
                elif key == "title" and isinstance(value, list):
                    found.extend(v for v in value if isinstance(v, str))
                elif key == "title" and isinstance(value, dict):
                    found.extend(v for k, v in value.items() if k in ("text", "subtitle") and isinstance(v, str))
                elif key not in ("data", "datasets"):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(spec)
    return found


_LABELLED = ("slider", "select_slider", "selectbox", "multiselect", "radio", "checkbox", "toggle",
             "number_input", "text_input", "text_area", "button", "segmented_control", "date_input",
             "color_picker", "tabs", "expander", "metric", "chat_input")
_VALUED = ("title", "header", "subheader", "caption", "markdown", "info", "warning", "error", "success",
           "toast", "latex")


def shown_texts(at, markdown: bool = True) -> list[str]:
    """What an AppTest run shows as words: headings, notices, labels, help, options, chart titles.

    ``markdown=False`` leaves out ``st.markdown`` bodies (pages that draw token HTML with it).
    """
    texts: list[str] = []
    for kind in _VALUED:
        if kind == "markdown" and not markdown:
            continue
        for element in _elements(at, kind):
            texts.append(str(getattr(element, "value", "") or ""))
    for kind in _LABELLED:
        for element in _elements(at, kind):
            texts.append(str(getattr(element, "label", "") or ""))
            texts.append(str(getattr(element, "help", "") or ""))
            texts.extend(str(o) for o in getattr(element, "options", None) or ())
            texts.append(str(getattr(element, "placeholder", "") or ""))
    for element in _elements(at, "vega_lite_chart"):
        texts.extend(chart_texts(element.proto.spec))
    for element in _elements(at, "dataframe"):
        texts.extend(table_headers(element))
    return [t for t in texts if t.strip()]


def table_headers(element) -> list[str]:
    """The column headers a dataframe shows: each shown column's ``column_config`` label, else its name (the
    index's name too, unless hidden). Cells are data (model names, tokens), not counted."""
    config = json.loads(element.proto.columns or "{}")
    frame = element.value
    index = config.get("_index") or {}
    names = [] if index.get("hidden") else [index["label"]] if index.get("label") else \
        [n for n in frame.index.names if n is not None]
    shown = list(element.proto.column_order) or list(map(str, frame.columns))
    return names + [str((config.get(c) or {}).get("label") or c) for c in shown]


def _elements(at, kind: str) -> list:
    try:
        return list(getattr(at, kind))
    except (AttributeError, KeyError):
        return list(at.get(kind))
