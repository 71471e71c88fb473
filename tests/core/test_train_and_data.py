"""Tokenizers, padding, the corpus split, and a tiny end-to-end training run with resume."""

import json
import math

import pytest
import torch

import seqviz
from seqviz.introspect.language import SAMPLE_TEXTS, read_scores, score_text
from seqviz.config import LMConfig
from seqviz.data.corpus import Corpus, load_corpus
from seqviz.data.tokenizers import Tokenizer, TokenizerError, pad_batch
from seqviz.train.lm import TrainConfig, evaluate, lr_at, streams, train_lm

TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n" * 20


def test_char_tokenizer_round_trip_and_unknowns():
    tok = Tokenizer.train("char", "abca b")
    assert tok.tokens[:2] == ["<pad>", "<unk>"] and tok.tokens[2] == "a"  # most frequent first
    enc = tok.encode("abz€ a")
    assert enc.unknown == ["z", "€"] and enc.ids.count(tok.unk_id) == 2
    assert tok.decode(tok.encode("cab a").ids) == "cab a"


def test_word_tokenizer_lowercases_and_keeps_punctuation():
    tok = Tokenizer.train("word", "The cat. the dog, THE end")
    assert tok.encode("The dog.").pieces == ["The", "dog", "."]
    assert tok.decode(tok.encode("the dog .").ids) == "the dog ."


def test_vocabulary_without_unk_drops_and_reports_unknown_characters():
    tok = Tokenizer("char", ["a", "b"])
    enc = tok.encode("abcab")
    assert enc.ids == [0, 1, 0, 1] and enc.unknown == ["c"]


@pytest.mark.parametrize("tokens", [[], ["a", "a"], ["ab"], [""], "abc"])
def test_bad_vocabularies_are_refused(tokens):
    with pytest.raises(TokenizerError):
        Tokenizer("char", tokens)


def test_pad_batch_right_pads_with_mask():
    ids, mask = pad_batch([[5, 6, 7], [8]])
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0]]
    assert mask.tolist() == [[True, True, True], [True, False, False]]


def test_shakespeare_is_split_by_play(shakespeare_dir):
    corpus = load_corpus(shakespeare_dir)
    assert "hamlet" in corpus.split and "38 files train, 4 held out" in corpus.split
    assert "To be, or not to be" in corpus.validation and "To be, or not to be" not in corpus.train
    assert 0.05 < len(corpus.validation) / len(corpus.train) < 0.2


def test_streams_and_schedule():
    s = streams(torch.arange(10), 3)
    assert s.tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    cfg = TrainConfig(steps=1000, lr=1e-2)
    assert lr_at(0, cfg) < lr_at(49, cfg) == pytest.approx(1e-2)
    assert lr_at(1000, cfg) == pytest.approx(1e-3)


def test_tiny_training_lowers_loss_writes_card_and_resumes(tmp_path):
    torch.manual_seed(0)
    corpus = Corpus("toy", TEXT, TEXT[:400], "toy split")
    cfg = LMConfig(cell="gru", n_layers=1, d_embed=8, d_hidden=24, vocab_size=1)
    tcfg = TrainConfig(steps=60, batch_size=4, seq_len=32, lr=1e-2, eval_every=30, snapshot_steps=(30,))
    events = []
    model = train_lm(cfg, tcfg, corpus, tmp_path / "ck", callback=lambda e, i: events.append(e))
    card = json.loads((tmp_path / "ck" / "card.json").read_text())
    # The card's validation loss is what evaluating the saved model on the validation text gives.
    ids = torch.tensor(model.tokenizer.encode(corpus.validation).ids)
    assert card["val_loss"] == pytest.approx(evaluate(model, ids, torch.device("cpu")), abs=1e-4)
    assert card["val_perplexity"] == pytest.approx(math.exp(card["val_loss"]), rel=1e-3)
    uniform = math.log(len(model.tokenizer))
    assert card["val_loss"] < 0.75 * uniform  # it learned something real
    assert card["snapshots"][0]["step"] == 30 and events.count("step") == 60 and events[-1] == "done"
    loaded = seqviz.load(tmp_path / "ck")
    assert loaded.trace("Speak, speak.")["loss"].nanmean() < uniform
    # The app's sample texts were scored when the checkpoint was made: what the model reads them as.
    shipped = read_scores(tmp_path / "ck", SAMPLE_TEXTS["hamlet"])
    assert shipped.perplexity == pytest.approx(score_text(loaded, SAMPLE_TEXTS["hamlet"]).perplexity, rel=1e-6)

    # Resume: interrupted at step 45, the run continues from the progress saved at step 30.
    def interrupt(event, info):
        if event == "step" and info["step"] == 45:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_lm(cfg, tcfg, corpus, tmp_path / "r", callback=interrupt)
    steps = []
    train_lm(cfg, tcfg, corpus, tmp_path / "r", resume=True,
             callback=lambda e, i: steps.append(i["step"]) if e == "step" else None)
    assert steps[0] == 31 and steps[-1] == 60
    resumed = json.loads((tmp_path / "r" / "card.json").read_text())
    assert [h["step"] for h in resumed["history"]] == [30, 60]
    assert [s["step"] for s in resumed["snapshots"]] == [30]  # taken before the progress save
    assert not (tmp_path / "r" / "train_state.json").exists()
