"""Attention page speed: translate + align one 30-unit sentence, and BLEU by length over 1,000 pairs.

    python -m benchmarks.attention [--checkpoint checkpoints/zh-en-attention-gru] [--threads 1]

* align: median wall time (warm, after three untimed runs) of what the page does for a typed
  sentence: tokenize, greedy-translate with the trace, build the alignment table at T = 0.5.
  Goal <= 100 ms on the CPU.
* bleu_curve: greedy translation of the checkpoint's first 1,000 held-out pairs and sacrebleu
  per length bucket (``bleu_by_length``). Goal <= 10 s.

The last line printed is the figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from seqviz.introspect.attention import alignment_frame, bleu_by_length, translate_text
from seqviz.seq2seq.checkpoints import load_heldout
from seqviz.seq2seq.model import Seq2Seq

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "zh-en-attention-gru"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = Seq2Seq.from_pretrained(args.checkpoint)
    heldout = load_heldout(args.checkpoint)
    if not heldout:
        sys.exit(f"{args.checkpoint} has no heldout.json to measure on")
    pair = min(heldout, key=lambda p: abs(len(p.src) - 30))
    text = " ".join(pair.src)

    def align():
        result = translate_text(model, text)
        return alignment_frame(result["trace"], 0, 0.5, source=result["pieces"])

    for _ in range(3):
        align()
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        align()
        times.append(time.perf_counter() - t0)
    align_ms = 1000 * statistics.median(times)
    print(f"sentence of {len(pair.src)} units, {args.threads} thread(s): align median {align_ms:.1f} ms "
          f"(min {1000 * min(times):.1f}, max {1000 * max(times):.1f}; goal <= 100 ms)")
    t0 = time.perf_counter()
    table = bleu_by_length(model, heldout[: args.pairs])
    curve_s = time.perf_counter() - t0
    print(table.to_string(index=False))
    print(f"bleu_by_length over {min(args.pairs, len(heldout))} pairs: {curve_s:.2f} s (goal <= 10 s)")
    print(f"attention: align {align_ms:.0f}ms, bleu_curve {curve_s:.1f}s")


if __name__ == "__main__":
    main()
