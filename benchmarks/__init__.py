"""One script per figure; the last line each prints is the figure. Run from the repository root:
``python -m benchmarks.<name>`` (so ``seqviz``, ``appkit`` and ``tests`` import without path edits)."""
