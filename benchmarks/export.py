"""Export speed: seconds to write each page's main chart as SVG, PNG (2x) and a self-contained HTML file.

    python -m benchmarks.export [--repeat 3] [--lm checkpoints/shakespeare-char-lstm]

Each page's chart is computed once from a shipped checkpoint (``seqviz.figures``, the
page's defaults); only the export is timed, from the Altair chart as the page holds it
(``to_dict`` included), median of ``--repeat`` runs after one warm-up. Building the
inline Vega bundle for HTML happens once per process and is printed on its own line.
Goal: <= 1 s per chart and format on the shipped models (issue 19). The last line is the figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from seqviz import export, figures

ROOT = Path(__file__).resolve().parents[1]

CHECKPOINTS = {"recurrent_lm": "shakespeare-char-lstm", "word2vec": "word2vec-shakespeare",
               "seq2seq": "zh-en-attention-gru"}
SEQ2SEQ = {"exposure_bias": "zh-en-small-teacher-forcing"}  # the page's own default model


def timed(fn, repeat: int) -> float:
    fn()  # warm-up: vl-convert compiles its JavaScript on first use
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lm", default=str(ROOT / "checkpoints" / CHECKPOINTS["recurrent_lm"]))
    args = parser.parse_args()
    import seqviz

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; fonts: "
          f"{', '.join(f.name for f in export.cjk_font_files()) or 'no CJK font'}", flush=True)
    t0 = time.perf_counter()
    export.javascript_bundle()
    print(f"html bundle (once per process): {time.perf_counter() - t0:.2f} s", flush=True)
    worst = {"svg": (0.0, ""), "png": (0.0, ""), "html": (0.0, "")}
    from seqviz.views.registry import figures as declared_figures

    for page, declared in declared_figures().items():
        kind = declared.model
        path = args.lm if kind == "recurrent_lm" else ROOT / "checkpoints" / SEQ2SEQ.get(page, CHECKPOINTS[kind])
        text = figures.default_text(page, path)
        options = {"reference": figures.default_reference(path, text)} if page == "exposure_bias" else {}
        chart, frame, note = figures.render(page, seqviz.load(path), text, **options)
        section = [export.Section(page, chart, frame)]
        seconds = {"svg": timed(lambda: export.to_svg(chart, note), args.repeat),
                   "png": timed(lambda: export.to_png(chart, 2.0, note), args.repeat),
                   "html": timed(lambda: export.to_html(section, page, None, None, note), args.repeat)}
        for fmt, s in seconds.items():
            worst[fmt] = max(worst[fmt], (s, page))
        print(f"{page} ({Path(path).name}, {len(frame):,} rows): "
              + ", ".join(f"{fmt} {s:.2f} s" for fmt, s in seconds.items()), flush=True)
    slowest = max(s for s, _ in worst.values())
    print(f"export: svg {worst['svg'][0]:.2f}s, png {worst['png'][0]:.2f}s, html {worst['html'][0]:.2f}s "
          f"(slowest page); {slowest:.2f} s per chart (goal <= 1 s)")


if __name__ == "__main__":
    main()
