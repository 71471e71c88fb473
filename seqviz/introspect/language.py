"""Per-token surprisal, perplexity and sampled continuations of a recurrent language model.

Surprisal of token t is its negative log-probability under the model given the tokens
before it, ``-log p(w_t | w_<t)`` in nats (divide by ln 2 for bits). Perplexity is
``exp`` of the mean surprisal over the N scored tokens:

    PPL = exp(-(1/N) * sum_t log p(w_t | w_1..w_{t-1}))

(the language-model metric of the seed chapter, 7.10.2). The first token has no
context, so it is never scored: a text of T tokens yields N = T - 1 surprisals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

MAX_TOKENS = 2000  # texts are cut to their first MAX_TOKENS tokens before scoring
MAX_CHARS = 100_000  # raw text beyond this is dropped before tokenising (bounded work)
LN2 = math.log(2.0)
COLUMNS = ["position", "token", "loss", "bits", "prob", "expected", "expected_prob"]
# The app's sample texts (its Language model page names them): famous quotations and a few made-up
# lines, chosen to show low surprisal (verse the models have read the like of), high surprisal (modern
# prose, gibberish) and the unknown-character warning. Their scores ship with each checkpoint (SCORES_FILE).
SAMPLE_TEXTS = {
    "hamlet": "To be, or not to be, that is the question:\n"
              "Whether 'tis nobler in the mind to suffer\n"
              "The slings and arrows of outrageous fortune,\n"
              "Or to take arms against a sea of troubles.",
    "as_you_like_it": "All the world's a stage,\nAnd all the men and women merely players;\n"
                      "They have their exits and their entrances.",
    "speech_headings": "KING:\nWhat say you, my lord?\n\nQUEEN:\nI say the night is long, and we are tired.",
    "modern_prose": "The quick brown fox jumps over the lazy dog while the committee reviews its budget.",
    "gibberish": "Xqz vvk plorm jjw qqa zzt uuv kkx!",
    "unknown_characters": "Café déjà vu: naïve words — with accents 😀 the vocabulary never saw.",
}


@dataclass
class ScoredText:
    """The result of reading one text: a row per kept token, and what was changed on the way in."""

    table: pd.DataFrame  # COLUMNS; loss/bits/prob/expected are NaN/"" at position 0
    kind: str  # tokenizer kind, "char" or "word" (how to join the tokens back into text)
    vocab_size: int
    unknown: list[str] = field(default_factory=list)  # distinct pieces outside the vocabulary (dropped)
    truncated: int = 0  # tokens cut off after MAX_TOKENS

    @property
    def n_scored(self) -> int:
        return int(self.table["loss"].notna().sum())

    @property
    def mean_loss(self) -> float:
        """Mean surprisal in nats over scored tokens; NaN when nothing was scored."""
        return mean_loss(self.table)

    @property
    def perplexity(self) -> float:
        return perplexity(self.table)

    @property
    def text(self) -> str:
        """The tokens the model actually read, joined back into text."""
        return join_tokens(self.table["token"].tolist(), self.kind)


def join_tokens(tokens: list[str], kind: str) -> str:
    """Pieces back into text: words with spaces; characters and subword pieces (which keep their spaces) as is."""
    return " ".join(tokens) if kind == "word" else "".join(tokens)


def prepare(tokenizer, text: str, max_tokens: int = MAX_TOKENS) -> tuple[list[int], list[str], list[str], int]:
    """Encode ``text``, drop pieces outside the vocabulary, cut to ``max_tokens``.

    Returns ``(ids, pieces, unknown, truncated)``. Unknown pieces are dropped rather than
    read as ``<unk>``: the model never learnt to predict ``<unk>`` from real text, so its
    surprisal there would say nothing about the text.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    encoded = tokenizer.encode(text[:MAX_CHARS])
    unknown = list(encoded.unknown)
    unk = tokenizer.unk_id
    kept = [(i, p) for i, p in zip(encoded.ids, encoded.pieces) if not (i == unk and p in unknown)]
    truncated = max(0, len(kept) - max_tokens)
    kept = kept[:max_tokens]
    return [i for i, _ in kept], [p for _, p in kept], unknown, truncated


def surprisal_table(trace, vocabulary: list[str] | None = None, row: int = 0) -> pd.DataFrame:
    """One row per valid token of batch row ``row`` of a trace (``tokens``, ``mask``, ``loss``, ``logits``).

    ``loss`` at position t is the surprisal of token t, i.e. the trace's ``loss[t-1]``
    (which scores the token *after* t-1); ``expected`` is the model's top guess for that
    position (a string from ``vocabulary``, else the id) and ``expected_prob`` its probability.
    """
    mask = trace["mask"][row]
    n = int(mask.sum())
    loss = trace["loss"][row, : max(n - 1, 0)].double().numpy()
    logits = trace["logits"][row, :n].double()
    probs = logits.softmax(-1)
    top_p, top_i = probs.max(-1)
    pieces = trace.token_strings[row][:n] if trace.token_strings else [str(int(t)) for t in trace["tokens"][row, :n]]
    surprisal = np.full(n, np.nan)
    surprisal[1:] = loss[: n - 1]
    expected = [""] + [vocabulary[i] if vocabulary is not None else str(i) for i in top_i[: n - 1].tolist()]
    expected_p = np.full(n, np.nan)
    expected_p[1:] = top_p[: n - 1].numpy()
    return pd.DataFrame({
        "position": np.arange(n),
        "token": pieces,
        "loss": surprisal,
        "bits": surprisal / LN2,
        "prob": np.exp(-surprisal),
        "expected": expected,
        "expected_prob": expected_p,
    }, columns=COLUMNS)


def mean_loss(table: pd.DataFrame) -> float:
    scored = table["loss"].dropna()
    return float(scored.mean()) if len(scored) else float("nan")


def perplexity(table: pd.DataFrame) -> float:
    """exp(mean surprisal in nats) over the scored tokens; NaN if there are none."""
    value = mean_loss(table)
    return math.exp(value) if not math.isnan(value) else float("nan")


def score_text(model, text: str, max_tokens: int = MAX_TOKENS) -> ScoredText:
    """Read ``text`` with ``model`` and return its per-token surprisal table.

    Raises ``ValueError`` with a readable message when no token of the text is in the
    vocabulary (the caller shows it); a single token is fine (nothing is scored).
    """
    tokenizer = model.tokenizer
    ids, pieces, unknown, truncated = prepare(tokenizer, text, max_tokens)
    if not ids:
        if unknown:
            raise ValueError("none of the text's tokens is in this model's vocabulary")
        raise ValueError("the text is empty")
    trace = model.trace([ids], names=["tokens", "mask", "logits", "loss", "loss_mask"])
    table = surprisal_table(trace, tokenizer.tokens).assign(token=pieces)  # the user's own spelling

    return ScoredText(table, tokenizer.kind, len(tokenizer), unknown, truncated)


def continue_text(model, text: str, n: int = 200, temperature: float = 0.8, seed: int = 0,
                  max_tokens: int = MAX_TOKENS) -> str:
    """Sample ``n`` tokens after ``text`` (its last ``max_tokens`` known tokens) and decode them.

    Deterministic for a given seed; temperature 0 takes the most likely token each step.
    """
    from seqviz.models.recurrent import generate

    ids, _, _, _ = prepare(model.tokenizer, text, MAX_CHARS)
    if not ids:
        raise ValueError("the prompt has no token in this model's vocabulary")
    out = generate(model, ids[-max_tokens:], n, temperature=temperature, seed=seed)
    text_out = model.tokenizer.decode(out)
    return " " + text_out if model.tokenizer.kind == "word" else text_out


def compare(scored: dict[str, ScoredText]) -> pd.DataFrame:
    """Long table (model, position, token, loss) over several models' scores of one text."""
    frames = [s.table.assign(model=name)[["model", "position", "token", "loss", "bits"]]
              for name, s in scored.items()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["model", "position", "token", "loss", "bits"])


def summary(scored: dict[str, ScoredText]) -> pd.DataFrame:
    """One row per model: scored tokens, mean loss (nats and bits per token), perplexity."""
    rows = [{"model": name, "tokens scored": s.n_scored, "loss (nats/token)": s.mean_loss,
             "bits/token": s.mean_loss / LN2, "perplexity": s.perplexity}
            for name, s in scored.items()]
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ the sample texts' scores, shipped with the checkpoint
# A page's first view must not wait for torch (its import alone is 2-3 s on a 2-core server): the
# sample texts' per-token scores are computed when the checkpoint is made and kept beside the weights
# in ``scores.json`` (tens of KB); ``read_scores`` hands one back only while the files it was measured
# with (config, vocabulary, weights) are unchanged and it was read with the same ``max_tokens``.
#     python -m seqviz.introspect.language checkpoints/shakespeare-char-lstm [...]
SCORES_FILE = "scores.json"
_MEASURED_WITH = ("config.json", "vocab.json", "model.safetensors")


def _measured_with(folder) -> dict:
    """{file name: SHA-1} of the files a score depends on (None for a missing one)."""
    from pathlib import Path

    from seqviz.files import sha1_of

    return {name: sha1_of(Path(folder) / name) for name in _MEASURED_WITH}


def _to_json(scored: ScoredText) -> dict:
    rows = {c: [None if isinstance(v, float) and v != v else v for v in scored.table[c].tolist()] for c in COLUMNS}
    return {"kind": scored.kind, "vocab_size": scored.vocab_size, "unknown": scored.unknown,
            "truncated": scored.truncated, "rows": rows}


def _from_json(data: dict) -> ScoredText:
    table = pd.DataFrame({c: data["rows"][c] for c in COLUMNS}, columns=COLUMNS)
    for c in ("loss", "bits", "prob", "expected_prob"):  # JSON null back to NaN, as score_text leaves them
        table[c] = table[c].astype(float)
    table["position"] = table["position"].astype(np.int64)
    return ScoredText(table, data["kind"], int(data["vocab_size"]), list(data["unknown"]), int(data["truncated"]))


def write_scores(folder, texts=None, max_tokens: int = MAX_TOKENS):
    """Score ``texts`` (default: ``SAMPLE_TEXTS``) with the folder's final weights; write ``scores.json``.

    A text none of whose tokens the model knows is left out (scoring it raises ``ValueError``).
    """
    import json
    from pathlib import Path

    from seqviz.registry import load

    folder = Path(folder)
    model = load(folder)  # any recurrent LM family (a transformers Mamba too)
    data = {"measured_with": _measured_with(folder), "max_tokens": max_tokens, "texts": {}}
    for text in (SAMPLE_TEXTS.values() if texts is None else texts):
        try:
            data["texts"][text] = _to_json(score_text(model, text, max_tokens))
        except ValueError:
            continue
    path = folder / SCORES_FILE
    path.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    return path


def read_scores(folder, text: str, max_tokens: int = MAX_TOKENS) -> ScoredText | None:
    """``score_text`` of the folder's final weights from its ``scores.json``, without torch; None when the
    file is missing or unreadable, does not hold ``text`` at this ``max_tokens``, or the config, vocabulary
    or weights changed since it was written (then the caller scores the text itself)."""
    import json
    from pathlib import Path

    path = Path(folder) / SCORES_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entry = data["texts"].get(text)
        if entry is None or data["max_tokens"] != max_tokens or data["measured_with"] != _measured_with(folder):
            return None
        return _from_json(entry)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def main(argv=None) -> int:
    """``python -m seqviz.introspect.language FOLDER...``: (re)write each language model folder's scores.json."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("folders", nargs="+", help="seqviz language-model checkpoint folders")
    args = ap.parse_args(argv)
    for folder in args.folders:
        path = write_scores(folder)
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
