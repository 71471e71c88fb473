"""Decoding speed: batched beam search vs a per-hypothesis loop, and the exposure-bias dataset view.

    python -m benchmarks.decoding [--checkpoint checkpoints/zh-en-small-teacher-forcing] [--threads 1]

* beam8: beam search with k = 8 over ``--sentences`` held-out sources (default 40), all beams of
  all sentences as one tensor (``seqviz.decoding.beam_search``) against one decoder call per
  hypothesis (``beam_search_loop``); the outputs must be identical. Goal >= 4x.
* dataset: teacher-forced and free-running decoding of the first 1,000 held-out pairs with the
  error curves the page draws (``error_matrices`` + by-position, after-first-error, the
  conditional matrix). Goal <= 5 s on the CPU.

The last line printed is the figure.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from seqviz.decoding import beam_search, beam_search_loop
from seqviz.introspect import exposure as ex
from seqviz.seq2seq.checkpoints import load_heldout
from seqviz.seq2seq.model import Seq2Seq

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "zh-en-small-teacher-forcing"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sentences", type=int, default=40)
    parser.add_argument("--pairs", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = Seq2Seq.from_pretrained(args.checkpoint)
    pairs = load_heldout(args.checkpoint)
    if not pairs:
        sys.exit(f"{args.checkpoint} has no heldout.json")
    srcs = [list(p.src) for p in pairs[: args.sentences]]
    beam_search(model, srcs[:2], k=8)  # warm-up
    t0 = time.perf_counter()
    batched = beam_search(model, srcs, k=8)
    t_batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop = beam_search_loop(model, srcs, k=8)
    t_loop = time.perf_counter() - t0
    same = all([h.tokens for h in a] == [h.tokens for h in b] for a, b in zip(batched.hypotheses, loop.hypotheses))
    print(f"beam k=8, {len(srcs)} sentences: batched {t_batched:.2f}s, loop {t_loop:.2f}s, "
          f"identical n-best lists: {same}")
    t0 = time.perf_counter()
    errors = ex.error_matrices(model, pairs[: args.pairs])
    ex.error_by_position(errors), ex.after_first_error(errors), ex.conditional_matrix(errors)
    t_data = time.perf_counter() - t0
    s = ex.summary(errors)
    print(f"dataset view, {s['sentences']} pairs: {t_data:.2f}s; token error TF {s['tf']['token_error_rate']:.4f}, "
          f"FR {s['fr']['token_error_rate']:.4f}")
    if not same:
        print("WARNING: batched and loop beam search disagree")
    print(f"decoding: beam8 {t_loop / t_batched:.1f}x vs loop, dataset {t_data:.2f}s (goals >= 4x, <= 5 s)")


if __name__ == "__main__":
    main()
