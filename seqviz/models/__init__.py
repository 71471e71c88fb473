"""Models that can return a trace: recurrent language models (and their reference cells)."""

from seqviz.models.recurrent import RecurrentLM

__all__ = ["RecurrentLM"]
