"""`python -m seqviz train seq2seq ...`: the sub-command, registered through ``add_parser``."""

from __future__ import annotations

import argparse
import json


def _default(field: str):
    """The Seq2SeqConfig default, so the CLI and the library cannot drift apart."""
    from seqviz.seq2seq.config import Seq2SeqConfig

    return Seq2SeqConfig.__dataclass_fields__[field].default


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("seq2seq", help="train an encoder-decoder (with or without attention)",
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                              description="Train a GRU/LSTM encoder-decoder on a generated task (or a "
                                          "parallel dataset) and write a checkpoint folder with BLEU by "
                                          "source length in its card. Runs as one process, or as several "
                                          "under `torchrun --nproc_per_node=N -m seqviz train seq2seq ...`.")
    p.add_argument("--task", choices=["zh-en", "dates"], default="zh-en",
                   help="zh-en: the grammar corpus; dates: written dates -> ISO 8601")
    p.add_argument("--dataset", default=None, metavar="NAME_OR_PATH",
                   help="train on a parallel dataset through `datasets` instead of --task: a Hub name "
                        "(online), a folder written by save_to_disk, or a .json/.jsonl/.csv/.tsv/.parquet file")
    p.add_argument("--dataset-config", default=None, help="the dataset's configuration, e.g. 'zh-en'")
    p.add_argument("--source-lang", default="zh", help="--dataset: source language key or column")
    p.add_argument("--target-lang", default="en", help="--dataset: target language key or column")
    p.add_argument("--source-tokens", choices=["char", "word"], default=None,
                   help="--dataset: source units (default: char for zh/ja/th..., else word)")
    p.add_argument("--target-tokens", choices=["char", "word"], default=None, help="--dataset: target units")
    p.add_argument("--max-tokens", type=int, default=100, help="--dataset: drop pairs longer than this")
    p.add_argument("--cell", choices=["gru", "lstm"], default="gru", help="recurrent cell")
    p.add_argument("--attention", action=argparse.BooleanOptionalAction, default=True,
                   help="Bahdanau attention (--no-attention: the decoder sees one fixed vector)")
    p.add_argument("--bidirectional", action=argparse.BooleanOptionalAction, default=True,
                   help="encoder reads both ways")
    p.add_argument("--embed", type=int, default=_default("d_embed"), help="embedding size")
    p.add_argument("--encoder", type=int, default=_default("d_encoder"), help="encoder units per direction")
    p.add_argument("--decoder", type=int, default=_default("d_decoder"), help="decoder units")
    p.add_argument("--attention-size", type=int, default=_default("d_attention"), help="attention MLP units")
    p.add_argument("--dropout", type=float, default=_default("dropout"), help="dropout")
    p.add_argument("--train-pairs", type=int, default=40_000, help="generated (or sampled) training pairs")
    p.add_argument("--test-pairs", type=int, default=1000, help="held-out pairs for the card's BLEU")
    p.add_argument("--max-clauses", type=int, default=7, help="zh-en: most clauses in a sentence")
    p.add_argument("--steps", type=int, default=3000, help="optimizer steps")
    p.add_argument("--batch-size", type=int, default=64, help="sentence pairs per step, over all processes")
    p.add_argument("--lr", type=float, default=2e-3, help="peak Adam learning rate")
    p.add_argument("--clip", type=float, default=1.0, help="gradient-norm clipping threshold")
    p.add_argument("--eval-every", type=int, default=250, help="steps between validation losses")
    p.add_argument("--snapshots", default="", help="comma-separated steps to keep snapshots at")
    p.add_argument("--scheduled-sampling", type=float, default=0.0, metavar="K",
                   help="inverse-sigmoid decay eps_i = k/(k+exp(i/k)) of the teacher-forcing "
                        "probability (Bengio et al. 2015); 0 = always teacher forcing")
    p.add_argument("--max-minutes", type=float, default=None, help="stop cleanly after this much wall time")
    p.add_argument("--device", default="auto", help="auto (CUDA when available, else CPU), cpu, cuda; under "
                                                    "torchrun each process takes cuda:LOCAL_RANK")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for torch")
    p.add_argument("--seed", type=int, default=0, help="seeds the data, the weights and the batch order")
    p.add_argument("--out", required=True, default=argparse.SUPPRESS, help="checkpoint folder to write")
    p.add_argument("--save-layout", choices=["bentrevett"], default=None,
                   help="also write the weights as a plain state dict in bentrevett/pytorch-seq2seq's layout "
                        "(notebook 3, which seqviz's model is) + spec.json, in OUT/<layout>-layout: "
                        "seqviz.load reopens it, to check the round trip of your own files")
    p.set_defaults(run=run)


def run(args) -> int:
    import torch
    from seqviz.train.progress import progress_bar

    from seqviz.config import ConfigError
    from seqviz.seq2seq.config import Seq2SeqConfig
    from seqviz.seq2seq.train import Seq2SeqTrainConfig, train_seq2seq

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        snaps = tuple(int(s) for s in args.snapshots.split(",") if s.strip())
        model_cfg = Seq2SeqConfig(cell=args.cell, bidirectional=args.bidirectional, attention=args.attention,
                                  d_embed=args.embed, d_encoder=args.encoder, d_decoder=args.decoder,
                                  d_attention=args.attention_size, dropout=args.dropout,
                                  src_vocab_size=1, tgt_vocab_size=4)  # vocab sizes come from the data
    except (ValueError, ConfigError) as e:
        print(f"error: {e}")
        return 2
    if args.scheduled_sampling < 0 or args.steps < 1 or args.batch_size < 1 or args.train_pairs < args.batch_size:
        print("error: --steps, --batch-size must be positive, --train-pairs >= --batch-size, "
              "--scheduled-sampling >= 0")
        return 2
    splits = None
    if args.dataset:
        from seqviz.seq2seq.hf_data import dataset_splits

        try:
            splits = dataset_splits(args.dataset, args.source_lang, args.target_lang, args.train_pairs,
                                    min(500, args.test_pairs), args.test_pairs, args.seed, args.dataset_config,
                                    args.source_tokens, args.target_tokens, args.max_tokens)
        except ValueError as e:
            print(f"error: {e}")
            return 2
        print(splits.describe())
    train_cfg = Seq2SeqTrainConfig(task=splits.task if splits else args.task, n_train=args.train_pairs, n_test=args.test_pairs,
                                   max_clauses=args.max_clauses, steps=args.steps, batch_size=args.batch_size,
                                   lr=args.lr, clip=args.clip, eval_every=args.eval_every, snapshot_steps=snaps,
                                   scheduled_sampling=args.scheduled_sampling, max_minutes=args.max_minutes,
                                   seed=args.seed, device=args.device)
    def done(info):
        curve = ", ".join(f"{r['bucket']}: {r['bleu']}" for r in info["bleu_by_length"])
        print(f"test BLEU {info['test_bleu']} (by source length: {curve}); "
              f"{info['training_steps']} steps in {info['wall_time_s']} s -> {args.out}")
        if "alignment" in info:
            print("alignment: " + json.dumps(info["alignment"]))

    from seqviz.train import distributed

    world = distributed.setup(args.device)  # under torchrun: join the others; alone: nothing
    try:
        callback = progress_bar(args.steps, lambda i: {"loss": f"{i['loss']:.3f}",
                                                       "tf": f"{i['teacher_forcing']:.2f}"}, done) if world.main else None
        train_seq2seq(model_cfg, train_cfg, args.out, callback=callback, splits=splits)
        if args.save_layout and world.main:
            from pathlib import Path

            from seqviz.seq2seq.model import Seq2Seq
            from seqviz.seq2seq.plain_export import save_plain_layout

            plain = save_plain_layout(Seq2Seq.from_pretrained(args.out), Path(args.out) / f"{args.save_layout}-layout",
                                      args.save_layout)
            print(f"plain state dict in the {args.save_layout} layout -> {plain}")
        distributed.barrier(world)  # every rank leaves together (see distributed.teardown)
    finally:
        distributed.teardown()
    return 0
