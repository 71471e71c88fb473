"""word2vec page speed: one analogy query, the page opening warm, a fresh t-SNE of 1,000 words.

    python benchmarks/word2vec.py [--checkpoint checkpoints/word2vec-shakespeare] [--repeats 50]

* query: median time of ``analogy()`` (3CosAdd, top 10, ranks with and without exclusion)
  over a 20,000-word x 100-dim random vocabulary. Goal <= 30 ms.
* map: median time for the word2vec page to run again through AppTest once it has been
  opened (the model, the stored word map and the evaluation are warm). Goal <= 2 s.
* tsne1k: ``word_map(n=1000)`` on the checkpoint's 1,000 most frequent words (scikit-learn
  t-SNE, 500 iterations, one thread, PCA init) against scikit-learn's TSNE with its
  defaults (1,000 iterations, all threads) on the same points, with both trustworthiness
  figures. Goal <= 2 s.
Training words/s: benchmarks/word2vec_speed.py. The last line printed is the figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from seqviz.introspect.wordmap import trustworthiness, word_map  # noqa: E402
from seqviz.word2vec.analogy import analogy  # noqa: E402
from seqviz.word2vec.formats import load_checkpoint  # noqa: E402
from seqviz.word2vec.vectors import WordVectors  # noqa: E402


def median_ms(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def page_warm(checkpoints: Path, repeats: int = 3) -> float:
    from streamlit.testing.v1 import AppTest

    os.environ["SEQVIZ_CHECKPOINTS"] = str(checkpoints)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("pages/word2vec.py")
    at.run()
    assert not at.exception, at.exception
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "word2vec-shakespeare"))
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)

    rng = np.random.default_rng(0)
    big = WordVectors([f"w{i}" for i in range(20_000)], rng.normal(size=(20_000, 100)).astype(np.float32))
    query = median_ms(lambda: analogy(big, "w1", "w2", "w3", k=10, expected="w4"), args.repeats)
    mul = median_ms(lambda: analogy(big, "w1", "w2", "w3", "3cosmul", k=10), args.repeats)
    print(f"query: 3CosAdd {query:.1f} ms, 3CosMul {mul:.1f} ms (20,000 x 100)", flush=True)

    page = page_warm(Path(args.checkpoint).parent)
    print(f"page warm rerun: {page:.2f} s", flush=True)

    wv = load_checkpoint(args.checkpoint)
    m = word_map(wv, n=1000, method="tsne", perplexity=30, seed=0)
    from sklearn.manifold import TSNE

    x = wv.unit[wv.top(1000)]
    start = time.perf_counter()
    ref = TSNE(n_components=2, perplexity=30, init="pca", learning_rate="auto", random_state=0).fit_transform(x)
    sk = time.perf_counter() - start
    print(f"tsne1k: ours {m.seconds:.2f} s (trustworthiness {m.trustworthiness:.3f}), scikit-learn defaults "
          f"{sk:.2f} s (trustworthiness {trustworthiness(x, ref):.3f})", flush=True)
    print(f"word2vec: query {query:.1f}ms, map {page:.2f}s, tsne1k {m.seconds:.2f}s ({sk / m.seconds:.1f}x vs sklearn)")


if __name__ == "__main__":
    main()
