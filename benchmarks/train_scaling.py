"""Language-model training throughput with 1 and 2 processes (torchrun, DistributedDataParallel).

    python -m benchmarks.train_scaling [--steps 40] [--repeats 2] [--device auto|cpu|cuda] [--corpus shakespeare]

Trains the same model twice on the same global batch: once as one process
(``python -m seqviz train lm``), once as two (``torchrun --nproc_per_node=2 -m seqviz train lm``:
gloo on CPU, nccl on two GPUs). Each run's card gives ``train_tokens_per_s``: tokens of
the global batch per second of training steps (validation excluded). On CPU the two processes share the
machine's cores (torchrun gives each OMP_NUM_THREADS=1, the single process uses them all),
so the figure measures what DDP adds or costs on this machine, not a second machine. Runs
are interleaved (1, 2, 1, 2, ...) and the best of each counts, since a shared machine's
load slows whichever run it lands on.
The last line printed is the figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(processes: int, args, out: Path) -> dict:
    common = ["train", "lm", "--corpus", args.corpus, "--cell", args.cell, "--layers", str(args.layers),
              "--hidden", str(args.hidden), "--steps", str(args.steps), "--batch-size", str(args.batch_size),
              "--seq-len", str(args.seq_len), "--eval-every", str(args.steps), "--device", args.device,
              "--out", str(out)]
    if args.corpus == "shakespeare":  # a short poem held out: the closing evaluation takes no time
        common += ["--validation-files", "phoenix_and_the_turtle_gut.txt"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if processes == 1:
        command = [sys.executable, "-m", "seqviz", *common]
    else:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
                   "-m", "seqviz", *common]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"train_scaling: {processes} process run failed:\n{done.stderr[-3000:]}")
    return json.loads((out / "card.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--corpus", default="shakespeare", help="fetched into the data cache on first use")
    parser.add_argument("--cell", default="lstm")
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32, help="global: each of 2 processes takes half")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each, interleaved; the best counts")
    args = parser.parse_args()
    rates = {1: 0, 2: 0}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):  # interleaved, best of each: a busy machine slows both alike
            for n in (1, 2):
                card = run(n, args, Path(tmp) / f"p{n}-{i}")
                rates[n] = max(rates[n], card["train_tokens_per_s"])
                print(f"{n} process{'es' if n > 1 else ''}: {card['device']}, {card['training_steps']} steps, "
                      f"{card['train_tokens_per_s']:,} tok/s (steps only), wall {card['wall_time_s']} s, "
                      f"final train loss {card['history'][-1]['train_loss']}, load average "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
    print(f"settings: {args.layers}x{args.hidden} {args.cell.upper()}, global batch {args.batch_size} x "
          f"{args.seq_len} tokens, {args.steps} steps, corpus {args.corpus}, {os.cpu_count()} CPU cores")
    print(f"train_scaling: 1 proc {rates[1]:,} tok/s, 2 procs {rates[2]:,} tok/s ({rates[2] / rates[1]:.2f}x)")


if __name__ == "__main__":
    main()
