"""What an edit of the recurrent state changed: Δ surprisal per token, per character and class, and the
next-token distribution before and after a patch.

Frames from two traces of the same ids (one plain, one run with ``edits``, ``seqviz.models.edits``);
the views in ``seqviz.views.interventions`` draw them. ``loss[t]`` is the surprisal of token t + 1, so
every row names the token that was predicted, the one that got harder or easier.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from seqviz.introspect.units import CLOSE

# The class of a predicted character, in the order a chart lists them (Karpathy et al. 2015's quote
# cell: a closing quote is a surprise when the memory of the open one is gone).
CLASSES = ("closing quote", "closing bracket", "line break", "space", "capital letter", "letter", "digit",
           "punctuation")


def token_classes(tokens: list[str]) -> list[str]:
    """Each token's class (``CLASSES``): a '"' that closes an open one is a closing quote, ')]}' brackets."""
    out, quoted = [], False
    for tok in tokens:
        first = tok[:1]
        if tok == '"':
            out.append("closing quote" if quoted else "punctuation")
            quoted = not quoted
        elif first in CLOSE:
            out.append("closing bracket")
        elif "\n" in tok:
            out.append("line break")
        elif tok.isspace():
            out.append("space")
        elif first.isupper():
            out.append("capital letter")
        elif first.isalpha():
            out.append("letter")
        elif first.isdigit():
            out.append("digit")
        else:
            out.append("punctuation")
    return out


def delta_frame(plain, edited, tokens: list[str], row: int = 0) -> pd.DataFrame:
    """One row per prediction of batch row ``row``: step (of the context's last token), token (the one
    predicted), class, loss (nats) as trained, loss_edited, delta = loss_edited - loss."""
    n = int(plain["loss_mask"][row].sum())
    loss = plain["loss"][row, :n].double().numpy()
    changed = edited["loss"][row, :n].double().numpy()
    predicted = tokens[1:n + 1]
    return pd.DataFrame({"step": np.arange(n), "token": predicted, "class": token_classes(tokens)[1:n + 1],
                         "loss": loss, "loss_edited": changed, "delta": changed - loss})


def sample_frame(plain, edited) -> pd.DataFrame:
    """``delta_frame`` of every text of a batch trace, stacked (a text column numbers them)."""
    frames = []
    for b in range(plain["loss"].shape[0]):
        n = int(plain["mask"][b].sum())
        tokens = list(plain.token_strings[b][:n]) if plain.token_strings else [str(int(i)) for i in
                                                                               plain["tokens"][b, :n]]
        frames.append(delta_frame(plain, edited, tokens, b).assign(text=b))
    return pd.concat(frames, ignore_index=True)


def deltas(plain, edited) -> np.ndarray:
    """Δ surprisal (edited - plain, nats) of every prediction of a batch trace, in ``sample_frame``'s row order:
    a control run's column without building its frame."""
    rows = []
    for b in range(plain["loss"].shape[0]):
        n = int(plain["loss_mask"][b].sum())
        rows.append(edited["loss"][b, :n].double().numpy() - plain["loss"][b, :n].double().numpy())
    return np.concatenate(rows)


def by_token(frame: pd.DataFrame, control: pd.DataFrame, min_count: int = 5) -> pd.DataFrame:
    """Mean Δ per predicted token (seen at least ``min_count`` times), beside the control's mean Δ on the
    same predictions; the most hurt first. ``control``: the control runs' delta, one column per run."""
    joined = frame[["token", "class", "delta"]].assign(delta_random=control.mean(axis=1).to_numpy())
    table = joined.groupby(["token", "class"], sort=False).agg(n=("delta", "size"), delta=("delta", "mean"),
                                                              delta_random=("delta_random", "mean")).reset_index()
    return table[table["n"] >= min_count].sort_values("delta", ascending=False, kind="stable").reset_index(drop=True)


def by_class(frame: pd.DataFrame, control: pd.DataFrame) -> pd.DataFrame:
    """Mean Δ per class of the predicted token (``CLASSES`` order, the absent left out), beside the control's
    (the mean over its runs, and their lowest and highest)."""
    per_run = control.groupby(frame["class"].to_numpy()).mean()  # class x run
    table = frame.groupby("class").agg(n=("delta", "size"), delta=("delta", "mean"))
    table = table.assign(delta_random=per_run.mean(axis=1), random_low=per_run.min(axis=1),
                         random_high=per_run.max(axis=1))
    order = [c for c in CLASSES if c in table.index]
    return table.loc[order].reset_index()


def next_token_shift(before: torch.Tensor, after: torch.Tensor, vocabulary: list[str], top: int = 8,
                     other: torch.Tensor | None = None) -> tuple[pd.DataFrame, float]:
    """The next-token distributions from logits ``before`` and ``after`` [V] (and ``other``'s, the text the
    state came from): the ``top`` tokens by their larger probability, and KL(after ‖ before) in nats."""
    logp, logq = torch.log_softmax(before.double(), -1), torch.log_softmax(after.double(), -1)
    kl = max(0.0, float((logq.exp() * (logq - logp)).sum()))  # >= 0: below it, the two runs agree to rounding
    p, q = logp.exp().numpy(), logq.exp().numpy()
    order = np.argsort(-np.maximum(p, q), kind="stable")[:top]
    frame = pd.DataFrame({"token": [vocabulary[i] for i in order], "before": p[order], "after": q[order]})
    if other is not None:
        frame["other"] = torch.softmax(other.double(), -1).numpy()[order]
    return frame, kl


def random_units(n_units: int, k: int, seed: int, exclude=(), draws: int = 1) -> list[list[int]]:
    """``draws`` sets of ``k`` units drawn without replacement from those not in ``exclude`` (seeded)."""
    pool = np.setdiff1d(np.arange(n_units), np.asarray(list(exclude), dtype=int))
    if k > len(pool):
        raise ValueError(f"{k} random units asked for, but only {len(pool)} units are left to draw from")
    rng = np.random.default_rng(seed)
    return [sorted(int(u) for u in rng.choice(pool, k, replace=False)) for _ in range(draws)]
