"""Tests of seqviz.seq2seq, the attention studies, charts and page."""
