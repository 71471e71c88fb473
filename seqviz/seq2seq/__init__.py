"""Encoder-decoder models with and without Bahdanau attention, their generated data and training.

``Seq2Seq.trace(src, tgt)`` runs teacher-forced, ``Seq2Seq.trace(src)`` / ``translate``
free-running (greedy); both return a ``Seq2SeqTrace`` with the names of
``seq2seq_trace_names``. ``Seq2Seq.encode`` / ``initial_state`` / ``step`` expose one
decoder step at a time for other decoders (beam search, sampling).
"""

from seqviz.seq2seq.checkpoints import load_heldout
from seqviz.seq2seq.config import Seq2SeqConfig
from seqviz.seq2seq.model import Seq2Seq, Seq2SeqTrace, seq2seq_trace_names

__all__ = ["Seq2Seq", "Seq2SeqConfig", "Seq2SeqTrace", "load_heldout", "seq2seq_trace_names"]
