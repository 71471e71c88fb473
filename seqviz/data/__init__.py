"""Data: tokenizers, corpora read through `datasets`, batching with padding masks."""
