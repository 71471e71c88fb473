"""Decoding strategies for the seq2seq models: greedy, batched beam search, sampling.

Beam search keeps every beam of every sentence in one tensor of ``B * k`` decoder rows, so
one ``model.step`` call advances all hypotheses of a batch at once (``beam_search_loop``
is the one-hypothesis-at-a-time reference the tests and ``benchmarks/decoding.py``
compare against; the two return the same hypotheses).

Scores. A hypothesis y_1 .. y_n <eos> has log-probability L = sum_t log p(y_t | y_<t, x)
(the <eos> included) and length-normalised score L / (n + 1) ** alpha (alpha = 1: mean
log-probability per emitted token; alpha = 0: the raw log-probability, which favours short
outputs). At every step each live beam is expanded by every token, the best ``2k``
candidates of a sentence are looked at: those among the best ``k`` that end in <eos> are
finished (as in fairseq; the best ``k`` finished are kept), the best ``k`` others live on. A sentence stops when it has ``k``
finished hypotheses and no live beam can still beat the worst of them:

- ``exact=False`` (default) bounds a live beam by its score at the current length (the
  usual heuristic; with k = 1 it makes beam search exactly greedy decoding);
- ``exact=True`` bounds it by L / max_len ** alpha (log-probabilities only fall, and for
  alpha >= 0 a longer hypothesis divides by more), so the returned best hypothesis is the
  best one the beam can reach; with k at least the number of live prefixes this is the
  global optimum over all outputs of up to ``max_len`` tokens (tested by enumeration).

At ``max_len`` the live beams are added unfinished (no <eos>, ``finished=False``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import torch

from seqviz.seq2seq.model import NEVER_EMITTED, Seq2Seq
from seqviz.seq2seq.vocab import BOS_ID, EOS_ID


@dataclass
class Hypothesis:
    tokens: list[int]  # emitted ids, without <eos>
    logprob: float  # sum of log p over the emitted tokens and the <eos> (when finished)
    score: float  # length-normalised: logprob / (len(tokens) + finished) ** alpha
    finished: bool = True  # ended with <eos> (False: cut at max_len)


@dataclass
class BeamStep:
    """One step of one sentence's beam (the beam-tree view reads these)."""

    t: int  # output position (0 = first emitted token)
    tokens: list[int]  # token each live candidate appended, best first
    parents: list[int]  # index of the beam (previous step's list) it extends
    logprobs: list[float]  # cumulative log-probabilities
    prefixes: list[list[int]] = field(default_factory=list)  # the full prefixes, for the gold check
    finished: list[Hypothesis] = field(default_factory=list)  # hypotheses finished at this step


@dataclass
class BeamResult:
    hypotheses: list[list[Hypothesis]]  # per sentence, best first (length-normalised score)
    history: list[list[BeamStep]] | None  # per sentence, when record=True

    @property
    def best(self) -> list[list[int]]:
        return [h[0].tokens for h in self.hypotheses]


def _norm(logprob: float, length: int, alpha: float) -> float:
    return logprob / max(length, 1) ** alpha


def _keep(hyps: list[Hypothesis], k: int) -> list[Hypothesis]:
    return sorted(hyps, key=lambda h: -h.score)[:k]


def _source(model: Seq2Seq, src):
    ids, mask, _ = model._batch(src, model.src_vocab, "source")
    dev = model.out.weight.device
    return ids.to(dev), mask.to(dev)


def _logprobs(model: Seq2Seq, step) -> torch.Tensor:
    logp = torch.log_softmax(model.logits(step.s, step.context, step.embed).float(), dim=-1)
    logp[:, list(NEVER_EMITTED)] = float("-inf")
    return logp


def _select_state(state, rows):
    return tuple(s[rows] for s in state) if isinstance(state, tuple) else state[rows]


def _done(finished: list[Hypothesis], best_live: float, length: int, k: int, alpha: float,
          exact: bool, max_len: int) -> bool:
    if len(finished) < k:
        return False
    worst = min(h.score for h in finished)
    bound = _norm(best_live, max_len if exact else length, alpha)
    return bound <= worst


@torch.no_grad()
def beam_search(model: Seq2Seq, src, k: int = 4, alpha: float = 1.0, max_len: int | None = None,
                exact: bool = False, record: bool = False) -> BeamResult:
    """Beam search over a batch of sources (anything ``Seq2Seq.trace`` takes); see the module doc."""
    if k < 1:
        raise ValueError("the beam size k must be at least 1")
    ids, mask = _source(model, src)
    B, dev = ids.shape[0], ids.device
    max_len = max_len or model.config.max_target_len
    enc = model.encode(ids, mask)
    rows = torch.arange(B, device=dev).repeat_interleave(k)
    enc = enc.select(rows)
    state = model.initial_state(enc)
    prev = torch.full((B * k,), BOS_ID, device=dev)
    scores = torch.full((B, k), float("-inf"), device=dev)
    scores[:, 0] = 0.0  # one live beam at the start; the others are copies that must not be expanded
    seqs = torch.empty((B * k, 0), dtype=torch.long, device=dev)
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    active = [True] * B
    history = [[] for _ in range(B)] if record else None
    for t in range(max_len):
        step = model.step(enc, state, prev)
        logp = _logprobs(model, step).view(B, k, -1)
        V = logp.shape[-1]
        cand = (scores[:, :, None] + logp).view(B, k * V)
        top, idx = cand.topk(min(2 * k, k * V), dim=1)  # best first
        parent, token = idx // V, idx % V
        new_scores = torch.full((B, k), float("-inf"), device=dev)
        new_parent = torch.zeros((B, k), dtype=torch.long, device=dev)
        new_token = torch.full((B, k), EOS_ID, dtype=torch.long, device=dev)
        top_l, parent_l, token_l = top.tolist(), parent.tolist(), token.tolist()
        for b in range(B):
            if not active[b]:
                continue
            kept, done_now = 0, []
            for rank, (score, par, tok) in enumerate(zip(top_l[b], parent_l[b], token_l[b])):
                if score == float("-inf"):
                    break
                if tok == EOS_ID:
                    if rank < k:  # only <eos> among the best k candidates ends a hypothesis
                        prefix = seqs[b * k + par].tolist()
                        done_now.append(Hypothesis(prefix, score, _norm(score, len(prefix) + 1, alpha)))
                    continue
                if kept < k:
                    new_scores[b, kept], new_parent[b, kept], new_token[b, kept] = score, par, tok
                    kept += 1
            finished[b] = _keep(finished[b] + done_now, k)
            if record:
                live = [(p, tk, s) for p, tk, s in zip(new_parent[b].tolist(), new_token[b].tolist(),
                                                       new_scores[b].tolist()) if s > float("-inf")]
                history[b].append(BeamStep(t, [x[1] for x in live], [x[0] for x in live], [x[2] for x in live],
                                           [seqs[b * k + p].tolist() + [tk] for p, tk, _ in live], done_now))
            best_live = float(new_scores[b, 0])
            if kept == 0 or _done(finished[b], best_live, t + 1, k, alpha, exact, max_len):
                active[b] = False
                new_scores[b] = float("-inf")
        if not any(active):
            break
        flat = (torch.arange(B, device=dev)[:, None] * k + new_parent).view(-1)
        seqs = torch.cat([seqs[flat], new_token.view(-1, 1)], dim=1)
        state = _select_state(step.state, flat)
        prev, scores = new_token.view(-1), new_scores
    else:  # max_len reached: the live beams end unfinished
        for b in range(B):
            if active[b]:
                for j in range(k):
                    s = float(scores[b, j])
                    if s > float("-inf"):
                        toks = seqs[b * k + j].tolist()
                        finished[b].append(Hypothesis(toks, s, _norm(s, len(toks), alpha), finished=False))
    return BeamResult([_keep(f, k) for f in finished], history)


@torch.no_grad()
def beam_search_loop(model: Seq2Seq, src, k: int = 4, alpha: float = 1.0, max_len: int | None = None,
                     exact: bool = False) -> BeamResult:
    """The reference: the same search with one decoder call per hypothesis per step."""
    ids, mask = _source(model, src)
    max_len = max_len or model.config.max_target_len
    out = []
    for b in range(ids.shape[0]):
        enc = model.encode(ids[b: b + 1], mask[b: b + 1])
        beams = [([], 0.0, model.initial_state(enc))]  # (tokens, logprob, state)
        finished: list[Hypothesis] = []
        for t in range(max_len):
            cands = []
            for j, (toks, lp, state) in enumerate(beams):
                prev = torch.tensor([toks[-1] if toks else BOS_ID], device=ids.device)
                step = model.step(enc, state, prev)
                logp = _logprobs(model, step)[0]
                cands += [(lp + float(logp[v]), j, v, step.state) for v in range(logp.shape[0])
                          if logp[v] > float("-inf")]
            cands.sort(key=lambda c: (-c[0], c[1], c[2]))
            new, done_now = [], []
            for rank, (score, j, v, state) in enumerate(cands[: 2 * k]):
                if v == EOS_ID:
                    if rank < k:
                        done_now.append(Hypothesis(beams[j][0], score, _norm(score, len(beams[j][0]) + 1, alpha)))
                elif len(new) < k:
                    new.append((beams[j][0] + [v], score, state))
            finished = _keep(finished + done_now, k)
            beams = new
            if not beams or _done(finished, beams[0][1], t + 1, k, alpha, exact, max_len):
                break
        else:
            finished += [Hypothesis(toks, lp, _norm(lp, len(toks), alpha), finished=False) for toks, lp, _ in beams]
        out.append(_keep(finished, k))
    return BeamResult(out, None)


@torch.no_grad()
def sample(model: Seq2Seq, src, temperature: float = 1.0, seed: int = 0,
           max_len: int | None = None) -> list[list[int]]:
    """Ancestral sampling from softmax(logits / T) (T <= 0: greedy); deterministic for a seed."""
    ids, mask = _source(model, src)
    B, dev = ids.shape[0], ids.device
    gen = torch.Generator(device=dev).manual_seed(seed)
    enc = model.encode(ids, mask)
    state, prev = model.initial_state(enc), torch.full((B,), BOS_ID, device=dev)
    rows: list[list[int]] = [[] for _ in range(B)]
    done = torch.zeros(B, dtype=torch.bool, device=dev)
    for _ in range(max_len or model.config.max_target_len):
        step = model.step(enc, state, prev)
        logp = _logprobs(model, step)
        if temperature <= 0:
            tok = logp.argmax(-1)
        else:
            tok = torch.multinomial(torch.softmax(logp / temperature, dim=-1), 1, generator=gen).squeeze(1)
        for b in (~done).nonzero().flatten().tolist():
            if int(tok[b]) != EOS_ID:
                rows[b].append(int(tok[b]))
        done |= tok == EOS_ID
        if bool(done.all()):
            break
        state, prev = step.state, tok
    return rows


def gold_fall_off(history: list[BeamStep], gold: list[int]) -> int | None:
    """The first step at which no live beam (nor a hypothesis finished there) holds the gold prefix.

    ``gold`` is the reference without <eos>; None when the gold prefix stays on the beam to the
    end (or the gold output itself finishes on the beam).
    """
    for st in history:
        if any(h.tokens == gold for h in st.finished):
            return None
        n = st.t + 1
        if n <= len(gold) and not any(p == gold[:n] for p in st.prefixes):
            return st.t
    return None


def strategy_table(model: Seq2Seq, pairs, ks=(1, 2, 4, 8), alpha: float = 1.0, temperatures=(0.5, 1.0),
                   seed: int = 0, batch_size: int = 64) -> pd.DataFrame:
    """BLEU, exact match and time per sentence of greedy, beam k in ``ks`` and sampling on ``pairs``.

    Each strategy decodes the same held-out pairs, batched by similar source length.
    """
    import time

    from seqviz.introspect.attention import bleu

    if not pairs:
        raise ValueError("no held-out pairs to decode")
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i].src))
    batches = [[pairs[i] for i in order[s: s + batch_size]] for s in range(0, len(order), batch_size)]
    refs = [list(p.tgt) for b in batches for p in b]

    def run(decode):
        t0, hyps = time.perf_counter(), []
        for b in batches:
            srcs = [list(p.src) for p in b]
            limit = min(model.config.max_target_len, 2 * max(len(s) for s in srcs) + 10)
            hyps += [model.tgt_vocab.strings(h) for h in decode(srcs, limit)]
        secs = time.perf_counter() - t0
        exact = sum(h == r for h, r in zip(hyps, refs)) / len(refs)
        return {"bleu": bleu(hyps, refs), "exact": exact, "ms_per_sentence": 1000 * secs / len(refs)}

    rows = [{"strategy": "greedy", "k": 1, **run(lambda s, n: model.translate(s, max_len=n)[0])}]
    for k in ks:
        rows.append({"strategy": f"beam k={k}", "k": k,
                     **run(lambda s, n, k=k: beam_search(model, s, k=k, alpha=alpha, max_len=n).best)})
    for temp in temperatures:
        rows.append({"strategy": f"sample T={temp:g}", "k": None,
                     **run(lambda s, n, temp=temp: sample(model, s, temp, seed=seed, max_len=n))})
    return pd.DataFrame(rows)


def beam_tree(history: list[BeamStep], names, gold: list[int] | None = None) -> pd.DataFrame:
    """One sentence's beam as nodes (step, rank, token, cumulative log p, parent rank, on the gold prefix)."""
    rows = []
    for st in history:
        for rank, (tok, par, lp, prefix) in enumerate(zip(st.tokens, st.parents, st.logprobs, st.prefixes)):
            rows.append({"step": st.t, "rank": rank, "token": names([tok])[0], "logprob": lp,
                         "parent_rank": par if st.t else None, "finished": False,
                         "gold": gold is not None and prefix == gold[: len(prefix)]})
        before = history[st.t - 1].prefixes if st.t else [[]]
        for h in st.finished:  # its parent is the live beam of the previous step holding its tokens
            parent = next((r for r, p in enumerate(before) if p == h.tokens), None)
            rows.append({"step": st.t, "rank": None, "token": names([EOS_ID])[0], "logprob": h.logprob,
                         "parent_rank": parent if st.t else None, "finished": True,
                         "gold": gold is not None and h.tokens == gold, "score": h.score})
    return pd.DataFrame(rows)


def beam_view(model: Seq2Seq, src, gold: list[str], k: int, min_steps: int = 24) -> dict:
    """One sentence's beam search for display: the best output, where the reference falls off the
    beam, and the beam tree cut to the first steps that matter (``shown`` of ``steps``)."""
    res = beam_search(model, [src] if isinstance(src, str) else [list(src)], k=k, record=True)
    gold_ids = model.tgt_vocab.encode(list(gold)).ids
    fell = gold_fall_off(res.history[0], gold_ids)
    tree = beam_tree(res.history[0], model.tgt_vocab.strings, gold_ids)
    steps = int(tree["step"].max()) + 1
    shown = min(steps, max(min_steps, (fell or 0) + 6))
    return {"best": model.tgt_vocab.strings(res.best[0]), "fell_off": fell, "tree": tree[tree["step"] < shown],
            "shown": shown, "steps": steps}
