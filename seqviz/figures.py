"""Each page's main chart without the app: ``python -m seqviz figure NAME --checkpoint PATH --out fig.svg``.

The figures are the views declared with a ``Figure`` (``seqviz.views.registry``): the view's own function, at
its own defaults (or the figure's, where it says), its text made into the view's first choice as the figure
declares, and a footnote naming the state (model, text, options, the facts it quotes). So a paper's build script
gets the figure a reader of the app sees. The file type follows ``--out``: .svg, .png (2x) or .html (interactive,
offline).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seqviz.views.registry import Declared, figures

HAMLET = ("To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
          "The slings and arrows of outrageous fortune")
HELD_OUT = "held-out"  # a figure's default_text: the checkpoint's first held-out source (and its reference)
MOST_TEXTS = 6  # several trajectories: the first six texts
FORMATS = (".svg", ".png", ".html")


def _name(model) -> str:
    return (getattr(model, "card", None) or {}).get("name") or type(model).__name__


def _ids(model, text: str, limit: int = 1000) -> tuple[int, ...]:
    from seqviz.introspect.language import prepare

    ids, _, _, _ = prepare(model.tokenizer, text, limit)
    if len(ids) < 2:
        raise ValueError("the text needs at least two tokens this model knows")
    return tuple(ids)


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


def _text_choice(kind: str, model, text: str):
    """The view's text choice from the figure's text: as given, its ids, several texts' ids, or words."""
    if kind == "ids":
        return _ids(model, text)
    if kind == "texts":
        return tuple(_ids(model, t) for t in _texts(text)[:MOST_TEXTS])
    if kind == "words":
        return tuple(w for w in text.replace(",", " ").split() if w)
    return text


def declared_figure(name: str) -> Declared:
    """The view drawn as figure ``name``; ValueError naming the known ones."""
    found = figures()
    if name not in found:
        raise ValueError(f"no figure {name!r}; known: {', '.join(found)}")
    return found[name]


def options_of(name: str) -> dict:
    """The keyword options figure ``name`` takes, with their defaults (the figure's, else its view's)."""
    d = declared_figure(name)
    return {opt: d.figure.defaults.get(opt, d.defaults.get(choice)) for opt, choice in d.figure.options.items()}


def _value(raw: str):
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return {"none": None, "true": True, "false": False}.get(raw.lower(), raw)


def default_text(name: str, path) -> str:
    """The text a figure opens with; a held-out figure's: the checkpoint's first held-out source."""
    figure = declared_figure(name).figure
    if figure.default_text == HELD_OUT:
        from seqviz.introspect.exposure import pair_texts
        from seqviz.seq2seq.checkpoints import load_heldout

        pairs = load_heldout(path)
        return pair_texts(pairs[0])[0] if pairs else ""
    return HAMLET if figure.default_text is None else figure.default_text


def default_reference(path, text: str) -> str | None:
    """The held-out reference of ``text`` when the checkpoint keeps that pair (spaces ignored)."""
    from seqviz.introspect.exposure import pair_texts
    from seqviz.seq2seq.checkpoints import load_heldout

    wanted = text.replace(" ", "")
    return next((pair_texts(p)[1] for p in load_heldout(path) if "".join(p.src).replace(" ", "") == wanted), None)


def render(name: str, model, text: str, **options):
    """(chart, frame, footnote) of figure ``name``: its view called with the text and options as declared."""
    from seqviz.export import state_line

    d = declared_figure(name)
    figure = d.figure
    unknown = sorted(set(options) - set(figure.options))
    if unknown:
        raise ValueError(f"{name} takes the options {', '.join(figure.options) or 'none'}; not {', '.join(unknown)}")
    given = {**options_of(name), **options}
    for option in figure.required:
        if not given.get(option):
            raise ValueError(f"{name} needs the {option}: --option {option}='...'")
    choices = {figure.options[opt]: value for opt, value in given.items()}
    choices[figure.choice] = _text_choice(figure.text, model, text)
    if figure.compared:
        choices[figure.compared] = ((_name(model), model),)
    view = d.fn(model, **choices)
    if view.chart is None:
        raise ValueError(f"{name}: nothing to draw for this text; give a longer one")
    quoted = {fact: template.format(**view.facts) for fact, template in figure.quotes.items()}
    shown = None if figure.text == "words" else text
    return view.chart, view.data, state_line(_name(model), shown, **{**given, **quoted})


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
        kind, figure = model_type_of(args.checkpoint), declared_figure(args.page)
        if kind != figure.model:
            raise ValueError(f"{args.page} needs a {figure.model} checkpoint; {args.checkpoint} is {kind}")
        text = (args.text if args.text is not None else Path(args.text_file).read_text(encoding="utf-8")
                if args.text_file else default_text(args.page, args.checkpoint))
        if figure.figure.default_text == HELD_OUT and "reference" not in options:
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
    pages = "; ".join(f"{p}: {', '.join(f'{k}={v}' for k, v in options_of(p).items()) or '-'}" for p in figures())
    p = sub.add_parser("figure", help="render a page's main chart to SVG, PNG or a self-contained HTML file",
                       description="Render a page's main chart without the app, as the page draws it by default. "
                                   f"Options per page (--option KEY=VALUE): {pages}.")
    p.add_argument("page", choices=list(figures()))
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
