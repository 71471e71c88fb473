"""Each page's main chart without the app: ``python -m seqviz figure PAGE --checkpoint PATH --out fig.svg``.

``FIGURES`` maps a page name (as in ``pages/``) to a function ``(model, text, **options) ->
(chart, frame, footnote)``: the Altair chart the page draws first, the numbers behind it and
a line naming the state (model, text, options). Each calls the library functions the page
calls, with the page's defaults, so a paper's build script gets the figure a reader of the
app sees. The file type follows ``--out``: .svg, .png (2x) or .html (interactive, offline).
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

HAMLET = ("To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
          "The slings and arrows of outrageous fortune")


def _name(model) -> str:
    return (getattr(model, "card", None) or {}).get("name") or type(model).__name__


def _ids(model, text: str, limit: int) -> list[int]:
    from seqviz.introspect.language import prepare

    ids, _, _, _ = prepare(model.tokenizer, text, limit)
    if len(ids) < 2:
        raise ValueError("the text needs at least two tokens this model knows")
    return ids


def _texts(raw: str) -> list[str]:
    """Several texts in one string, separated by a line holding only ``---`` (as on the app's pages)."""
    parts, current = [], []
    for line in raw.split("\n"):
        if line.strip() == "---":
            parts.append("\n".join(current))
            current = []
        else:
            current.append(line)
    return [p for p in parts + ["\n".join(current)] if p.strip()]


# ------------------------------------------------------------------ recurrent language models
def language_model(model, text: str, unit: str = "nats"):
    """Surprisal per token, bars coloured from certain to a uniform guess (ln V), as on the page."""
    from seqviz.export import state_line
    from seqviz.views.language import surprisal

    view = surprisal(model, text, unit)
    if view.chart is None:
        raise ValueError("a single token has nothing before it to predict it from; give more text")
    return view.chart, view.data, state_line(_name(model), text, unit=unit,
                                             perplexity=f"{view.facts['perplexity']:.2f}")


def trajectories(model, text: str, layer: int | None = None, method: str = "pca"):
    """The path h_t walks, in a 2-D space fitted on the reference sample (several texts: '---' lines), as on the page."""
    from seqviz.export import state_line
    from seqviz.views.trajectories import trajectory

    ids = tuple(tuple(_ids(model, t, 1000)) for t in _texts(text)[:6])
    view = trajectory(model, ids, layer=layer, method=method, dims=2, name=_name(model))
    f = view.facts
    return view.chart, view.data, state_line(_name(model), text, layer=f["layer"], projection=f["projection"])


def gates(model, text: str, layer: int = 0, signal: str | None = None, sort: str = "variance",
          units: int = 48, position: int = 0):
    """Token x unit heatmap of one gate (or state) on the page of 64 tokens holding ``position``, as on the page."""
    from seqviz.export import state_line
    from seqviz.views.gates import heat_map

    view = heat_map(model, tuple(_ids(model, text, 1000)), layer=int(layer), signal=signal, order_by=sort,
                    units=int(units), position=int(position))
    f = view.facts
    return view.chart, view.data, state_line(_name(model), text, layer=layer, signal=signal, sorted_by=sort,
                                             tokens=f"{f['first']}–{f['last']} of {f['tokens']}")


def gradient_flow(model, text: str, tokens: int = 100, layer: int = -1, wrt: str = "h"):
    """‖∂L_t/∂h_k‖ against the distance t − k: mean line and 10-90 % band, log axis (the page's distance curve)."""
    from seqviz.export import state_line
    from seqviz.views.gradients import distance_curve

    view = distance_curve(model, text, int(tokens), ((_name(model), model),), layer=int(layer), wrt=wrt)
    return view.chart, view.data, state_line(_name(model), text, tokens=view.facts["tokens"], layer=layer, wrt=wrt)


def exposure_bias_lm(model, text: str = HAMLET, prompt: int = 40, n: int = 60, temperature: float = 0.0,
                     seed: int = 0):
    """log p(real next token) after the real prefix vs after the model's own continuation, as on the page."""
    from seqviz.export import state_line
    from seqviz.views.exposure import gold_logprob

    view = gold_logprob(model, text, int(prompt), int(n), float(temperature), int(seed))
    return view.chart, view.data, state_line(_name(model), text, prompt=prompt, continuation=n,
                                             temperature=temperature, seed=seed)


# ------------------------------------------------------------------ word vectors
def word2vec(model, text: str = "", method: str = "tsne", n: int = 1000, perplexity: float = 30.0, seed: int = 0):
    """The word map (the map stored with the checkpoint when the settings match); ``text``: words to label."""
    from seqviz.export import state_line
    from seqviz.introspect.wordmap import METHODS
    from seqviz.views.word2vec import word_map

    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    labels = tuple(w for w in text.replace(",", " ").split() if w)
    view = word_map(model, method, int(n), float(perplexity), int(seed), labels=labels)
    f = view.facts
    return view.chart, view.data, state_line(_name(model), None, words=f["words"], method=METHODS[method],
                                             perplexity=perplexity if method == "tsne" else None, seed=seed,
                                             trustworthiness=f"{f['trustworthiness']:.3f}")


# ------------------------------------------------------------------ seq2seq
def _own_seq2seq(model):
    from seqviz.seq2seq.model import Seq2Seq

    if not isinstance(model, Seq2Seq):
        raise ValueError("this figure needs one of seqviz's own RNN encoder-decoders")


def attention(model, text: str = "我昨天在公园吃了一个苹果", temperature: float = 1.0, target: int | None = None):
    """Alignment heatmap of a greedy translation; the most reordered target word outlined (as on the page)."""
    from seqviz.export import state_line
    from seqviz.views.attention import alignment, has_attention

    _own_seq2seq(model)
    if not has_attention(model):
        raise ValueError("this model has no attention: its decoder sees one fixed vector, there is no alignment")
    view = alignment(model, text, float(temperature))
    if target is not None or view.facts["target"] != view.facts["most_reordered"]:
        view = alignment(model, text, float(temperature),
                         target=view.facts["most_reordered"] if target is None else int(target))
    return view.chart, view.data, state_line(_name(model), text, translation=view.facts["translation"] or "(empty)",
                                             temperature=temperature)


def exposure_bias(model, text: str, reference: str | None = None):
    """log p(gold token) per position, teacher-forced vs free-running, for one source and its reference."""
    from seqviz.export import state_line
    from seqviz.views.decoding import gold_logprob

    _own_seq2seq(model)
    if not reference:
        raise ValueError("exposure_bias needs the reference translation: --option reference='...'")
    view = gold_logprob(model, text, reference)
    return view.chart, view.data, state_line(_name(model), text, reference=reference,
                                             free_running=view.facts["free_running"] or "(empty)")


FIGURES = {"language_model": language_model, "trajectories": trajectories, "gates": gates,
           "gradient_flow": gradient_flow, "exposure_bias_lm": exposure_bias_lm, "word2vec": word2vec,
           "attention": attention, "exposure_bias": exposure_bias}
MODEL_TYPES = {"language_model": "recurrent_lm", "trajectories": "recurrent_lm", "gates": "recurrent_lm",
               "gradient_flow": "recurrent_lm", "exposure_bias_lm": "recurrent_lm", "word2vec": "word2vec",
               "attention": "seq2seq", "exposure_bias": "seq2seq"}
FORMATS = (".svg", ".png", ".html")


def options_of(page: str) -> dict:
    """The keyword options a page's figure takes, with their defaults."""
    params = list(inspect.signature(FIGURES[page]).parameters.values())[2:]
    return {p.name: p.default for p in params}


def _value(raw: str):
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return {"none": None, "true": True, "false": False}.get(raw.lower(), raw)


def default_text(page: str, path) -> str:
    """The text a page opens with; for exposure_bias, the checkpoint's first held-out source."""
    if page == "exposure_bias":
        from seqviz.introspect.exposure import pair_texts
        from seqviz.seq2seq.checkpoints import load_heldout

        pairs = load_heldout(path)
        return pair_texts(pairs[0])[0] if pairs else ""
    default = inspect.signature(FIGURES[page]).parameters["text"].default
    return HAMLET if default is inspect.Parameter.empty else default


def default_reference(path, text: str) -> str | None:
    """The held-out reference of ``text`` when the checkpoint keeps that pair (spaces ignored)."""
    from seqviz.introspect.exposure import pair_texts
    from seqviz.seq2seq.checkpoints import load_heldout

    wanted = text.replace(" ", "")
    return next((pair_texts(p)[1] for p in load_heldout(path) if "".join(p.src).replace(" ", "") == wanted), None)


def render(page: str, model, text: str, **options):
    """(chart, frame, footnote) of ``page`` (KeyError-free: a ValueError names the known pages)."""
    if page not in FIGURES:
        raise ValueError(f"no figure for page {page!r}; known: {', '.join(FIGURES)}")
    unknown = sorted(set(options) - set(options_of(page)))
    if unknown:
        raise ValueError(f"{page} takes the options {', '.join(options_of(page)) or 'none'}; not {', '.join(unknown)}")
    return FIGURES[page](model, text, **options)


def write(chart, frame, footnote: str, out, title: str, card: dict | None = None, link: str | None = None,
          scale: float = 2.0) -> Path:
    """Write the chart to ``out``; its suffix picks SVG, PNG (``scale`` x) or a self-contained HTML file."""
    from seqviz import export

    out = Path(out)
    if out.suffix.lower() not in FORMATS:
        raise ValueError(f"--out must end in {', '.join(FORMATS)}; got {out.name!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".svg":
        out.write_text(export.to_svg(chart, footnote), encoding="utf-8")
    elif out.suffix.lower() == ".png":
        out.write_bytes(export.to_png(chart, scale, footnote))
    else:
        out.write_text(export.to_html([export.Section(title, chart, frame)], title, link, card, footnote),
                       encoding="utf-8")
    return out


def run_figure(args) -> int:
    """The ``figure`` sub-command: load, compute, write; exit 2 with one line on any refusal."""
    import seqviz
    from seqviz.checkpoints import CheckpointError
    from seqviz.registry import model_type_of

    try:
        options = {}
        for item in args.option or []:
            key, sep, raw = item.partition("=")
            if not sep:
                raise ValueError(f"--option takes KEY=VALUE, got {item!r}")
            options[key.strip().replace("-", "_")] = _value(raw)
        kind = model_type_of(args.checkpoint)
        if kind != MODEL_TYPES[args.page]:
            raise ValueError(f"{args.page} needs a {MODEL_TYPES[args.page]} checkpoint; {args.checkpoint} is {kind}")
        text = (args.text if args.text is not None else Path(args.text_file).read_text(encoding="utf-8")
                if args.text_file else default_text(args.page, args.checkpoint))
        if args.page == "exposure_bias" and "reference" not in options:
            options["reference"] = default_reference(args.checkpoint, text)
        from seqviz.export import public_card

        model = seqviz.load(args.checkpoint)
        chart, frame, footnote = render(args.page, model, text, **options)
        out = write(chart, frame, None if args.no_footnote else footnote, args.out,
                    f"{args.page.replace('_', ' ')} · {_name(model)}", public_card(getattr(model, "card", None)), args.link,
                    args.scale)
    except (CheckpointError, OSError, ValueError) as e:  # CheckpointError is a ValueError
        print("error: " + " ".join(str(e).split()), file=sys.stderr)
        return 2
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
    return 0


def add_parser(sub) -> argparse.ArgumentParser:
    """Add ``figure`` to a ``python -m seqviz`` sub-parser set (``seqviz.cli.build_parser``)."""
    pages = "; ".join(f"{p}: {', '.join(f'{k}={v}' for k, v in options_of(p).items()) or '-'}" for p in FIGURES)
    p = sub.add_parser("figure", help="render a page's main chart to SVG, PNG or a self-contained HTML file",
                       description="Render a page's main chart without the app, as the page draws it by default. "
                                   f"Options per page (--option KEY=VALUE): {pages}.")
    p.add_argument("page", choices=list(FIGURES))
    p.add_argument("--checkpoint", required=True, help="checkpoint folder or file (anything seqviz.load opens)")
    text = p.add_mutually_exclusive_group()
    text.add_argument("--text", help="the text (word2vec: words to label; several trajectories: '---' lines); "
                                     "default: the page's own")
    text.add_argument("--text-file", help="read the text from this file")
    p.add_argument("--out", required=True, help="fig.svg, fig.png or fig.html")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="a page option; repeatable")
    p.add_argument("--scale", type=float, default=2.0, help="PNG pixels per chart pixel")
    p.add_argument("--link", help="HTML only: the app address that reopens this view")
    p.add_argument("--no-footnote", action="store_true", help="leave the state line out of the image")
    p.set_defaults(run=run_figure)
    return p


def main(argv=None) -> int:
    """Run the ``figure`` sub-command alone (``python -m seqviz.figures PAGE ...``)."""
    parser = argparse.ArgumentParser(prog="python -m seqviz")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["figure", *(sys.argv[1:] if argv is None else argv)])
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
