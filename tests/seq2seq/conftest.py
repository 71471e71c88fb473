"""Tiny seq2seq models with random weights for the seq2seq tests."""

import pytest
import torch

from seqviz.seq2seq.config import Seq2SeqConfig
from seqviz.seq2seq.data import generate
from seqviz.seq2seq.model import Seq2Seq
from seqviz.seq2seq.vocab import Vocab


def make_model(cell="gru", attention=True, bidirectional=True, seed=0, scale=0.5, pairs=None):
    pairs = pairs or generate("zh-en", 200, seed=3, max_clauses=2)
    src = Vocab.build("unit", [p.src for p in pairs])
    tgt = Vocab.build("unit", [p.tgt for p in pairs])
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(cell=cell, attention=attention, bidirectional=bidirectional, d_embed=6, d_encoder=5,
                        d_decoder=7, d_attention=4, src_vocab_size=len(src), tgt_vocab_size=len(tgt),
                        max_target_len=40)
    model = Seq2Seq(cfg, src, tgt)
    with torch.no_grad():  # larger than default weights, so attention is far from uniform
        for p in model.parameters():
            p.normal_(0, scale)
    return model.eval()


@pytest.fixture(name="make_model")
def make_model_fixture():
    return make_model


@pytest.fixture
def pairs():
    return generate("zh-en", 200, seed=3, max_clauses=2)
