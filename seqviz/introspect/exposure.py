"""Exposure bias: a decoder trained on gold prefixes, run on its own.

Teacher forcing (TF) feeds the decoder the gold previous token; free running (FR) feeds it
its own previous output. Position t of both runs predicts the gold token y_t, but from
different prefixes, so every table here is indexed by the output position t:

    gold_logp_*   log p(y_t | prefix)          (nats; prefix = gold for TF, own output for FR)
    gold_rank_*   1 + number of tokens the model prefers to y_t (tokens it never emits left out)
    wrong_*       the run's token at t differs from y_t (TF: its argmax; FR: what it emitted;
                  an FR output that ended early is wrong at every missing position)
    kl            KL(p_TF || p_FR) at t, nats
    h_dist        || h_TF(t) - h_FR(t) ||, the decoder (or last-layer) state that made the prediction

Errors are position-aligned: after a dropped or inserted word every later token counts as
wrong, which is what a decoder that feeds on its own output has to live with.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from seqviz.files import sha1_of
from seqviz.seq2seq.data import Pair
from seqviz.seq2seq.vocab import EOS_ID, NEVER_EMITTED

if TYPE_CHECKING:  # torch is imported where a model runs: the shipped study and the menu read files only
    import torch

    from seqviz.seq2seq.model import Seq2Seq

COLUMNS = ["t", "gold", "tf_token", "fr_token", "gold_logp_tf", "gold_logp_fr", "gold_rank_tf",
           "gold_rank_fr", "wrong_tf", "wrong_fr", "kl", "h_dist"]


def _masked_logp(logits: torch.Tensor, banned) -> torch.Tensor:
    import torch

    logp = torch.log_softmax(logits.double(), dim=-1)
    if banned:
        logp[..., list(banned)] = float("-inf")
    return logp


def kl_divergence(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    """KL(p || q) in nats between the full softmax distributions of two logit vectors."""
    import torch

    lp, lq = torch.log_softmax(p_logits.double(), -1), torch.log_softmax(q_logits.double(), -1)
    return float((lp.exp() * (lp - lq)).sum())


def position_table(gold: list[int], tf_logits, tf_h, fr_tokens: list[int], fr_logits, fr_h,
                   strings, banned=NEVER_EMITTED) -> pd.DataFrame:
    """The per-position comparison of one teacher-forced and one free-running run.

    gold [T] ids; tf_logits [T, V] and tf_h [T, H] from the teacher-forced run; fr_tokens [T']
    what free running emitted, fr_logits [T', V], fr_h [T', H]; ``strings(ids)`` names ids.
    """
    import torch

    T, Tf = len(gold), len(fr_tokens)
    ltf = _masked_logp(tf_logits[:T], banned)
    lfr = _masked_logp(fr_logits[:Tf], banned) if Tf else None
    g = torch.tensor(gold)
    rows = []
    for t in range(T):
        gold_tf = float(ltf[t, g[t]])
        tf_tok = int(ltf[t].argmax())
        row = {"t": t, "gold": strings([gold[t]])[0], "tf_token": strings([tf_tok])[0],
               "gold_logp_tf": gold_tf, "gold_rank_tf": int((ltf[t] > gold_tf).sum()) + 1,
               "wrong_tf": tf_tok != gold[t]}
        if t < Tf:
            gold_fr = float(lfr[t, g[t]])
            kl = kl_divergence(tf_logits[t], fr_logits[t])
            row.update(fr_token=strings([fr_tokens[t]])[0], gold_logp_fr=gold_fr,
                       gold_rank_fr=int((lfr[t] > gold_fr).sum()) + 1, wrong_fr=fr_tokens[t] != gold[t],
                       kl=kl, h_dist=float((tf_h[t].double() - fr_h[t].double()).norm()))
        else:
            row.update(fr_token="", gold_logp_fr=math.nan, gold_rank_fr=None, wrong_fr=True,
                       kl=math.nan, h_dist=math.nan)
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def first_divergence(table: pd.DataFrame) -> int | None:
    """The first position where free running emits something other than the gold token."""
    hits = table.index[table["wrong_fr"]].tolist()
    return int(table.loc[hits[0], "t"]) if hits else None


def _one(src):
    """One source sentence: a text, or a token list (which ``Seq2Seq.trace`` would read as a batch)."""
    return [list(src)] if isinstance(src, (list, tuple)) else src


def _gold_ids(model: Seq2Seq, gold) -> list[int]:
    if isinstance(gold, str):
        gold = model.tgt_vocab.encode(gold).ids
    elif gold and isinstance(gold[0], str):
        gold = model.tgt_vocab.encode(list(gold)).ids
    return list(gold) + [EOS_ID]


def compare_translation(model: Seq2Seq, src, gold) -> dict:
    """Teacher-forced vs free-running (greedy) decoding of one source against its reference.

    ``gold``: the reference as text, tokens or ids (without <eos>). Returns the position
    table, the first divergence, the free-running output as strings and its edit distance
    to the reference.
    """
    gold_ids = _gold_ids(model, gold)[:-1]
    tf = model.trace(_one(src), [gold_ids])
    fr = model.trace(_one(src))
    n_fr = int(fr.lengths()[0])
    fr_tokens = fr["target.tokens"][0, :n_fr].tolist()
    table = position_table(gold_ids + [EOS_ID], tf["logits"][0], tf["decoder.h"][0], fr_tokens,
                           fr["logits"][0, :n_fr], fr["decoder.h"][0, :n_fr], _namer(model.tgt_vocab))
    own = _namer(model.tgt_vocab)([x for x in fr_tokens if x != EOS_ID])  # the end token by id, whatever its name
    return {"table": table, "first_divergence": first_divergence(table), "free_running": own,
            "edit_distance": edit_distance(own, model.tgt_vocab.strings(gold_ids)),
            "source": tf.source_strings[0] if tf.source_strings else None}


def _namer(vocab):
    return lambda ids: vocab.strings(ids) if vocab is not None else [str(i) for i in ids]


def compare_continuation(model, text: str, prompt_chars: int, n: int, temperature: float = 0.0,
                         seed: int = 0) -> dict:
    """A character LM continuing a real text: its own continuation vs the text's (teacher forced).

    The first ``prompt_chars`` tokens are the prompt; the next ``n`` tokens are the gold
    continuation. Free running continues the prompt greedily (temperature 0) or by sampling.
    """
    from seqviz.models.recurrent import generate

    if model.tokenizer is None:
        raise ValueError("this model has no tokenizer")
    ids = model.tokenizer.encode(text).ids
    if prompt_chars < 1 or n < 1:
        raise ValueError("the prompt and the continuation need at least one token each")
    if len(ids) < prompt_chars + n:
        raise ValueError(f"the text has {len(ids)} tokens; a {prompt_chars}-token prompt and a "
                         f"{n}-token continuation need {prompt_chars + n}")
    prompt, gold = ids[:prompt_chars], ids[prompt_chars: prompt_chars + n]
    own = generate(model, prompt, n, temperature=temperature, seed=seed)
    last = f"layers.{model.config.n_layers - 1}.h"
    tf, fr = model.trace([prompt + gold]), model.trace([prompt + own])
    sl = slice(prompt_chars - 1, prompt_chars - 1 + n)  # position i predicts token i + 1
    names = lambda xs: [model.tokenizer.tokens[i] for i in xs]  # noqa: E731
    table = position_table(gold, tf["logits"][0, sl], tf[last][0, sl], own, fr["logits"][0, sl],
                           fr[last][0, sl], names, banned=model.tokenizer.special_ids)
    return {"table": table, "first_divergence": first_divergence(table), "prompt": names(prompt),
            "free_running": names(own), "gold": names(gold)}


def second_choice(model: Seq2Seq, src, gold, k: int) -> int:
    """The token the teacher-forced model ranks highest at position k other than the gold one."""
    ids = _gold_ids(model, gold)
    tf = model.trace(_one(src), [ids[:-1]])
    logp = _masked_logp(tf["logits"][0, k], NEVER_EMITTED)
    logp[ids[k]] = float("-inf")
    return int(logp.argmax())


def edit_distance(a: list, b: list) -> int:
    """Levenshtein distance between two token lists."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def aligned(a: list, b: list) -> list[bool]:
    """For each token of ``a``, whether a minimal edit alignment of ``a`` to ``b`` (Levenshtein, as word error
    rate aligns) matches it to an equal token: a correct tail shifted by a dropped or added word is matched."""
    n, m = len(a), len(b)
    D = [[i + j if i == 0 or j == 0 else 0 for j in range(m + 1)] for i in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            D[i][j] = min(D[i - 1][j] + 1, D[i][j - 1] + 1, D[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    matched, i, j = [False] * n, n, m
    while i > 0 and j > 0:
        if a[i - 1] == b[j - 1] and D[i][j] == D[i - 1][j - 1]:
            matched[i - 1], i, j = True, i - 1, j - 1
        elif D[i][j] == D[i - 1][j - 1] + 1:
            i, j = i - 1, j - 1
        elif D[i][j] == D[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
    return matched


def edit_ops(a: list, b: list) -> list[tuple[str, int | None, int | None]]:
    """A minimal edit alignment of ``a`` (what was emitted) to ``b`` (the reference), as word error rate aligns, in
    order: ("match" | "sub", i, j), ("ins", i, None) for a token of ``a`` with no counterpart, ("skip", None, j) for
    a token of ``b`` that ``a`` leaves out. Its non-matches are ``edit_distance(a, b)``."""
    n, m = len(a), len(b)
    D = [[i + j if i == 0 or j == 0 else 0 for j in range(m + 1)] for i in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            D[i][j] = min(D[i - 1][j] + 1, D[i][j - 1] + 1, D[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    ops, i, j = [], n, m
    while i > 0 or j > 0:  # from the end: a match, else a skip, so that of equal alignments the substitutions come
        # first ("bought" for "buy", then "three big apples" left out, not "buy three big" left out, "bought" for "apples")
        if i > 0 and j > 0 and a[i - 1] == b[j - 1] and D[i][j] == D[i - 1][j - 1]:
            ops.append(("match", i - 1, j - 1))
            i, j = i - 1, j - 1
        elif j > 0 and D[i][j] == D[i][j - 1] + 1:
            ops.append(("skip", None, j - 1))
            j -= 1
        elif i > 0 and j > 0 and D[i][j] == D[i - 1][j - 1] + 1:
            ops.append(("sub", i - 1, j - 1))
            i, j = i - 1, j - 1
        else:
            ops.append(("ins", i - 1, None))
            i -= 1
    return ops[::-1]


def aligned_columns(run_tokens: list, ids: list, k: int, dist: list, names) -> pd.DataFrame:
    """The run after an injection at ``k`` laid out as word error rate aligns it to the reference: the forced
    prefix position by position, then one column per edit operation of the continuation (``edit_ops``). Per column:
    ``order``, the ``gold`` and ``emitted`` token ("" where there is none), ``op`` (forced, match, sub, ins, skip)
    and ``h_dist`` (the emitted position's state distance, NaN for a skipped reference token)."""
    rows = [{"t": t, "gold": names([ids[t]])[0], "emitted": names([run_tokens[t]])[0],
             "op": "forced" if t == k else "prefix", "h_dist": dist[t]} for t in range(min(k + 1, len(run_tokens)))]
    for op, i, j in edit_ops(run_tokens[k + 1:], ids[k + 1:]):
        rows.append({"t": k + 1 + i if i is not None else None, "gold": names([ids[k + 1 + j]])[0] if j is not None
                     else "", "emitted": names([run_tokens[k + 1 + i]])[0] if i is not None else "", "op": op,
                     "h_dist": dist[k + 1 + i] if i is not None and k + 1 + i < len(dist) else math.nan})
    return pd.DataFrame(rows).assign(order=lambda f: range(len(f)))


def inject_error(model: Seq2Seq, src, gold, k: int, token: int | str | None = None) -> dict:
    """Force the gold prefix y_<k, then ``token`` at position k, then let the decoder run freely.

    ``token`` None: the model's own second choice at k (``second_choice``).

    Per position: what it emitted, whether it is wrong (up to k: it differs from the gold token there;
    after k: a minimal edit alignment of the continuation to the gold's does not match it, so a correct
    tail shifted by one word counts as correct) and the distance of its state to the teacher-forced
    run's. ``errors_after``: the edits between the continuation and the gold's (word error rate's
    numerator); ``recovered``: the whole output is at most one edit from the gold. ``own``: the model's own
    output with the gold prefix y_<k forced and nothing injected; ``edits_vs_own``: the edits between the forced
    run's continuation after k and that output's (a model that was already wrong there is not blamed on the
    injection); ``rejoins``: at most one such edit (it gets back to what it would have said).
    """
    ids = _gold_ids(model, gold)
    if not 0 <= k < len(ids):
        raise ValueError(f"position k must lie in [0, {len(ids) - 1}]")
    if token is None:
        token = second_choice(model, src, gold, k)
    if isinstance(token, str):
        if token not in model.tgt_vocab.index:
            raise ValueError(f"{token!r} is not in the target vocabulary")
        token = model.tgt_vocab.index[token]
    if token == ids[k]:
        raise ValueError("that is the gold token; pick a different one to inject")
    if token in NEVER_EMITTED:
        raise ValueError("that token is never emitted by the decoder")
    tf = model.trace(_one(src), [ids[:-1]])
    if token == EOS_ID:
        out = ids[:k]
        run_h = tf["decoder.h"][0, :k]
        run_tokens = ids[:k] + [EOS_ID]
    else:
        run = model.trace(_one(src), prefix=[ids[:k] + [token]])
        n = int(run.lengths()[0])
        run_tokens = run["target.tokens"][0, :n].tolist()
        run_h = run["decoder.h"][0, :n]
        out = [x for x in run_tokens if x != EOS_ID]
    gold_out = ids[:-1]
    T = max(len(run_tokens), len(ids))
    names = _namer(model.tgt_vocab)
    tail = aligned(run_tokens[k + 1:], ids[k + 1:])  # the continuation against the gold's, aligned
    rows = []
    for t in range(T):
        emitted = run_tokens[t] if t < len(run_tokens) else None
        g = ids[t] if t < len(ids) else None
        dist = (float((run_h[t].double() - tf["decoder.h"][0, t].double()).norm())
                if t < len(run_h) and t < len(ids) else math.nan)
        wrong = emitted != g if t <= k else emitted is None or not tail[t - k - 1]
        rows.append({"t": t, "gold": names([g])[0] if g is not None else "", "emitted":
                     names([emitted])[0] if emitted is not None else "", "forced": t <= k,
                     "wrong": wrong, "h_dist": dist})
    table = pd.DataFrame(rows)
    dist = edit_distance(out, gold_out)
    own = model.trace(_one(src), prefix=[ids[:k]] if k else None)
    own_tokens = own["target.tokens"][0, :int(own.lengths()[0])].tolist()
    vs_own = edit_distance(run_tokens[k + 1:], own_tokens[k + 1:])
    return {"table": table, "columns": aligned_columns(run_tokens, ids, k, table["h_dist"].tolist(), names),
            "output": names(out), "errors_after": edit_distance(run_tokens[k + 1:], ids[k + 1:]),
            "edit_distance": dist, "recovered": dist <= 1, "injected": names([token])[0],
            "own": names([x for x in own_tokens if x != EOS_ID]), "edits_vs_own": vs_own, "rejoins": vs_own <= 1}


def _batched_order(pairs: list[Pair], batch_size: int) -> list[list[int]]:
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i].src))
    return [order[s: s + batch_size] for s in range(0, len(order), batch_size)]


def _batched(model: Seq2Seq, pairs: list[Pair], batch_size: int):
    for rows in _batched_order(pairs, batch_size):
        yield [pairs[i] for i in rows]


def error_matrices(model: Seq2Seq, pairs: list[Pair], batch_size: int = 250) -> dict:
    """Teacher-forced and free-running token errors of every held-out pair, position-aligned.

    Returns ``tf`` and ``fr``: boolean arrays [N, L] (True = wrong) and ``valid`` [N, L] (the
    gold output, <eos> included, has a token there); row i is ``pairs[i]``.
    """
    import torch

    from seqviz.seq2seq.train import tensorize

    if not pairs:
        raise ValueError("no held-out pairs to evaluate")
    tf_rows, fr_rows, lens = [], [], []
    for batch in _batched(model, pairs, batch_size):
        srcs = [list(p.src) for p in batch]
        golds = [model.tgt_vocab.encode(list(p.tgt)).ids for p in batch]
        _, _, tin, _, _ = tensorize(batch, model.src_vocab, model.tgt_vocab, model.out.weight.device)
        # the source as the model reads it (a plain state dict's model puts its start/end tokens around it)
        src, smask, _ = model._batch(srcs, model.src_vocab, "source")
        src, smask = src.to(tin.device), smask.to(tin.device)
        with torch.no_grad():
            logits = model(src, smask, tin)  # the training forward pass: one output matmul for all steps
        logits[..., list(NEVER_EMITTED)] = float("-inf")
        tf_tok = logits.argmax(-1).cpu()
        longest = max(len(g) for g in golds) + 1
        fr = model.trace(srcs, max_len=min(model.config.max_target_len, longest + 5))
        fr_tok, fr_mask = fr["target.tokens"].cpu(), fr["target.mask"].cpu()
        for b, g in enumerate(golds):
            gold = g + [EOS_ID]
            n = len(gold)
            tf_rows.append(tf_tok[b, :n].numpy() != np.array(gold))
            m = int(fr_mask[b].sum())
            own = fr_tok[b, :min(m, n)].numpy()
            wrong = np.ones(n, dtype=bool)
            wrong[: len(own)] = own != np.array(gold[: len(own)])
            fr_rows.append(wrong)
            lens.append(n)
    L = max(lens)
    back = np.argsort([i for batch in _batched_order(pairs, batch_size) for i in batch])  # to input order
    pad = lambda rows: np.array([np.pad(r, (0, L - len(r))) for r in rows], dtype=bool)[back]  # noqa: E731
    valid = np.array([np.arange(L) < n for n in lens])[back]
    return {"tf": pad(tf_rows), "fr": pad(fr_rows), "valid": valid}


def first_errors(errors: dict, run: str = "fr") -> list[int | None]:
    """Per pair, the first position where the run errs (None: the whole output is right)."""
    wrong = errors[run] & errors["valid"]
    return [int(row.argmax()) if row.any() else None for row in wrong]


def error_by_position(errors: dict, bucket: int = 5) -> pd.DataFrame:
    """Token error rate by output position (bucketed), teacher-forced vs free-running."""
    valid, L = errors["valid"], errors["valid"].shape[1]
    rows = []
    for lo in range(0, L, bucket):
        cols = slice(lo, lo + bucket)
        n = int(valid[:, cols].sum())
        if n == 0:
            continue
        for run in ("tf", "fr"):
            rate = float((errors[run][:, cols] & valid[:, cols]).sum() / n)
            rows.append({"position": lo, "run": "teacher-forced" if run == "tf" else "free-running",
                         "error_rate": rate, "tokens": n})
    return pd.DataFrame(rows)


def after_first_error(errors: dict, max_distance: int = 40, min_count: int = 5) -> pd.DataFrame:
    """P(error at s + d | first error at s), pooled over s, for both runs.

    For free running, errors after the first one are what snowballing looks like; the
    teacher-forced run's curve (same question about its own first error) is the baseline a
    decoder would have if its mistakes did not feed back.
    """
    valid, rows = errors["valid"], []
    for run in ("tf", "fr"):
        wrong = errors[run] & valid
        first = np.where(wrong.any(1), wrong.argmax(1), -1)
        for d in range(1, max_distance + 1):
            hit = total = 0
            for i in np.nonzero(first >= 0)[0]:
                t = first[i] + d
                if t < valid.shape[1] and valid[i, t]:
                    total += 1
                    hit += bool(wrong[i, t])
            if total >= min_count:
                rows.append({"distance": d, "run": "teacher-forced" if run == "tf" else "free-running",
                             "p_error": hit / total, "sentences": total})
    return pd.DataFrame(rows)


def conditional_matrix(errors: dict, bucket: int = 5, min_count: int = 5) -> pd.DataFrame:
    """P(error at t | first error at s) for free running, s and t bucketed, t >= s."""
    wrong, valid = errors["fr"] & errors["valid"], errors["valid"]
    first = np.where(wrong.any(1), wrong.argmax(1), -1)
    L, rows = valid.shape[1], []
    for s in range(0, L, bucket):
        group = (first >= s) & (first < s + bucket)
        if group.sum() < min_count:
            continue
        for t in range(s, L, bucket):
            cols = slice(t, t + bucket)
            n = int(valid[group][:, cols].sum())
            if n >= min_count:
                rows.append({"first_error": s, "position": t, "p_error": float(wrong[group][:, cols].sum() / n),
                             "tokens": n, "sentences": int(group.sum())})
    return pd.DataFrame(rows)


def summary(errors: dict) -> dict:
    """Token error rates and the share of outputs that are exactly right, per run."""
    valid = errors["valid"]
    out = {}
    for run in ("tf", "fr"):
        wrong = errors[run] & valid
        out[run] = {"token_error_rate": float(wrong.sum() / valid.sum()),
                    "exact": float((~wrong.any(1)).mean())}
    out["exposure_gap"] = out["fr"]["token_error_rate"] - out["tf"]["token_error_rate"]
    out["sentences"] = int(valid.shape[0])
    return out


def sentence_report(model: Seq2Seq, src, gold, k: int | None = None, token: int | str | None = None) -> dict:
    """One row for comparing models on one sentence: free-running output, divergence, and (with
    ``k``) what an injected error at k does (``token`` None: the model's own second choice)."""
    run = compare_translation(model, src, gold)
    row = {"free-running output": " ".join(run["free_running"]), "first divergence": run["first_divergence"],
           "edit distance": run["edit_distance"]}
    if k is not None:
        inj = inject_error(model, src, gold, k, token)
        row.update({"injected": inj["injected"], "continues as": " ".join(inj["output"]),
                    "recovers": inj["recovered"], "edit distance after injection": inj["edit_distance"]})
    return row


def compare_models(models: dict, src, gold, k: int | None = None, token=None) -> pd.DataFrame:
    """``sentence_report`` of each named model, one row each."""
    return pd.DataFrame([{"model": name, **sentence_report(m, src, gold, k, token)} for name, m in models.items()])


def reference_tokens(model: Seq2Seq, text: str) -> list[str]:
    """A typed reference as target tokens (``seqviz.seq2seq.pairs_file.target_tokens``: characters for a
    character vocabulary, else words), as a pairs file's targets are read."""
    from seqviz.seq2seq.pairs_file import target_tokens

    return target_tokens(model.tgt_vocab, text)


def injection_choices(model: Seq2Seq, gold: list[str], k: int) -> list[str]:
    """Tokens that can be forced at position k: every emittable token but the gold one there (the end token, by
    role, after the last: ``Vocab.end``); a placeholder for a special the user's vocabulary lacks is never one."""
    vocab = model.tgt_vocab
    here = (list(gold) + [vocab.end])[k] if k <= len(gold) else None
    real = getattr(vocab, "user_ids", None)  # a plain model's: None where seqviz holds a placeholder
    return [t for i, t in enumerate(vocab.tokens) if i not in NEVER_EMITTED and t != here
            and (real is None or real[i] is not None)]


def heldout_menu(pairs: list[Pair], first: list[int | None], n: int = 60) -> dict[str, int]:
    """Label -> pair index for a picker: pairs free running gets wrong first (short but not trivial
    ones before long ones), then the rest; ``first`` is ``first_errors`` of the same pairs."""
    wrong = sorted((i for i, f in enumerate(first) if f is not None),
                   key=lambda i: (len(pairs[i].tgt) < 8, len(pairs[i].tgt)))
    erring = set(wrong)
    picks = (wrong + [i for i in range(len(pairs)) if i not in erring])[:n]
    return {f"{i}: {''.join(pairs[i].src)}" + ("  (FR errs)" if i in erring else ""): i for i in picks}


def pair_texts(pair: Pair) -> tuple[str, str]:
    """(source as typed, reference with tokens separated by spaces)."""
    return "".join(pair.src), " ".join(pair.tgt)


def combine_views(views: dict[str, dict]) -> dict[str, pd.DataFrame]:
    """Several models' held-out views (``error_matrices`` -> curves + ``summary``) as long tables."""
    add = lambda part: pd.concat([v[part].assign(model=name) for name, v in views.items()])  # noqa: E731
    summary = pd.DataFrame([{"model": name, "sentences": v["summary"]["sentences"],
                             "TF token error": v["summary"]["tf"]["token_error_rate"],
                             "FR token error": v["summary"]["fr"]["token_error_rate"],
                             "exposure gap": v["summary"]["exposure_gap"],
                             "FR exact": v["summary"]["fr"]["exact"]} for name, v in views.items()])
    return {"by_position": add("by_position"), "after": add("after"), "summary": summary}


# ------------------------------------------------------------------ the held-out study, shipped with the checkpoint
# Decoding 1,000 held-out pairs both ways (and 200 with seven decoding strategies) takes 5-30 s on a
# small CPU: too slow for a page. ``write_study`` does it once per training stage when the checkpoint
# is made and keeps the results beside the weights in ``exposure.json`` (tens of KB); ``read_study``
# hands them back only while the weights and the held-out pairs are the ones they were measured on.
#     python -m seqviz.introspect.exposure checkpoints/zh-en-small-teacher-forcing [...]
STUDY_FILE = "exposure.json"
STUDY_PAIRS, STRATEGY_PAIRS, STRATEGY_KS = 1000, 200, (1, 2, 4, 8)
_FRAMES = ("by_position", "after", "matrix")


def dataset_view(model: Seq2Seq, pairs: list[Pair]) -> dict:
    """Error curves, the conditional matrix, the summary and each pair's first FR error on ``pairs``."""
    errors = error_matrices(model, pairs)
    return {"by_position": error_by_position(errors), "after": after_first_error(errors),
            "matrix": conditional_matrix(errors), "summary": summary(errors), "first_errors": first_errors(errors)}


def _weights(folder, snapshot: int | None):
    from pathlib import Path

    return Path(folder) / ("model.safetensors" if snapshot is None else f"snapshots/step-{int(snapshot)}.safetensors")


def _stage_key(snapshot: int | None) -> str:
    return "final" if snapshot is None else str(int(snapshot))


def study_stage(model: Seq2Seq, pairs: list[Pair], n: int = STUDY_PAIRS, strategy_pairs: int = STRATEGY_PAIRS,
                ks=STRATEGY_KS) -> dict:
    """One training stage's study as JSON-ready data: the dataset view and the strategy table."""
    from seqviz.decoding import strategy_table

    view = dataset_view(model, pairs[:n])
    out = {name: view[name].to_dict("records") for name in _FRAMES}
    out.update(summary=view["summary"], first_errors=view["first_errors"], n=n, pairs=min(n, len(pairs)))
    if strategy_pairs:
        table = strategy_table(model, pairs[:strategy_pairs], ks=tuple(ks))
        out["strategies"] = table.astype(object).where(table.notna(), None).to_dict("records")
        out["strategy_pairs"] = strategy_pairs  # as asked: the first min(this, held-out size) pairs
    return out


def write_study(folder, n: int = STUDY_PAIRS, strategy_pairs: int = STRATEGY_PAIRS, ks=STRATEGY_KS,
                progress=None):
    """Compute the held-out study of the final weights and every snapshot; write ``exposure.json``.

    ``progress(done, total, stage)`` is called after each stage (the CLI prints it).
    """
    import json
    import time
    from pathlib import Path

    from seqviz.checkpoints import list_snapshots
    from seqviz.seq2seq.checkpoints import load_heldout
    from seqviz.seq2seq.model import Seq2Seq

    folder = Path(folder)
    pairs = load_heldout(folder)
    if not pairs:
        raise ValueError(f"{folder} keeps no heldout.json to measure on")
    stages = [None] + list_snapshots(folder)
    data = {"heldout": sha1_of(folder / "heldout.json"), "stages": {}}
    for i, snap in enumerate(stages):
        t0 = time.perf_counter()
        stage = study_stage(Seq2Seq.from_pretrained(folder, snap), pairs, n, strategy_pairs, ks)
        data["stages"][_stage_key(snap)] = {"weights": sha1_of(_weights(folder, snap)), **stage,
                                            "seconds": round(time.perf_counter() - t0, 1)}
        if progress:
            progress(i + 1, len(stages), _stage_key(snap))
    path = folder / STUDY_FILE
    path.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    return path


def read_study(folder, snapshot: int | None = None, n: int | None = None) -> dict | None:
    """The shipped study of one stage as ``dataset_view``'s dict (+ ``strategies``, a DataFrame or None);
    None when there is no file, it does not cover this stage or the first ``n`` pairs, or the weights or held-out
    pairs have changed since it was written (then the caller computes it)."""
    import json
    from pathlib import Path

    path = Path(folder) / STUDY_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        stage = data["stages"][_stage_key(snapshot)]
        if n is not None and stage["n"] != n:
            return None
        if stage["weights"] != sha1_of(_weights(folder, snapshot)) or data["heldout"] != sha1_of(
                Path(folder) / "heldout.json"):
            return None
        view = {name: pd.DataFrame(stage[name]) for name in _FRAMES}
        view.update(summary=stage["summary"], first_errors=stage["first_errors"])
        view["strategies"] = pd.DataFrame(stage["strategies"]) if "strategies" in stage else None
        view["strategy_pairs"] = stage.get("strategy_pairs")
        return view
    except (OSError, ValueError, KeyError, TypeError):
        return None


def shipped_strategies(folder, snapshot: int | None, n: int, ks) -> pd.DataFrame | None:
    """The shipped strategy table of one stage when it was measured on ``n`` pairs with beams ``ks``, else None."""
    study = read_study(folder, snapshot)
    table = None if study is None else study["strategies"]
    if table is None or study["strategy_pairs"] != n:
        return None
    beams = sorted(int(k) for k, s in zip(table["k"], table["strategy"]) if str(s).startswith("beam"))
    return table if beams == sorted(int(k) for k in ks) else None


def main(argv=None) -> int:
    """``python -m seqviz.introspect.exposure FOLDER...``: (re)write each seq2seq folder's exposure.json."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("folders", nargs="+", help="seq2seq checkpoint folders with a heldout.json")
    ap.add_argument("--pairs", type=int, default=STUDY_PAIRS, help="held-out pairs for the error curves")
    ap.add_argument("--strategy-pairs", type=int, default=STRATEGY_PAIRS, help="pairs per decoding strategy")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    for folder in args.folders:
        path = write_study(folder, args.pairs, args.strategy_pairs,
                           progress=lambda i, n, s: print(f"{folder}: stage {s} ({i}/{n})", flush=True))
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
