"""Encoder-decoder models with and without Bahdanau attention, their generated data and training.

``Seq2Seq.trace(src, tgt)`` runs teacher-forced, ``Seq2Seq.trace(src)`` / ``translate``
free-running (greedy); both return a ``Seq2SeqTrace`` with the names of
``seq2seq_trace_names``. ``Seq2Seq.encode`` / ``initial_state`` / ``step`` expose one
decoder step at a time for other decoders (beam search, sampling).
"""

import importlib

__all__ = ["Seq2Seq", "Seq2SeqConfig", "Seq2SeqTrace", "load_heldout", "seq2seq_trace_names"]
_HOME = {"Seq2Seq": "model", "Seq2SeqTrace": "model", "seq2seq_trace_names": "model", "Seq2SeqConfig": "config",
         "load_heldout": "checkpoints"}


def __getattr__(name: str):
    """The package's names, imported on first use (PEP 562): ``seqviz.seq2seq.data`` and ``.vocab`` need no torch,
    so a page reading shipped views and held-out pairs imports them without it."""
    if name in _HOME:
        return getattr(importlib.import_module(f"seqviz.seq2seq.{_HOME[name]}"), name)
    raise AttributeError(f"module 'seqviz.seq2seq' has no attribute {name!r}")
