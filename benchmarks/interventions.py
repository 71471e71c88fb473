"""Time an edited trace (one unit of layer 0's state switched off at every step) against the unedited one,
on 1,000 tokens of the shipped LSTM (and each cell at its size, and a Mamba at the shipped one's, random weights); then the Single units
page's two intervention tabs as their widgets move; last line is the figure.

The edited layer runs step by step through the plain cell, the layer above and every unedited run through
the fused kernels (``seqviz.models.edits.stepped_layer``). One thread, as the app runs.

The tabs: each run calls the tab's views (``seqviz.views.interventions``) with the choices the page passes,
a view cached by its choices as ``appkit.cache.view`` does, on a freshly loaded shipped LSTM (the load not
timed). "first": each tab's first run (the held-out sample's unedited trace included); then 20 widget
changes, each moved away and back as the app-latency benchmark does (span, k, the pick, how, seed, state;
the patch tab's k and pick): their p95 (nearest rank) against the goal of 0.5 s of server time.
"""

from __future__ import annotations

from pathlib import Path

import math
import time

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
VIEWS_GOAL = 0.5  # seconds per widget change, p95 (issue 14's app goal)


def ratio(model, ids) -> tuple[float, float]:
    """(unedited seconds, edited / unedited), both traces with every name."""
    held = {"lstm": "c", "mamba": "s"}.get(model.config.cell, "h")
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
    plain, r = ratio(tiny_mamba(), torch.randint(0, 86, (1, TOKENS)))
    print(f"mamba    2x128 (256 channels x 16 states) random weights: unedited {plain * 1e3:6.1f} ms, edited {r:.2f}x "
          "(the edited block's scan stepped)")
    model = seqviz.load(ROOT / "checkpoints" / "shakespeare-char-lstm")
    ids = model.tokenizer.encode(corpus_text()[0][:4 * TOKENS]).ids
    ids = torch.tensor([(ids * (TOKENS // len(ids) + 1))[:TOKENS]])
    plain, r = ratio(model, ids)
    print(f"shakespeare-char-lstm: unedited {plain * 1e3:.1f} ms for {TOKENS:,} tokens, edited {plain * r * 1e3:.1f} ms")
    print(f"edited_trace: {r:.1f}x unedited (goal <= {GOAL:.0f}x)")
    views_figure()


def tiny_mamba():
    """A transformers Mamba the size of the shipped one (2 layers, hidden 128), random weights."""
    from transformers import MambaConfig, MambaForCausalLM

    from seqviz.hf_mamba import MambaLM

    config = MambaConfig(vocab_size=86, hidden_size=128, state_size=16, num_hidden_layers=2, use_cache=False)
    return MambaLM(MambaForCausalLM(config).eval().requires_grad_(False))


def tab_runs(model):
    """(run(tab, changes) -> seconds, the switch-off tab's defaults, the patch tab's): a tab's views at its
    widgets' values, each view computed once per choices (the app's view cache)."""
    from seqviz.introspect.language import prepare
    from seqviz.views import gates
    from seqviz.views import interventions as iv

    ids = tuple(prepare(model.tokenizer, gates.DEFAULT_TEXT, gates.MAX_TOKENS)[0])
    patch = {"ids": tuple(model.tokenizer.encode(iv.PATCH_TARGET).ids),
             "source_ids": tuple(model.tokenizer.encode(iv.PATCH_SOURCE).ids)}
    units = {"layer": 0, "state": "c", "pick": "top", "unit": 0, "k": 1, "seed": 0}
    tabs = {"off": ([iv.switch_off_text, iv.switch_off_classes, iv.switch_off_tokens],
                    {**units, "ids": ids, "how": "zero", "span": (0, len(ids))}),
            "patch": ([iv.patch_next], {**units, **patch})}
    cache = {}

    def run(tab: str, **changed) -> float:
        fns, choices = tabs[tab]
        choices = {**choices, **changed}
        t0 = time.perf_counter()
        for fn in fns:
            mine = {k: v for k, v in choices.items() if k != "span" or fn is iv.switch_off_text}
            key = (fn, tuple(sorted(mine.items())))
            if key not in cache:
                cache[key] = fn(model, **mine)
        return time.perf_counter() - t0

    return run, ids


def views_figure() -> None:
    from seqviz.introspect.projection import reference_source
    from seqviz.views import gates

    model = seqviz.load(ROOT / "checkpoints" / "shakespeare-char-lstm")  # a fresh model: nothing kept yet
    run, ids = tab_runs(model)
    first = {tab: run(tab) for tab in ("off", "patch")}
    top = int(gates.memory_spans(model, ids, 0, 0, 0.0).facts["unit"])  # the page's first unit for "one unit"
    moves = [("off", {"span": (10, len(ids))}), ("off", {"span": (0, 60)}), ("off", {"k": 2}), ("off", {"k": 3}),
             ("off", {"pick": "one", "unit": top}), ("off", {"how": "mean"}), ("off", {"seed": 1}),
             ("off", {"state": "h"}), ("patch", {"k": 2}), ("patch", {"pick": "one", "unit": top})]
    times = []
    for tab, changed in moves:  # away, then back to the defaults
        times += [run(tab, **changed), run(tab)]
        print(f"  {tab:5s} {changed}: {times[-2]:.3f}s, back {times[-1]:.3f}s")
    p95 = sorted(times)[math.ceil(0.95 * len(times)) - 1]
    print(f"sample: {reference_source()}; first runs: switch-off tab {first['off']:.2f}s, patch tab "
          f"{first['patch']:.2f}s; {len(times)} changes, median {sorted(times)[len(times) // 2]:.3f}s")
    print(f"intervention_views: first {max(first.values()):.2f}s, p95 {p95:.2f}s (goal <= {VIEWS_GOAL}s)")


if __name__ == "__main__":
    main()
