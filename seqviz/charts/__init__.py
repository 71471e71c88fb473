"""Altair chart builders: arrays and DataFrames in, a chart out (never displayed here)."""

import pandas as pd


def require_columns(frame: pd.DataFrame, needed: set[str], what: str) -> None:
    """Raise a ValueError naming the missing columns, or saying the table is empty."""
    missing = sorted(needed - set(frame.columns))
    if missing:
        raise ValueError(f"{what} needs columns {missing}; got {list(frame.columns)}")
    if frame.empty:
        raise ValueError(f"{what}: nothing to draw (the table is empty)")
