"""Library computations that look inside traced models (projections, gate statistics, ...)."""
