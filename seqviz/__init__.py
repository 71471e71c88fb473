"""seqviz: look inside trained sequence models.

Conventions, stated once for the whole package:

* Tensors are batch-first. A trace maps stable names to tensors of shape
  ``[batch, time, units]`` (or ``[batch, time]`` for per-token scalars such as
  ``tokens``, ``mask`` and ``loss``), always on the CPU, always detached.
* Losses are in nats per token; perplexity is ``exp(loss)``.
* A checkpoint is a folder: ``config.json``, ``model.safetensors``, ``vocab.json``
  and ``card.json``. ``seqviz.load(path)`` opens any of them, and a user's own files (plain
  state dicts, word-vector files, transformers encoder-decoders): see ``seqviz.registry``.
  Loading never unpickles anything.
* The library never imports Streamlit; the app in ``app.py``/``pages/`` does.
"""

# Top-level names resolve on first use (PEP 562), so importing a light submodule such as
# seqviz.charts or seqviz.config does not pull in torch (seconds of app start-up).
_LAZY = {
    "CheckpointError": "seqviz.checkpoints",
    "load": "seqviz.registry",
    "detect": "seqviz.registry",
    "FAMILIES": "seqviz.registry",
    "LMConfig": "seqviz.config",
    "Trace": "seqviz.trace",
    "trace_names": "seqviz.trace",
}
__all__ = sorted(_LAZY)
__version__ = "0.36.0"  # the one place it is written: pyproject.toml reads it


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'seqviz' has no attribute {name!r}")
