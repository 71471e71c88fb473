"""Tables as a reader reads them: human column names in the visitor's language, rounded numbers, "—" for nothing.

Views keep their tables in English keys and full precision (CSV downloads, tests, lessons); a page shows
``readable(view.data, COLUMNS)`` instead of the raw frame, so no page prints ``ms_per_sentence``, "None" or
"96.2012". The column maps live beside the views that make the tables (``N_`` msgids, translated here, when the
table is drawn, in the language of the visitor who draws it).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping

import pandas as pd

from seqviz.text import _

MISSING = "—"  # what a reader sees where a table holds nothing (None, NaN)
PERCENT = "%"  # a ``digits`` entry: the column is a fraction shown as a percentage with one decimal


def cell(value, digits: int | str = 2) -> str:
    """One value as it reads: "—" for None/NaN, a float with ``digits`` decimals (``PERCENT``: "12.5%"), an
    integer as it is, anything else as text (all as text: a column mixing numbers and "—" stays one type)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT:
        return MISSING
    if isinstance(value, bool):
        return "✓" if value else ""
    if digits == PERCENT and isinstance(value, numbers.Real):
        return f"{100 * float(value):.1f}%"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{float(value):.{int(digits)}f}"
    return str(value)


def readable(table: pd.DataFrame, columns: Mapping[str, str], digits: int | Mapping[str, int | str] = 2,
             values: Mapping[str, Callable] | None = None) -> pd.DataFrame:
    """``table``'s ``columns`` (key -> English name, translated now), in that order, as text a reader reads.

    ``digits``: decimals of every float column, or per column (a column left out keeps 2; ``PERCENT`` shows a
    fraction as a percentage). ``values``: per column, a function naming each value (e.g. a strategy's key in the
    visitor's language). A whole-number column of floats (pandas turns an int column holding None into floats)
    reads as integers. Columns of ``table`` not named are left out; a named column it lacks is an error."""
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise KeyError(f"readable: the table has no column {', '.join(missing)} (it has {', '.join(table.columns)})")
    per = digits if isinstance(digits, Mapping) else {}
    out = {}
    for key, name in columns.items():
        col = table[key]
        if values and key in values:
            col = col.map(lambda v, f=values[key]: v if v is None or (isinstance(v, float) and math.isnan(v))
                          else f(v))
        d = per.get(key, 2 if per else digits)
        if d != PERCENT and _whole(col):
            d = 0
        out[_(name)] = [cell(v, d) for v in col]
    return pd.DataFrame(out, index=range(len(table)))


def _whole(col: pd.Series) -> bool:
    """A float column whose every value is a whole number or nothing (an int column pandas widened for None)."""
    if not pd.api.types.is_float_dtype(col.dtype):
        return False
    present = col.dropna()
    return len(present) > 0 and bool((present == present.round()).all())
