"""Benchmark: a warm widget change on the trajectory and gate pages, and the LSTMVis pattern search.

Goal (issue 4): with a 1,000-character text on the shipped LSTM, a rerun after a widget
change takes <= 0.5 s server side (AppTest, caches warm), and a pattern search over the
whole held-out validation text takes <= 1 s (the state index built beforehand, as the app
caches it).

    python -m benchmarks.trace_pages [--checkpoint checkpoints/shakespeare-char-lstm] [--threads 1]

The last line printed is the figure: ``trace_pages: traj <x>s, gates <y>s, search <z>s``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed_reruns(at, changes) -> tuple[list[float], list[float]]:
    """Apply each widget change and time the rerun it causes: (wall seconds, CPU seconds).

    CPU time (all threads of this process; AppTest runs the page in a thread) is what the
    rerun costs the server regardless of how busy the machine is; wall time includes waiting.
    """
    wall, cpu = [], []
    for change in changes:
        change(at)
        w0, c0 = time.perf_counter(), time.process_time()
        at.run()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
        if at.exception:
            raise RuntimeError(f"page raised: {at.exception[0].message}")
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "shakespeare-char-lstm"))
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder = Path(args.checkpoint).resolve()
    if not (folder / "config.json").is_file():
        print(f"no checkpoint at {folder}; train it first or pass --checkpoint")
        return 2
    os.environ["SEQVIZ_CHECKPOINTS"] = str(folder.parent)
    import numpy as np
    import torch
    from streamlit.testing.v1 import AppTest

    from seqviz.registry import load
    from seqviz.introspect.projection import corpus_text
    from seqviz.introspect.units import build_state_index, pattern_search, select_units

    if args.threads:
        torch.set_num_threads(args.threads)
    corpus, source = corpus_text()
    text = corpus[len(corpus) // 3: len(corpus) // 3 + 1000]
    name = folder.name

    def page(file: str) -> AppTest:
        at = AppTest.from_file(str(ROOT / "pages" / file), default_timeout=600)
        at.query_params["recurrent_lm"] = name
        return at

    # --- trajectories: flip the 2-D / 3-D view (both fitted once first, then warm)
    at = page("trajectories.py")
    at.run()
    at.text_area(key="traj_text").input(text)
    at.run()
    views = ["3-D", "2-D"] * (args.repeats + 1)
    traj, traj_cpu = (t[2:] for t in timed_reruns(
        at, [lambda a, v=v: a.radio(key="traj_view").set_value(v) for v in views]))

    # --- gates: move the position slider (trace cached; unit order and charts rebuilt)
    at = page("gates.py")
    at.run()
    at.text_area(key="gate_text").input(text)
    at.run()
    positions = [100, 400, 700, 900, 250, 550][: args.repeats + 1]
    gates, gates_cpu = (t[1:] for t in timed_reruns(
        at, [lambda a, p=p: a.slider(key="gate_pos").set_value(p) for p in positions]))

    # --- pattern search over the whole validation text (index built first, as the app caches it)
    model = load(folder)
    layer = model.config.n_layers - 1
    start = time.perf_counter()
    index = build_state_index(model, corpus, layer)
    build = time.perf_counter() - start
    h = model.trace(text)[f"layers.{layer}.h"][0].numpy()
    span = (500, 506)
    # a threshold that leaves the 8 units most "on" across the span: a realistic, non-empty pattern
    threshold = float(np.sort(h[span[0]:span[1]].min(0))[-8]) - 1e-3
    units = select_units(h, *span, threshold=threshold, off_before=0, off_after=0)
    search = []
    for _ in range(max(args.repeats, 3)):
        start = time.perf_counter()
        hits = pattern_search(index, units, threshold, span[1] - span[0])
        search.append(time.perf_counter() - start)

    print(f"checkpoint {name}, torch threads {torch.get_num_threads()}, text 1,000 characters")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"trajectories reruns (view flip): wall {', '.join(f'{t:.3f}' for t in traj)} s; "
          f"CPU {', '.join(f'{t:.3f}' for t in traj_cpu)} s (goal <= 0.5)")
    print(f"gates reruns (position move):    wall {', '.join(f'{t:.3f}' for t in gates)} s; "
          f"CPU {', '.join(f'{t:.3f}' for t in gates_cpu)} s (goal <= 0.5)")
    print(f"state index over {len(index):,} tokens of {source}: built in {build:.1f} s "
          f"({index.q.nbytes / 2**20:.0f} MiB); {len(units)} units on over span {span} at threshold "
          f"{threshold:.3f}, {len(hits)} matches shown")
    print(f"pattern search: {', '.join(f'{t:.3f}' for t in search)} s (goal <= 1)")
    print(f"trace_pages: traj {statistics.median(traj):.2f}s, gates {statistics.median(gates):.2f}s, "
          f"search {statistics.median(search):.3f}s (wall; CPU traj {statistics.median(traj_cpu):.2f}s, "
          f"gates {statistics.median(gates_cpu):.2f}s)")
    return 0 if np.isfinite(statistics.median(search)) else 1


if __name__ == "__main__":
    sys.exit(main())
