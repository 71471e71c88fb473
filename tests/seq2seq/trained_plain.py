"""A small encoder-decoder trained in the test, the PyTorch tutorial's way, and saved as its users save it.

The task: read three to five lower-case letters, write them reversed in capitals ("a b c" -> "C B A").
``Tutorial`` (``plain_layouts``: ``EncoderRNN`` + ``AttnDecoderRNN``, or ``DecoderRNN`` without attention) is
trained teacher-forced for a few seconds, then saved as ``encoder.pt`` + ``decoder.pt`` (state dicts) with a
``spec.json`` naming its vocabularies. ``greedy`` and ``forced`` decode with the module itself: the
independent reference the views' numbers are checked against.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import torch
from torch import nn

from tests.seq2seq.plain_layouts import Tutorial

LETTERS = "abcdef"
SRC = ["SOS", "EOS", *LETTERS]  # the tutorial's Lang: SOS = 0, EOS = 1, then the words
TGT = ["SOS", "EOS", *LETTERS.upper()]
SOS, EOS = 0, 1
BATCH = 32


def all_pairs(lengths=(3, 4, 5)) -> list[tuple[str, str]]:
    """Every (source, target) text of the task for these lengths, in a fixed shuffled order."""
    out = [(" ".join(w), " ".join(reversed(w)).upper()) for n in lengths for w in itertools.product(LETTERS, repeat=n)]
    random.Random(0).shuffle(out)
    return out


def _ids(text: str, vocab: list[str]) -> list[int]:
    return [vocab.index(t) for t in text.split()]


def train(attention: bool = True, steps: int = 150, hidden: int = 32, seed: int = 0) -> Tutorial:
    """The tutorial's modules trained with teacher forcing on sentences of 3 and 4 letters (batches of one length)."""
    torch.manual_seed(seed)
    module = Tutorial(len(SRC), len(TGT), hidden, attention)
    optim = torch.optim.Adam(module.parameters(), lr=0.01)
    data = []
    for n in (3, 4):
        rows = [(_ids(s, SRC) + [EOS], _ids(t, TGT)) for s, t in all_pairs((n,))]
        data += [(torch.tensor([s for s, _ in rows[i: i + BATCH]]), torch.tensor([t for _, t in rows[i: i + BATCH]]))
                 for i in range(0, len(rows) - BATCH + 1, BATCH)]
    random.Random(seed).shuffle(data)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(steps):
        src, tgt = data[step % len(data)]
        outputs, hidden_state = module.encoder(src)
        inputs = torch.cat([torch.full((len(tgt), 1), SOS), tgt], 1)
        gold = torch.cat([tgt, torch.full((len(tgt), 1), EOS)], 1)
        logits = []
        for t in range(inputs.shape[1]):
            out, hidden_state, _w = module.decoder.forward_step(inputs[:, t: t + 1], hidden_state, outputs)
            logits.append(out[:, 0])
        loss = loss_fn(torch.stack(logits, 1).reshape(-1, len(TGT)), gold.reshape(-1))
        optim.zero_grad()
        loss.backward()
        optim.step()
    return module.eval()


def save(module: Tutorial, folder: Path) -> Path:
    """``encoder.pt`` + ``decoder.pt`` (state dicts) and ``spec.json`` in ``folder``; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(module.encoder.state_dict(), folder / "encoder.pt")
    torch.save(module.decoder.state_dict(), folder / "decoder.pt")
    spec = {"source_vocab": SRC, "target_vocab": TGT, "source_tokenizer": "word", "target_tokenizer": "word",
            "bos": "SOS", "eos": "EOS"}
    (folder / "spec.json").write_text(json.dumps(spec))
    return folder


def write_pairs(path: Path, pairs: list[tuple[str, str]], blank_every: int = 0) -> Path:
    """A TSV pairs file; a blank line after every ``blank_every`` pairs (0: none)."""
    lines = []
    for i, (s, t) in enumerate(pairs, 1):
        lines.append(f"{s}\t{t}")
        if blank_every and i % blank_every == 0:
            lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@torch.no_grad()
def greedy(module: Tutorial, src: str, max_len: int = 20) -> list[str]:
    """The module's own greedy translation (never SOS, the tutorial's padding), up to EOS."""
    _logits, _w, chosen = module.run(_ids(src, SRC) + [EOS], None, max_len, SOS, banned=[SOS])
    out = []
    for i in chosen:
        if i == EOS:
            break
        out.append(TGT[i])
    return out


@torch.no_grad()
def forced(module: Tutorial, src: str, tgt: str) -> tuple[int, int]:
    """(wrong, total) tokens of the module's teacher-forced argmax (SOS banned) against ``tgt`` + EOS."""
    gold = _ids(tgt, TGT) + [EOS]
    logits, _w, _c = module.run(_ids(src, SRC) + [EOS], gold, len(gold), SOS)
    logits[:, SOS] = float("-inf")
    return int((logits.argmax(-1) != torch.tensor(gold)).sum()), len(gold)
