"""Which source framing a user's pairs say their model was trained with: each framing's cost in nats per token.

A plain state dict does not say whether its code put a start token, an end token, both or neither around
every source sentence (``conventions.py`` takes the layout's habit, or the spec's word, or a guess). A model
run on the framing it was trained with predicts its targets far better than on another, so the pairs the user
gives (a pairs file, or one typed sentence and its reference) settle it: each framing the source vocabulary
allows is scored teacher-forced, as the mean negative log-likelihood of the reference tokens (the end token
included), and the model's own framing is compared with the best.

The model's framing is called worse when it costs more than ``MIN_GAP`` nats/token over the best and more
than ``MIN_SE`` standard errors (the errors of a ratio of per-pair sums: tokens of one sentence are not
independent), or, with a single pair, more than ``ONE_PAIR_GAP``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from seqviz.seq2seq.vocab import BOS_ID, EOS_ID

FRAMINGS = ((False, True), (True, True), (False, False), (True, False))  # (start token, end token)
MIN_GAP, MIN_SE, ONE_PAIR_GAP = 0.02, 3.0, 0.25  # nats/token; standard errors; nats/token for one pair
MAX_PAIRS = 200  # pairs scored per framing (the first ones): enough to tell framings apart by far


@dataclass(frozen=True)
class Framing:
    """One way of framing the source, and what the pairs cost the model framed so."""

    source_bos: bool  # the start token before the sentence
    source_eos: bool  # the end token after it
    label: str  # e.g. "<sos> … <eos>", in the model's own spelling of its tokens
    nats: float  # mean −log p of the reference tokens (end token included), teacher-forced
    per_pair: tuple[float, ...]  # each pair's summed −log p (for the standard error)


@dataclass(frozen=True)
class FramingCheck:
    """Every framing's cost on the pairs, the model's own, the best, and whether the model's is worse."""

    framings: tuple[Framing, ...]  # in ``FRAMINGS`` order, those the source vocabulary allows
    chosen: Framing  # the model's framing (the layout's, the spec's or the guess)
    best: Framing  # the cheapest
    pairs: int  # pairs scored
    tokens: int  # reference tokens scored (end tokens included)
    gap: float  # chosen.nats − best.nats (0 when the model's framing is the best)
    se: float  # the gap's standard error (nan for one pair)
    worse: bool  # the gap is beyond noise (see the module docstring)
    fields: dict  # the spec fields that select the best framing where the model's differs: {"source_bos": true}
    origin: dict  # field -> where the model's value came from ("layout", "spec", "guess")


def label(vocab, bos: bool, eos: bool) -> str:
    """``<sos> … <eos>``-like text in the vocabulary's own spelling of its start and end tokens."""
    return " ".join([vocab.tokens[BOS_ID]] * bos + ["…"] + [vocab.tokens[EOS_ID]] * eos)


def pair_costs(model, pairs, bos: bool, eos: bool, batch_size: int = 64) -> np.ndarray:
    """Each pair's summed −log p of its reference tokens + end token, the source framed (bos, eos): [P, 2]
    (nats, tokens). ``pairs``: ``seqviz.seq2seq.data.Pair`` in the model's tokens."""
    import torch

    from seqviz.data.tokenizers import pad_batch
    from seqviz.seq2seq.train import tensorize

    out = []
    for start in range(0, len(pairs), batch_size):
        batch = list(pairs[start: start + batch_size])
        seqs = [[BOS_ID] * bos + model.src_vocab.encode(list(p.src)).ids + [EOS_ID] * eos for p in batch]
        src, smask = pad_batch(seqs)
        _, _, tin, tout, tmask = tensorize(batch, model.src_vocab, model.tgt_vocab)
        with torch.no_grad():
            logp = torch.log_softmax(model(src, smask, tin).double(), dim=-1)
        nll = -logp.gather(-1, tout[..., None]).squeeze(-1) * tmask
        out += [(float(nll[b].sum()), int(tmask[b].sum())) for b in range(len(batch))]
    return np.array(out, dtype=np.float64).reshape(-1, 2)


def _gap(chosen: np.ndarray, best: np.ndarray) -> tuple[float, float]:
    """(gap, standard error) of the difference of two per-pair cost tables, per token (a ratio of sums)."""
    d, n = chosen[:, 0] - best[:, 0], chosen[:, 1]
    gap = float(d.sum() / n.sum())
    if len(d) < 2:
        return gap, math.nan
    resid = d - gap * n  # linearised ratio estimator: var(sum d / sum n) ≈ P var(d − gap n) / (sum n)^2
    return gap, float(math.sqrt(len(d) * resid.var(ddof=1)) / n.sum())


def check_framing(model, pairs, max_pairs: int = MAX_PAIRS) -> FramingCheck | None:
    """Score every framing the source vocabulary allows on ``pairs`` (the first ``max_pairs``); None for a model
    that frames no source (seqviz's own encoder-decoders, whose sources are read as trained)."""
    config = model.config
    if not hasattr(config, "source_bos") or not pairs:
        return None
    pairs = list(pairs)[:max_pairs]
    have = getattr(model.src_vocab, "user_ids", [0] * 4)
    costs = {}
    for bos, eos in FRAMINGS:
        if (bos and have[BOS_ID] is None) or (eos and have[EOS_ID] is None):
            continue
        costs[(bos, eos)] = pair_costs(model, pairs, bos, eos)
    framings = {k: Framing(k[0], k[1], label(model.src_vocab, *k), float(c[:, 0].sum() / c[:, 1].sum()),
                           tuple(c[:, 0].tolist())) for k, c in costs.items()}
    mine = (bool(config.source_bos), bool(config.source_eos))
    best = min(framings, key=lambda k: framings[k].nats)
    gap, se = _gap(costs[mine], costs[best])
    worse = gap > ONE_PAIR_GAP if len(pairs) == 1 else gap > MIN_GAP and gap > MIN_SE * se
    fields = {f: v for f, v, m in (("source_bos", best[0], mine[0]), ("source_eos", best[1], mine[1])) if v != m}
    found = getattr(model, "conventions", {}) or {}
    origin = {f: found[f].origin for f in ("source_bos", "source_eos") if f in found}
    return FramingCheck(tuple(framings.values()), framings[mine], framings[best], len(pairs),
                        int(costs[mine][:, 1].sum()), gap, se, bool(worse), fields, origin)
