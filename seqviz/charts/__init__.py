"""Altair chart builders: arrays and DataFrames in, a chart out (never displayed here)."""

import pandas as pd


def require_columns(frame: pd.DataFrame, needed: set[str], what: str) -> None:
    """Raise a ValueError naming the missing columns, or saying the table is empty."""
    missing = sorted(needed - set(frame.columns))
    if missing:
        raise ValueError(f"{what} needs columns {missing}; got {list(frame.columns)}")
    if frame.empty:
        raise ValueError(f"{what}: nothing to draw (the table is empty)")


def props(chart, **kwargs):
    """``chart.properties(**kwargs)`` without Altair's check of each property against the Vega-Lite schema.

    That check runs jsonschema on every call, ~20 ms each on the 2-core server (measured), and
    a chart that sets width, height and title pays it three times. The builders' whole output is
    validated against the schema in tests/charts instead.
    """
    copy = chart.copy(deep=False)
    for key, value in kwargs.items():
        setattr(copy, key, value)
    return copy


def tips(*fields) -> list:
    """Tooltip channels: a shorthand string ("t:Q") becomes ``alt.Tooltip``, a channel object stays as it is.

    Altair turns a shorthand string into its channel itself, but by building its whole schema
    table each time (~8 ms a string, measured); the builders therefore pass channel objects.
    """
    import altair as alt

    return [alt.Tooltip(f) if isinstance(f, str) else f for f in fields]
