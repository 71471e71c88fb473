"""word2vec training speed: corpus words per second for skip-gram and CBOW (gensim) on Shakespeare.

    python benchmarks/word2vec_speed.py [--corpus shakespeare] [--epochs 5] [--workers 2]

Both architectures train with the shipped checkpoints' settings (dim 100, window 5,
negative 5, min_count 5) on the same sentences; the figure is corpus words read per second
over all epochs (gensim's raw word count / wall time of ``train``), so reading the corpus
and building the vocabulary are not counted. The machine's load average is printed with
it: on a shared machine the figure moves with whatever else runs.
Goal: skip-gram >= 1,000,000 words/s on 2 idle cores (issue 6). The last line is the figure.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from seqviz.word2vec.train import Word2VecConfig, read_sentences, train_word2vec

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="shakespeare")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    sentences, info = read_sentences(args.corpus)
    print(f"corpus: {info['words']:,} words in {info['sentences']:,} lines; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    rates = {}
    for arch in ("skipgram", "cbow"):
        config = Word2VecConfig(arch=arch, epochs=args.epochs, workers=args.workers)
        _, stats = train_word2vec(config, sentences)
        rates[arch] = stats["words_per_second"]
        print(f"{arch}: {stats['seconds']} s, {stats['words_per_second']:,} words/s "
              f"({stats['effective_words_per_second']:,} after subsampling)", flush=True)
    print(f"word2vec_train: skipgram {rates['skipgram']:,} words/s, cbow {rates['cbow']:,} words/s "
          f"({args.workers} workers, load {os.getloadavg()[0]:.1f}; goal skipgram >= 1,000,000 on 2 idle cores)")


if __name__ == "__main__":
    main()
