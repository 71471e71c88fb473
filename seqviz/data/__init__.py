"""Data: the data cache and its fetcher, tokenizers, corpora read through `datasets`, batching with padding masks."""
