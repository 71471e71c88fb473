"""Command line: `python -m seqviz train lm|word2vec ...` and `python -m seqviz inspect PATH`.

Each trainer registers its own sub-command through ``TRAINERS``: a function that adds
an argparse sub-parser and returns the function that runs it.
"""

from __future__ import annotations

import argparse
import json
import sys

from seqviz.data.corpus import SHAKESPEARE


def add_lm_parser(sub) -> None:
    p = sub.add_parser("lm", help="train a recurrent language model (RNN/GRU/LSTM)")
    p.add_argument("--cell", choices=["rnn", "gru", "lstm"], default="lstm")
    p.add_argument("--corpus", default=str(SHAKESPEARE),
                   help="folder of .txt files, one .txt file, or a Hub dataset name (online)")
    p.add_argument("--validation-files", nargs="*", default=None, help="file names held out (folder corpus)")
    p.add_argument("--tokenizer", choices=["char", "word"], default="char")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--embed", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--snapshots", default="", help="comma-separated steps to keep snapshots at")
    p.add_argument("--max-minutes", type=float, default=None, help="stop cleanly after this much wall time")
    p.add_argument("--device", default="auto", help="auto (CUDA + bf16 where available), cpu, cuda")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for torch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resume", action="store_true", help="continue from --out's last saved progress")
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    p.set_defaults(run=run_train_lm)


def run_train_lm(args) -> int:
    import torch

    from seqviz.config import LMConfig
    from seqviz.data.corpus import load_corpus
    from seqviz.train.lm import TrainConfig, train_lm
    from seqviz.train.progress import progress_bar

    if args.threads:
        torch.set_num_threads(args.threads)
    corpus = load_corpus(args.corpus, args.validation_files)
    model_cfg = LMConfig(cell=args.cell, n_layers=args.layers, d_embed=args.embed, d_hidden=args.hidden,
                         dropout=args.dropout, tokenizer=args.tokenizer, vocab_size=1)
    snaps = tuple(int(s) for s in args.snapshots.split(",") if s.strip())
    train_cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr,
                            clip=args.clip, eval_every=args.eval_every, snapshot_steps=snaps,
                            max_minutes=args.max_minutes, seed=args.seed, device=args.device)
    callback = progress_bar(
        args.steps, lambda i: {"loss": f"{i['loss']:.3f}", "tok_s": f"{i['tokens_per_s']:.0f}"},
        lambda card: print(f"val_loss {card['val_loss']} nats/token, perplexity {card['val_perplexity']}, "
                           f"{card['training_steps']} steps in {card['wall_time_s']} s -> {args.out}"))
    train_lm(model_cfg, train_cfg, corpus, args.out, resume=args.resume, callback=callback)
    return 0


def open_for_inspect(path: str):
    """What ``inspect`` opens: a checkpoint folder, a weight file + spec, a ``.zip`` of a folder
    (checked exactly like an app upload), or a word2vec/GloVe vector file. When the server's
    ``SEQVIZ_ALLOWED_DIRS`` is set, a path outside it is refused here as in the app."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from seqviz.checkpoints import UPLOAD_PREFIX, CheckpointError, check_allowed
    from seqviz.loading import load_any
    from seqviz.uploads import MAX_UPLOAD_BYTES, extract_upload, limit_text
    from seqviz.word2vec.formats import PICKLE_SUFFIXES, load_vectors

    p = Path(path).expanduser()
    if os.environ.get("SEQVIZ_ALLOWED_DIRS") is not None and p.exists():
        check_allowed(p)
    suffix = p.suffix.lower()
    if p.is_file() and suffix == ".zip":
        if p.stat().st_size > MAX_UPLOAD_BYTES:
            raise CheckpointError(p, f"zip is {p.stat().st_size:,} bytes, over the {limit_text()} upload limit")
        dest = Path(tempfile.mkdtemp(prefix=UPLOAD_PREFIX))  # messages name it "upload/..."
        try:
            return load_any(extract_upload([(p.name, p.read_bytes())], dest))
        finally:
            shutil.rmtree(dest, ignore_errors=True)
    has_spec = p.with_suffix(".json").is_file() or (p.parent / "spec.json").is_file()
    if p.is_file() and (suffix in (".txt", ".vec") + PICKLE_SUFFIXES or (suffix == ".bin" and not has_spec)):
        return load_vectors(p)
    return load_any(path)


def inspect(args) -> int:
    """Print a checkpoint's card, or exit 2 with a one-line reason."""
    from seqviz.checkpoints import CheckpointError

    try:
        model = open_for_inspect(args.path)
    except (CheckpointError, OSError) as e:  # OSError: unreadable path (permissions, a device, ...)
        print("error: " + " ".join(str(e).split()), file=sys.stderr)
        return 2
    card = dict(getattr(model, "card", {}) or {})
    card.pop("history", None)
    print(json.dumps(card, indent=2, ensure_ascii=False))
    return 0


TRAINERS = [add_lm_parser]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m seqviz", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train a model and write a checkpoint folder")
    kinds = train.add_subparsers(dest="kind", required=True)
    for add in TRAINERS:
        add(kinds)
    for optional in ("seqviz.word2vec.cli", "seqviz.seq2seq.cli"):
        try:
            module = __import__(optional, fromlist=["add_parser"])
        except ImportError:
            continue
        module.add_parser(kinds)
    ins = sub.add_parser("inspect", help="print a checkpoint's card (exit 2 if invalid or unsafe)")
    ins.add_argument("path")
    ins.set_defaults(run=inspect)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)
