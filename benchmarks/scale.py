"""A model of real size: a transformers Mamba of mamba-130m's shape, traced at T = 1,000; last line is the figure.

24 blocks, 768 wide, 1,536 channels x 16 states, a vocabulary of 50,280 (the shape of state-spaces/mamba-130m-hf),
random weights, saved as safetensors with a seqviz character vocabulary padded to 50,280 tokens (so 1,000 characters
of the held-out Shakespeare text are 1,000 tokens). The folder is written once to a temporary directory (or
``--folder``) and measured in a fresh process, so the figures are a page server's, not the builder's:

* forward: transformers' own ``MambaForCausalLM`` forward (its sequential scan on a CPU) of the 1,000 tokens;
* trace: every block's leaves (``seqviz.trace.walk``: block by block, each block's tensors handed over and dropped
  before the next is computed, as a page reduces a long text), against the forward (goal <= 1.2x);
* peak RSS of that process, the model loaded (goal <= 1.5 GB); beside it, what the views ask: one block's memory
  (``names=["layers.23.s"]``) and the first block's (the trace stops after the block asked for), and the size a
  full trace would hold.

    python -m benchmarks.scale [--tokens 1000] [--folder DIR] [--repeats 3]

One torch thread, as the app runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOKENS = 1000
SHAPE = dict(vocab_size=50280, hidden_size=768, state_size=16, num_hidden_layers=24, intermediate_size=1536,
             conv_kernel=4, time_step_rank=48, use_cache=False)  # state-spaces/mamba-130m-hf's config.json
RATIO_GOAL, RSS_GOAL = 1.2, 1.5  # trace / forward; GB


def build(folder: Path) -> Path:
    """mamba-130m's shape with random weights (transformers' own initialisation) saved in ``folder``."""
    import torch
    from transformers import MambaConfig, MambaForCausalLM

    from seqviz.data.tokenizers import Tokenizer
    from seqviz.introspect.projection import corpus_text

    if (folder / "model.safetensors").is_file():
        return folder
    torch.manual_seed(0)
    model = MambaForCausalLM(MambaConfig(**SHAPE)).eval()
    model.save_pretrained(folder, safe_serialization=True)
    chars = Tokenizer.train("char", corpus_text()[0]).tokens
    filler = [f"<r{i}>" for i in range(SHAPE["vocab_size"] - len(chars))]  # the rest of a 50,280-token vocabulary
    (folder / "vocab.json").write_text(json.dumps({"kind": "char", "tokens": chars + filler}) + "\n")
    return folder


def peak_gb(reset: bool = False) -> float:
    """This process's peak resident set so far, in GB (``reset``: start it again from now, Linux's clear_refs)."""
    status = Path("/proc/self/status").read_text()
    peak = int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 2**20
    if reset:
        Path("/proc/self/clear_refs").write_text("5")
    return peak


def measure(folder: Path, tokens: int, repeats: int) -> dict:
    """Load ``folder`` with seqviz and time the forward, the walked trace and the partial traces at ``tokens``; the
    peak resident set of the process while each runs (the model loaded)."""
    import torch

    import seqviz
    from seqviz.introspect.projection import corpus_text
    from seqviz.trace import walk

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    lm = seqviz.load(folder)
    loaded, rss_loaded = time.perf_counter() - t0, peak_gb()
    text = corpus_text()[0]
    ids = torch.tensor([lm.tokenizer.encode(text[len(text) // 3:][:tokens]).ids])

    def forward():
        with torch.no_grad():
            return lm.model(ids).logits

    held = {}

    def walked():  # every block's leaves, each block's dropped once read (its size summed)
        held["bytes"] = sum(v.numel() * v.element_size() for part in walk(lm, ids) for v in part.values())

    from seqviz.background import release_freed_memory

    peak = {}
    for name, fn in (("trace", walked), ("forward", forward)):  # each one's own peak, the model loaded
        release_freed_memory()  # what the one before freed goes back to the system, as the app does after a run
        peak_gb(reset=True)
        fn()
        peak[name] = peak_gb()
    fwd, trace = [], []
    for _ in range(repeats):  # interleaved: a slow spell of the machine slows both alike
        for fn, spent in ((forward, fwd), (walked, trace)):
            start = time.perf_counter()
            fn()
            spent.append(time.perf_counter() - start)
    one = {}
    for name in (f"layers.{lm.config.n_layers - 1}.s", "layers.0.s"):
        start = time.perf_counter()
        lm.trace(ids, names=[name])
        one[name] = time.perf_counter() - start
    return {"tokens": int(ids.shape[1]), "load_s": loaded, "rss_loaded_gb": rss_loaded, "forward_s": min(fwd),
            "trace_s": min(trace), "one_block_s": one, "full_trace_gb": held["bytes"] / 2**30,
            "peak_gb": peak["trace"], "forward_peak_gb": peak["forward"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=TOKENS)
    parser.add_argument("--folder", type=Path, default=None, help="where the model is (built there if absent)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)  # the fresh process's part
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.folder, args.tokens, args.repeats)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = build(args.folder or Path(tmp) / "mamba-130m-shape")
        run = subprocess.run([sys.executable, "-m", "benchmarks.scale", "--measure", "--folder", str(folder),
                              "--tokens", str(args.tokens), "--repeats", str(args.repeats)],
                             capture_output=True, text=True)
    if run.returncode:
        print(run.stderr[-3000:])
        return 1
    r = json.loads(run.stdout.strip().splitlines()[-1])
    import os

    ratio = r["trace_s"] / r["forward_s"]
    print(f"mamba-130m shape, random weights, T = {r['tokens']:,}; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs; loaded in {r['load_s']:.1f} s (peak RSS {r['rss_loaded_gb']:.2f} GB)")
    print(f"forward (transformers) {r['forward_s']:.2f} s, trace of every block {r['trace_s']:.2f} s "
          f"(best of {args.repeats}, interleaved); a full trace would hold {r['full_trace_gb']:.2f} GB")
    print(f"peak RSS while tracing {r['peak_gb']:.2f} GB; while transformers' forward runs "
          f"{r['forward_peak_gb']:.2f} GB")
    for name, s in r["one_block_s"].items():
        print(f"names=[{name}]: {s:.2f} s")
    print(f"scale: trace/forward {ratio:.2f}x (goal <= {RATIO_GOAL}x), peak RSS {r['peak_gb']:.2f} GB "
          f"(goal <= {RSS_GOAL} GB) at T = {r['tokens']:,}")
    return 0 if ratio <= RATIO_GOAL and r["peak_gb"] <= RSS_GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
