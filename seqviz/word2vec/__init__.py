"""word2vec: train with gensim, load vectors safely, analogies, evaluation.

The loaded type is ``WordVectors`` (``seqviz.word2vec.vectors``); folders, word2vec
binary/text and GloVe files load through ``seqviz.word2vec.formats.load_vectors``.
"""

from seqviz.word2vec.vectors import VocabularyError, WordVectors

__all__ = ["VocabularyError", "WordVectors"]
