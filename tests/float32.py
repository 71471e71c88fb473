"""Tolerances for comparing float32 results computed on another machine, thread count or batch shape.

float32 rounds each operation to a relative 2**-24 (6e-8). A recurrent network compounds that through
every step and layer, and a matrix product's sum order changes with the thread count and the batch
shape (BLAS blocks it differently), so two correct runs of the same weights on the same text differ
by a few hundred ulps: relative 2e-5 was seen on per-token losses between machines. RTOL leaves a
factor of five over that; ATOL covers values near zero (a loss of 0.007 is -log of p = 0.993, whose
own rounding is absolute, not relative). A real bug (a wrong gate, an off-by-one step) moves values
by orders of magnitude more.
"""

RTOL = 1e-4
ATOL = 1e-5
# A difference of two per-token losses (Δ surprisal when units are switched off) carries their rounding in
# absolute terms: losses up to ~5 nats at relative 2e-5 differ by 1e-4 between machines (1.1e-5 was seen on a
# Δ of -0.0116 on an AMD EPYC); five times that. A real Δ is 1e-2 to 1.
DELTA_ATOL = 5e-4
