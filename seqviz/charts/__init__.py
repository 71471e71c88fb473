"""Altair chart builders: arrays and DataFrames in, a chart out (never displayed here)."""
