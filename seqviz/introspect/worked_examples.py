"""The seeds' worked examples (chapter 5 and stations S4/S6), computed from their formulas.

Nothing here is typed in: every cell of every table is the forward pass (or the product
of its factors) at the parameters the user chose.
"""

from __future__ import annotations

import math

import pandas as pd


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


def scalar_rnn(w_hh: float, w_xh: float = 1.0, b: float = 0.0, h0: float = 0.0,
               xs=(1.0, 0.5, -0.2)) -> pd.DataFrame:
    """h_t = tanh(w_hh h_{t-1} + w_xh x_t + b) and dh_t/dh_{t-1} = (1 - h_t^2) w_hh.

    ``product`` is dh_t/dh_1 = prod_{j=2}^{t} dh_j/dh_{j-1} (chapter 5's 'gradient chain').
    """
    rows, h, product = [], h0, 1.0
    for t, x in enumerate(xs, start=1):
        pre = w_hh * h + w_xh * x + b
        h = math.tanh(pre)
        factor = (1 - h * h) * w_hh
        if t >= 2:
            product *= factor
        rows.append({"t": t, "x_t": x, "w_hh·h_{t-1} + w_xh·x_t + b": pre, "h_t": h,
                     "∂h_t/∂h_{t-1}": factor if t >= 2 else float("nan"),
                     "∂h_t/∂h_1": product})
    return pd.DataFrame(rows)


# Chapter 5's 2-step scalar LSTM: each gate's weights act on [h_{t-1}, x_t].
SEED_LSTM = {"f": (0.1, 0.9, 0.5), "i": (0.3, 0.7, -0.2), "c": (0.2, 0.8, 0.1), "o": (0.4, 0.6, 0.0)}


def scalar_lstm(weights: dict = SEED_LSTM, xs=(1.0, 0.0), h0: float = 0.0, c0: float = 0.0) -> pd.DataFrame:
    """f, i, C~, C, o, h per step for a one-unit LSTM (weights: gate -> (w_h, w_x, b))."""
    rows, h, c = [], h0, c0
    for t, x in enumerate(xs, start=1):
        def pre(g):
            w_h, w_x, b = weights[g]
            return w_h * h + w_x * x + b

        f, i, o = _sigmoid(pre("f")), _sigmoid(pre("i")), _sigmoid(pre("o"))
        c_tilde = math.tanh(pre("c"))
        c = f * c + i * c_tilde
        h = o * math.tanh(c)
        rows.append({"t": t, "x_t": x, "f_t": f, "i_t": i, "C̃_t": c_tilde, "C_t": c, "o_t": o, "h_t": h})
    return pd.DataFrame(rows)


def forget_products(fs=(1.0, 0.99, 0.9), steps: int = 100, marks=(1, 10, 20, 50, 100)) -> pd.DataFrame:
    """Station S6: the cell-state path's gain f^k after k steps for constant forget gates."""
    rows = []
    for f in fs:
        for k in range(0, steps + 1):
            rows.append({"f": f, "k": k, "f^k": f ** k, "marked": k in marks})
    return pd.DataFrame(rows)


def norm_gamma_bound(norms=(0.9, 1.0, 1.1), gamma: float = 1.0, distances=(1, 10, 50, 100, 200)) -> pd.DataFrame:
    """Station S4: the bound (||W_hh|| * gamma)^(t-k) on ||dh_t/dh_k||, gamma = max|tanh'| = 1."""
    return pd.DataFrame([{"‖W_hh‖": n, "γ": gamma, "t − k": d, "(‖W‖·γ)^(t−k)": (n * gamma) ** d}
                         for n in norms for d in distances])


# Chapter 5, section 1.4, Step 4: the book's printed dh_3/dh_1 at its three W_hh (a quotation, shown as
# "printed"; ``book_method`` recomputes it and the tests check that it does, to the book's rounding).
BOOK_PRINTED = {0.5: 0.1224, 0.9: 0.3965, 2.0: 1.9581}
BOOK_STATES_W = 0.5  # the W_hh whose forward pass the book's table reuses for every row


def book_method(w_hh: float, **kwargs) -> pd.DataFrame:
    """The book's table: factors (1 - h_t^2) w_hh with h_t from the W_hh = 0.5 forward pass, at any w_hh.

    This is the slip in the chapter's Step 4: the states change with W_hh, the table does not.
    """
    h = scalar_rnn(BOOK_STATES_W, **kwargs)["h_t"].tolist()
    factors = [(1 - v * v) * w_hh for v in h[1:]]
    return pd.DataFrame({"t": [2, 3], "∂h_t/∂h_{t-1}": factors, "∂h_t/∂h_1": [factors[0], factors[0] * factors[1]]})


def book_comparison(ws) -> pd.DataFrame:
    """One row per W_hh: the true forward pass (h_2, 1 - h_2^2, dh_3/dh_1) beside the book's method and print."""
    rows = []
    for w in sorted(set(round(float(v), 4) for v in ws)):
        true = scalar_rnn(w)
        rows.append({"W_hh": w, "h_2": true["h_t"][1], "1 − h_2²": 1 - true["h_t"][1] ** 2,
                     "∂h_3/∂h_1": true["∂h_t/∂h_1"].iloc[-1],
                     "∂h_3/∂h_1 (book's method)": book_method(w)["∂h_t/∂h_1"].iloc[-1],
                     "∂h_3/∂h_1 (book, printed)": BOOK_PRINTED.get(w, float("nan"))})
    return pd.DataFrame(rows)
