"""Tolerances for comparing float32 results computed on another machine, thread count, batch shape or kernel path
(``ATEN_CPU_CAPABILITY``), each derived from the float32 error of the quantity compared; and ``close``, the one
comparison every shipped-vs-live test uses (tests/app/test_shipped_views.py, tests/lessons/test_shipped_lessons.py).

float32 rounds each operation to a relative U = 2**-24 (6e-8). A recurrent network compounds that through every
step and layer, and a matrix product's sum order changes with the thread count, the batch shape and the CPU's
vector width (BLAS and ATen block it differently), so two correct runs of the same weights on the same text differ
by a few hundred U: relative 2e-5 was seen on per-token losses between machines. From that one measured figure:

* a value computed through the network (a loss, a gate, a state, a probability): relative ``RTOL`` (five times
  2e-5), absolute ``ATOL`` near zero (a loss of 0.007 is -log of p = 0.993, whose own rounding is absolute);
* a difference of two such values (a Δ surprisal when units are switched off): the difference keeps each
  operand's absolute error, not a relative one of its own small size: ``difference(scale)``, scale = the
  operands' size (per-token losses of the shipped models: at most ``LOSS_SCALE`` nats);
* a product of n such factors (a unit's retention gates ∏ f since a position, a gradient through n steps): the
  factors' relative errors add: ``product(n)``.

A real bug (a wrong gate, an off-by-one step) moves values by orders of magnitude more than any of these.
results.json keeps 7 significant digits (seqviz/results.py ``_float32``): relative ``STORED`` = 5e-7, a two-hundredth
of the smallest tolerance here, so the file's rounding never decides a comparison.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

U = 2.0 ** -24  # float32 unit roundoff
SEEN = 2e-5  # relative difference of per-token losses measured between two machines (~330 U)
RTOL = 5 * SEEN  # 1e-4
ATOL = 1e-5
STORED = 5e-7  # results.json's 7 significant digits: half a unit in the 7th digit
LOSS_SCALE = 5.0  # nats: the largest per-token loss a shipped character model averages into a Δ


@dataclass(frozen=True)
class Tol:
    """|a - b| <= atol + rtol * |b|, as numpy.isclose."""

    atol: float = ATOL
    rtol: float = RTOL

    def holds(self, a: float, b: float) -> bool:
        return abs(a - b) <= self.atol + self.rtol * abs(b)


NETWORK = Tol()


def difference(scale: float = LOSS_SCALE) -> Tol:
    """A difference of two network values of size up to ``scale``: each operand's absolute error RTOL * scale,
    and they add (different inputs, no cancellation): 2 * RTOL * scale = 1e-3 for losses of 5 nats. A real
    Δ surprisal is 1e-2 to 1."""
    return Tol(atol=ATOL + 2 * RTOL * scale)


def product(n: int) -> Tol:
    """A product of ``n`` factors computed along the text: each multiplication rounds at a relative U and the
    roundings add (2 U per factor: its own and the product's), over the factors' own network error RTOL."""
    return Tol(rtol=RTOL + 2 * max(1, n) * U)


DELTA = difference()
DELTA_ATOL = DELTA.atol  # kept for callers that pass an absolute tolerance only
# The views whose numbers are differences of two losses (the interventions: Δ surprisal with units switched
# off), by the function's name as the shipped-results key and the lessons' step.view spell it.
LOSS_DIFFERENCES = {"switch_off", "switch_off_text", "target"}  # target: a knockout's Δ loss, and ρ over them
# Views of products along the text: a unit's ∏ of its retention gate over the positions shown (the memory
# charts read at most this many), and a gradient norm carried back through as many steps (the distance curve).
PRODUCTS = {"memory_product": 400, "memory_spans": 400, "distance_curve": 100,
            # memory as attention: a token's share is its write times the decays since, over the text's 172 steps
            "layer_map": 200, "unit_map": 200, "reach": 200, "memory_pair": 200, "word_maps": 200}


def for_view(name: str) -> Tol:
    """The tolerance of a view's numbers, by its function's name (``seqviz.views.gates.memory_product@2`` or
    ``memory_product``)."""
    name = name.split("|")[0].split("@")[0].rsplit(".", 1)[-1]
    if name in LOSS_DIFFERENCES:
        return DELTA
    if name in PRODUCTS:
        return product(PRODUCTS[name])
    return NETWORK


def mismatches(a, b, tol: Tol = NETWORK, path: str = ""):
    """(path, a, b) for each place two JSON values differ: structure exactly, numbers within ``tol``."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            yield path, sorted(a), sorted(b)
            return
        for k in a:
            yield from mismatches(a[k], b[k], tol, f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield path, f"{len(a)} items", f"{len(b)} items"
            return
        for i, (x, y) in enumerate(zip(a, b)):
            yield from mismatches(x, y, tol, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        if not (numbers and tol.holds(a, b)):
            yield path, a, b
    elif a != b and not _same_printed(a, b, tol):
        yield path, a, b


PRINTED = re.compile(r"-?\d+(?:\.(\d+))?(?:e([+-]\d+))?")


def _same_printed(a, b, tol: Tol) -> bool:
    """Two labels that print one number (a tooltip's "7.437e-03"): each is its value rounded to its last digit, so
    values within ``tol`` print one unit of that digit apart at most (7.4365e-03 rounds either way)."""
    if not (isinstance(a, str) and isinstance(b, str)):
        return False
    x, y = PRINTED.fullmatch(a), PRINTED.fullmatch(b)
    if x is None or y is None or (x[1] is None) != (y[1] is None) or x[2] != y[2]:
        return False
    unit = 10.0 ** (-len(x[1] or "") + int(x[2] or 0))
    return abs(float(a) - float(b)) <= unit * 1.0001 + tol.atol + tol.rtol * abs(float(b))


def close(a, b, tol: Tol = NETWORK) -> bool:
    """Two JSON values equal, numbers within ``tol`` (a Tol, or a bare absolute tolerance with RTOL)."""
    tol = tol if isinstance(tol, Tol) else Tol(atol=float(tol))
    return next(mismatches(a, b, tol), None) is None


def explain(a, b, tol: Tol = NETWORK, most: int = 5) -> str:
    """The first ``most`` mismatches, one per line (an assertion's message)."""
    tol = tol if isinstance(tol, Tol) else Tol(atol=float(tol))
    found = []
    for path, x, y in mismatches(a, b, tol):
        found.append(f"{path or '(root)'}: {x!r} vs {y!r}")
        if len(found) == most:
            break
    return f"beyond {tol}:\n" + "\n".join(found)
