"""Time an edited trace (one unit of layer 0's state switched off at every step) against the unedited one,
on 1,000 tokens of the shipped LSTM (and each cell at its size, random weights); last line is the figure.

The edited layer runs step by step through the plain cell, the layer above and every unedited run through
the fused kernels (``seqviz.models.edits.stepped_layer``). One thread, as the app runs.
"""

from __future__ import annotations

from pathlib import Path

import torch

import seqviz
from benchmarks.trace_overhead import best_of_each
from seqviz.config import LMConfig
from seqviz.introspect.projection import corpus_text
from seqviz.models.edits import ablate
from seqviz.models.recurrent import RecurrentLM

ROOT = Path(__file__).resolve().parents[1]
TOKENS = 1000
GOAL = 5.0


def ratio(model, ids) -> tuple[float, float]:
    """(unedited seconds, edited / unedited), both traces with every name."""
    held = "c" if model.config.cell == "lstm" else "h"
    edit = [ablate(f"layers.0.{held}", [0])]
    plain, edited = best_of_each([lambda: model.trace(ids), lambda: model.trace(ids, edits=edit)], repeats=9)
    return plain, edited / plain


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for cell in ("rnn", "gru", "mingru", "minlstm"):
        model = RecurrentLM(LMConfig(cell=cell, n_layers=2, d_embed=64, d_hidden=256, vocab_size=86)).eval()
        plain, r = ratio(model, torch.randint(0, 86, (1, TOKENS)))
        print(f"{cell:8s} 2x256 random weights: unedited {plain * 1e3:6.1f} ms, edited {r:.2f}x")
    model = seqviz.load(ROOT / "checkpoints" / "shakespeare-char-lstm")
    ids = model.tokenizer.encode(corpus_text()[0][:4 * TOKENS]).ids
    ids = torch.tensor([(ids * (TOKENS // len(ids) + 1))[:TOKENS]])
    plain, r = ratio(model, ids)
    print(f"shakespeare-char-lstm: unedited {plain * 1e3:.1f} ms for {TOKENS:,} tokens, edited {plain * r * 1e3:.1f} ms")
    print(f"edited_trace: {r:.1f}x unedited (goal <= {GOAL:.0f}x)")


if __name__ == "__main__":
    main()
