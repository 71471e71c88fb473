"""``python -m seqviz precompute PATH``: write the results a checkpoint folder ships beside its weights.

The pages draw these without a pass over data (and the Language-model page its first view without
torch): a language model's scores of the sample texts (``scores.json``) and the views its pages open on, in
every language (``results.json``, ``seqviz.results``), a seq2seq model's held-out study (``exposure.json``, when
the folder keeps ``heldout.json``) and the alignment the Attention page opens on, word vectors' default word map
(``wordmap.json``). Training writes them; this writes them for a folder trained elsewhere or changed
since (each file records the files it was measured on and is used only while they are unchanged).
"""

from __future__ import annotations

from pathlib import Path

from seqviz.files import CheckpointError


def precompute(folder, log=print, everything: bool = False) -> list[Path]:
    """Write the results of one checkpoint folder for its family; the files written. ``results.json`` is rebuilt
    for the views whose declared version or choices changed only (``everything``: all of it)."""
    from seqviz.registry import detect

    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(folder, "precompute writes into a checkpoint folder; give the folder")
    family = detect(folder)
    if family.model_type == "recurrent_lm":  # a transformers Mamba opens the same pages
        from seqviz.introspect.language import write_scores

        return [write_scores(folder), write_opening_views(folder, everything, log)]
    if family.model_type == "seq2seq":
        opening = write_opening_views(folder, everything, log)
        if not (folder / "heldout.json").is_file():
            log(f"{folder}: no heldout.json to measure the exposure-bias study on")
            return [opening]
        from seqviz.introspect.exposure import write_study

        return [write_study(folder), opening]
    if family.model_type == "word2vec":
        return [_word_map(folder)]
    raise CheckpointError(folder, f"{family.description}: seqviz ships no precomputed results for it")


def peers(folder) -> tuple:
    """The checkpoints a page compares ``folder`` with, as the app lists them: (folder name, ``Peer``) of every
    folder beside it that opens on the same pages, in name order (``folder`` among them)."""
    from seqviz.registry import detect
    from seqviz.results import Peer

    kind, found = detect(folder).model_type, []
    for config in sorted(Path(folder).parent.glob("*/config.json")):
        try:
            if detect(config.parent).model_type == kind:
                found.append((config.parent.name, Peer(config.parent)))
        except CheckpointError:
            continue  # the app does not list it either
    return tuple(found)


def shipped(model, folder) -> list:
    """The declared views (``seqviz.views.registry``) whose results ``folder`` ships: those of its model type with
    a ``ships`` declaration, where its family has what they need."""
    from seqviz.registry import detect
    from seqviz.views.registry import shipped_with

    kind = detect(folder).model_type
    family = None
    if kind == "recurrent_lm":
        from seqviz.families import of

        family = of(model)
    return shipped_with(kind, family)


def opened(model, folder, load) -> list[tuple]:
    """Every (view, choices for its key, choices to call it with) the views ``folder`` ships declare for
    ``model``: a compared checkpoint is a ``Peer`` in the key and its model, ``load(folder)``, in the call; a
    training snapshot (``at_snapshot``: a ``Snapshot``, the model the view is computed on) ``load(folder, step)``."""
    from seqviz.results import Peer, Snapshot

    def call(choice):
        if isinstance(choice, Peer):
            return load(choice.folder)
        if isinstance(choice, Snapshot):
            return load(choice.folder, choice.step)
        return tuple(map(call, choice)) if isinstance(choice, tuple) else choice

    found = peers(folder)
    return [(d.fn, choices, {k: call(v) for k, v in choices.items()})
            for d in shipped(model, folder) for choices in d.ships(model, found, Path(folder))]


def write_opening_views(folder: Path, everything: bool = False, log=print) -> Path:
    """``results.json``: every view ``opened`` lists, in every language. A view already shipped under its key (its
    declared version and choices) while the files it was measured on are unchanged is kept as written, unless
    ``everything``: a chart change recomputes that view only."""
    import torch

    from seqviz.introspect.projection import passage_only, reading_reference
    from seqviz.registry import load
    from seqviz.results import read_entries, view_key, write_views
    from seqviz.text import LANGUAGES, catalogue, in_language
    from seqviz.views.spec import enable_cjk_theme, to_spec

    torch.set_num_threads(1)  # as the app runs (and as provenance records)
    enable_cjk_theme()  # the app's font stack, as its own charts get it
    model = load(folder)
    loaded = {(Path(folder).resolve(), None): model}
    entries, computed = {}, 0
    with passage_only():  # as a fresh clone computes them: the views that read a corpus sample read the passage
        kept = {} if everything else read_entries(folder)
        for fn, choices, call in opened(model, folder, lambda f, step=None: _kept(loaded, f, load, step)):
            keys = [view_key(fn, choices, lang) for lang in LANGUAGES]
            if all(key in kept for key in keys):
                entries.update({key: kept[key] for key in keys})
                continue
            at = call.pop("at_snapshot", model)  # the snapshot a view of one is computed on
            computed += 1
            with reading_reference() as read:  # over every language: a later one may find the sample kept
                for key, lang in zip(keys, LANGUAGES):
                    with in_language(lang):
                        view = fn(at, **call)
                        spec = None if view.chart is None else to_spec(view.chart, catalogue(lang).gettext)
                    entries[key] = {"spec": spec, "facts": view.facts, "data": view.data, "title": view.title}
            for key in keys:
                entries[key]["reads_reference"] = bool(read)
        log(f"{folder}: {computed} views computed, {len(entries) // len(LANGUAGES) - computed} kept as shipped")
        return write_views(folder, entries)


def _kept(loaded: dict, folder, load, step=None):
    """``load(folder)`` (at a snapshot's ``step``), once per folder and step."""
    key = (Path(folder).resolve(), step)
    if key not in loaded:
        loaded[key] = load(key[0]) if step is None else load(key[0], snapshot=step)
    return loaded[key]


def _word_map(folder: Path) -> Path:
    """The default word map of a seqviz word2vec folder, as training makes it."""
    from seqviz.introspect.wordmap import DEFAULT, FILE, MIN_POINTS, save_word_map, word_map
    from seqviz.word2vec.train import DEFAULT_ANALOGY
    from seqviz.word2vec.vectors import WordVectors

    wv = WordVectors.from_pretrained(folder)
    settings = {**DEFAULT, "n": min(DEFAULT["n"], len(wv))}
    settings["perplexity"] = max(2.0, min(float(settings["perplexity"]), (settings["n"] - 1) // 3))
    if settings["n"] < MIN_POINTS:
        raise CheckpointError(folder, f"{len(wv)} words: too few for a word map (at least {MIN_POINTS})")
    return save_word_map(word_map(wv, **settings, extra_words=DEFAULT_ANALOGY), folder / FILE)


def add_parser(sub) -> None:
    p = sub.add_parser("precompute", help="write the results a checkpoint folder ships (scores, exposure "
                       "study, word map) for a folder trained elsewhere or changed since",
                       description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="*", help="checkpoint folders")
    p.add_argument("--all", action="store_true", dest="everything",
                   help="recompute every shipped view, not only those whose declared version or choices changed")
    p.add_argument("--lessons", action="store_true", help="also the lessons' views at their defaults, on the "
                   "checkpoints under ./checkpoints (seqviz/lessons/data/results.json)")
    p.set_defaults(run=run)


def run(args) -> int:
    import sys

    status = 0
    if not args.folders and not args.lessons:
        print("error: give checkpoint folders, or --lessons", file=sys.stderr)
        return 2
    if args.lessons:
        from seqviz.lessons import shipped

        root = Path("checkpoints")
        path = shipped.write({f.name: f for f in sorted(root.iterdir()) if (f / "config.json").is_file()},
                             everything=args.everything)
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB)")
    for folder in args.folders:
        try:
            for path in precompute(folder, everything=args.everything):
                print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB)")
        except (CheckpointError, ValueError, OSError) as e:
            print("error: " + " ".join(str(e).split()), file=sys.stderr)
            status = 2
    return status
