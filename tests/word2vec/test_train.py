"""Training through gensim and the CLI: corpus reading, counts, progress, the checkpoint folder it writes."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from safetensors.numpy import load_file

from seqviz.cli import main
from seqviz.registry import load
from seqviz.word2vec.train import Word2VecConfig, read_sentences, tokenize, train_word2vec
from seqviz.word2vec.vectors import WordVectors
from tests.word2vec.test_analogy import synthetic_corpus


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "tiny.txt"
    lines = [" ".join(s).capitalize() + "." for s in synthetic_corpus(n=1500)]
    path.write_text("\n".join(lines) + "\n\n'Tis the KING's crown, o' my word!\n")
    return path


def test_tokenize_lowercases_and_keeps_apostrophes():
    assert tokenize("O, 'tis Romeo's -- ' '' 2nd!") == ["o", "'tis", "romeo's", "nd"]


def test_read_sentences_one_per_line(corpus_file, tmp_path):
    sentences, info = read_sentences(corpus_file)
    assert len(sentences) == 1501  # the blank line is no sentence
    assert sentences[-1] == ["'tis", "the", "king's", "crown", "o'", "my", "word"]
    assert info["words"] == sum(map(len, sentences)) and info["files"] == 1
    folder = tmp_path / "plays"
    folder.mkdir()
    (folder / "a.txt").write_text("To be or not\n")
    (folder / "b.txt").write_text("that is\n")
    (folder / "metadata.txt").write_text("title = ignored\n")
    assert read_sentences(folder)[0] == [["to", "be", "or", "not"], ["that", "is"]]
    with pytest.raises(FileNotFoundError, match="not a file, a folder or one of shakespeare, news"):
        read_sentences(tmp_path / "nowhere")


def test_train_counts_and_progress(corpus_file):
    sentences, _ = read_sentences(corpus_file)
    events = []
    wv, stats = train_word2vec(Word2VecConfig(arch="cbow", dim=12, min_count=2, epochs=2, workers=1),
                               sentences, lambda e, i: events.append((e, i)))
    counts = Counter(w for s in sentences for w in s)
    kept = {w: n for w, n in counts.items() if n >= 2}
    assert set(wv.words) == set(kept) and wv.dim == 12
    assert all(wv.count(w) == n for w, n in kept.items())
    assert list(wv.counts) == sorted(wv.counts, reverse=True)  # most frequent first
    progress = [i for e, i in events if e == "progress"]
    assert progress[-1]["words"] == progress[-1]["total"] == 2 * sum(counts.values())
    assert [e for e, _ in events][0] == "vocab" and events[-1][0] == "done"
    assert stats["words_per_second"] > 0


@pytest.mark.parametrize("field, value", [("arch", "glove"), ("dim", 0), ("window", 1.5), ("epochs", True)])
def test_bad_settings_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        Word2VecConfig(**{field: value})


def test_cli_writes_a_loadable_checkpoint(corpus_file, tmp_path, capsys):
    out = tmp_path / "w2v"
    code = main(["train", "word2vec", "--corpus", str(corpus_file), "--arch", "skipgram", "--dim", "16",
                 "--negative", "3", "--window", "3", "--min-count", "2", "--epochs", "2", "--workers", "1",
                 "--map-n", "30", "--out", str(out)])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["card.json", "config.json", "vectors.safetensors",
                                                     "vocab.json", "wordmap.json"]
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "word2vec" and config["arch"] == "skipgram"
    raw = load_file(str(out / "vectors.safetensors"))["vectors"]
    assert raw.dtype == np.float16 and raw.shape == (config["vocab_size"], 16)
    wv = load(out)
    assert isinstance(wv, WordVectors)
    np.testing.assert_array_equal(wv.vectors, raw.astype(np.float32))
    card = wv.card
    assert card["settings"]["negative"] == 3 and card["settings"]["window"] == 3
    assert set(card["evaluation"]) == {"analogies", "wordsim353", "simlex999"}
    assert card["word_map"]["n"] == 30 and 0 <= card["word_map"]["trustworthiness"] <= 1
    # the card's example is the analogy recomputed on the stored vectors
    from seqviz.word2vec.analogy import analogy

    top = analogy(wv, "man", "woman", "king", k=5).table
    assert [w for w, _ in card["example"]["top5"]] == list(top["word"])
    printed = capsys.readouterr().out
    assert "words/s" in printed and f"wrote {out}" in printed
    assert main(["inspect", str(out)]) == 0 and '"model_type": "word2vec"' in capsys.readouterr().out


def test_cli_reports_bad_input_without_a_traceback(tmp_path, capsys):
    assert main(["train", "word2vec", "--corpus", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "error:" in capsys.readouterr().err
    assert main(["train", "word2vec", "--dim", "0", "--out", str(tmp_path / "o")]) == 2
    assert "dim must be an integer" in capsys.readouterr().err
