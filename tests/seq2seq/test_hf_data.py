"""Parallel datasets through `datasets`, offline: both layouts, held-out splits, clear errors, the CLI."""

from __future__ import annotations

import pytest
from datasets import Dataset, DatasetDict

from seqviz.seq2seq.data import generate
from seqviz.seq2seq.hf_data import dataset_splits, default_tokens, pairs_from, tokenize


def texts(n: int, seed: int = 5) -> tuple[list[str], list[str]]:
    """Grammar sentences as a real corpus would hold them: Chinese unspaced, English with punctuation."""
    pairs = generate("zh-en", n, seed=seed, max_clauses=2)
    zh = ["".join(p.src) + "。" for p in pairs]
    en = [" ".join(p.tgt).replace(" ,", ",").capitalize() + "." for p in pairs]
    return zh, en


@pytest.fixture(scope="module")
def translation_ds():
    zh, en = texts(400)
    return Dataset.from_dict({"id": list(range(len(zh))), "translation": [{"zh": a, "en": b} for a, b in zip(zh, en)]})


def test_tokens_are_characters_for_chinese_and_words_for_english():
    assert default_tokens("zh") == default_tokens("zh-TW") == "char" and default_tokens("en") == "word"
    assert tokenize("我昨天 吃了。", "char") == ("我", "昨", "天", " ", "吃", "了", "。")
    assert tokenize("I ate an apple, yesterday.", "word") == ("I", "ate", "an", "apple", ",", "yesterday", ".")
    with pytest.raises(ValueError, match="'char' or 'word'"):
        tokenize("x", "bpe")


def test_both_layouts_give_the_same_pairs(translation_ds):
    zh, en = texts(400)
    columns = Dataset.from_dict({"zh": zh, "en": en})
    a = pairs_from(translation_ds, "zh", "en")
    assert a == pairs_from(columns, "zh", "en") and len(a) == 400
    assert a[0].src == tuple(zh[0]) and a[0].tgt[-1] == "." and set(a[0].align) == {-1}
    back = pairs_from(columns, "en", "zh", "word", "char")  # the other direction
    assert [(p.src, p.tgt) for p in back] == [(p.tgt, p.src) for p in a]


def test_missing_columns_and_languages_are_named(translation_ds):
    with pytest.raises(ValueError, match=r"languages \['en', 'zh'\], not \['fr'\]"):
        pairs_from(translation_ds, "fr", "en")
    with pytest.raises(ValueError, match=r"expected a 'translation' column or columns 'de' and 'en'.*\['zh', 'en'\]"):
        pairs_from(Dataset.from_dict({"zh": ["我"], "en": ["i"]}), "de", "en")


def test_splits_hold_out_unseen_sources_and_repeat_for_a_seed(translation_ds, tmp_path):
    translation_ds.save_to_disk(tmp_path / "one-split")
    s = dataset_splits(str(tmp_path / "one-split"), "zh", "en", 200, 30, 40, seed=1)
    assert (len(s.train), len(s.valid), len(s.test)) == (200, 30, 40)
    assert not {p.src for p in s.train} & {p.src for p in s.valid + s.test}
    assert s.kinds == ("char", "unit") and s.task == "one-split zh-en"
    assert "dataset" in s.describe() and "zh (chars) -> en (words)" in s.describe()
    assert dataset_splits(str(tmp_path / "one-split"), "zh", "en", 200, 30, 40, seed=1) == s
    zh, en = texts(60, seed=9)
    held = Dataset.from_dict({"translation": [{"zh": a, "en": b} for a, b in zip(zh, en)]})
    DatasetDict({"train": translation_ds, "validation": held, "test": held}).save_to_disk(tmp_path / "three")
    s3 = dataset_splits(str(tmp_path / "three"), "zh", "en", 500, 20, 50, seed=0)
    assert len(s3.test) == 50 and {p.src for p in s3.test} <= {tuple(z) for z in zh}
    assert not {p.src for p in s3.train} & {p.src for p in s3.test}


def test_cli_trains_on_a_saved_dataset_and_refuses_a_missing_one(translation_ds, tmp_path, capsys):
    from seqviz.cli import main
    from seqviz.registry import load

    translation_ds.save_to_disk(tmp_path / "zh-en-ds")
    args = ["train", "seq2seq", "--dataset", str(tmp_path / "zh-en-ds"), "--source-lang", "zh",
            "--target-lang", "en", "--train-pairs", "64", "--test-pairs", "20", "--steps", "3",
            "--batch-size", "16", "--embed", "8", "--encoder", "8", "--decoder", "12", "--attention-size", "6",
            "--threads", "1", "--out", str(tmp_path / "m")]
    assert main(args) == 0
    model = load(tmp_path / "m")
    assert model.src_vocab.kind == "char" and model.tgt_vocab.kind == "unit"
    assert model.card["task"] == "zh-en-ds zh-en" and "alignment" not in model.card
    assert model.card["bleu_by_length"][-1]["n"] == 20
    ids, trace = model.translate(["我昨天吃了苹果"])
    assert trace["decoder.attn.weights"].shape[-1] == 7
    assert main(args[:3] + [str(tmp_path / "nowhere")] + args[4:]) == 2
    assert "no such file or folder" in capsys.readouterr().out
    assert main(args[:5] + ["fr"] + args[6:]) == 2
    assert "not ['fr']" in capsys.readouterr().out
