"""The generated corpora: reproducible, the documented word order, true alignments; the vocabularies."""

import datetime
import re

import pytest

from seqviz.data.tokenizers import TokenizerError
from seqviz.seq2seq.data import (NOUNS, PLACES, SUBJECTS, TIMES, VERBS, date_pair, generate, make_splits)
from seqviz.seq2seq.vocab import Vocab

TIME_WORDS = {zh: en.split() for zh, en, _ in TIMES}


def test_generator_is_deterministic_for_a_seed_and_differs_across_seeds():
    a, b = generate("zh-en", 300, seed=11), generate("zh-en", 300, seed=11)
    assert a == b
    assert a != generate("zh-en", 300, seed=12)
    assert generate("dates", 50, seed=1) == generate("dates", 50, seed=1)


def test_lengths_run_from_three_to_past_fifty():
    lengths = [len(p.src) for p in generate("zh-en", 3000, seed=0)]
    assert min(lengths) == 3
    assert max(lengths) > 60
    assert sum(n > 50 for n in lengths) > 100


def test_time_words_move_to_the_end_of_the_english_clause():
    """昨天 comes before its verb in Chinese; 'yesterday' comes after everything else in its clause."""
    checked = 0
    for p in generate("zh-en", 500, seed=4):
        # English clauses are separated by ','; each time word's aligned English words close their clause
        clauses, current = [], []
        for k, w in enumerate(p.tgt):
            if w == ",":
                clauses.append(current)
                current = []
            else:
                current.append(k)
        clauses.append(current)
        for clause in clauses:
            times = [k for k in clause if p.align[k] >= 0 and p.src[p.align[k]] in TIME_WORDS]
            if not times:
                continue
            assert times == clause[-len(times):], (p.src, p.tgt)
            zh = p.src[p.align[times[0]]]
            assert [p.tgt[k] for k in times] == TIME_WORDS[zh]
            # in the source the time word precedes the verb it modifies
            verbs = [k for k in clause if p.align[k] >= 0 and p.src[p.align[k]] in {v[0] for v in VERBS}]
            assert all(p.align[times[0]] < p.align[v] for v in verbs)
            checked += 1
    assert checked > 300


def test_alignments_point_at_the_translated_unit():
    lexicon = {zh: en.replace("_the ", "").split()[-1] for zh, en in SUBJECTS}
    lexicon.update({zh: en.split()[-1] for zh, en in PLACES})
    lexicon.update({v[0]: {v[1], v[2]} for v in VERBS})
    lexicon.update({zh: {sg, pl} for zh, (_, sg, pl) in NOUNS.items()})
    checked = 0
    for p in generate("zh-en", 300, seed=5):
        assert len(p.align) == len(p.tgt)
        for w, a in zip(p.tgt, p.align):
            if a < 0:
                assert w in {"the", "of"}  # articles and "of" have no source unit
                continue
            expected = lexicon.get(p.src[a])
            if expected is None or w in {"my", "in", "at"}:
                continue
            assert w in (expected if isinstance(expected, set) else {expected}), (w, p.src[a])
            checked += 1
    assert checked > 2000


def test_articles_have_no_source_and_a_an_follow_the_next_word():
    for p in generate("zh-en", 400, seed=6):
        for k, w in enumerate(p.tgt):
            if w == "the":
                assert p.align[k] == -1
            if w in ("a", "an"):
                assert (w == "an") == p.tgt[k + 1].startswith(tuple("aeiou"))


def test_dates_map_every_written_form_to_iso():
    import random

    rng = random.Random(0)
    for _ in range(400):
        p = date_pair(rng)
        iso = "".join(p.tgt)
        day = datetime.date.fromisoformat(iso)
        text = "".join(p.src)
        assert str(day.day) in text and (str(day.year) in text or f"{day.year % 100:02d}" in text)
        m = re.fullmatch(r"(\d{4})年(\d+)月(\d+)日", text)
        if m:
            assert datetime.date(*map(int, m.groups())) == day


def test_held_out_sources_never_occur_in_training():
    s = make_splits("zh-en", 2000, 100, 200, seed=0, max_clauses=2)
    train = {p.src for p in s.train}
    assert len(s.valid) == 100 and len(s.test) == 200
    assert not any(p.src in train for p in s.valid + s.test)


def test_unit_vocab_segments_unspaced_chinese_and_keeps_unknowns():
    pairs = generate("zh-en", 500, seed=0)
    vocab = Vocab.build("unit", [p.src for p in pairs])
    spaced = vocab.encode("我 昨天 在 公园 吃 了 一 个 苹果")
    assert vocab.encode("我昨天在公园吃了一个苹果").ids == spaced.ids
    assert spaced.unknown == [] and len(spaced.ids) == 9
    enc = vocab.encode("我昨天在月球吃了一个苹果")  # 月球 (the moon) is not in the grammar
    assert "月球" in enc.unknown and "月球" in enc.pieces
    assert enc.ids[enc.pieces.index("月球")] == 1  # <unk>, shown, not dropped
    assert vocab.decode(vocab.encode("我 吃 了").ids + [3, 5]) == "我 吃 了"


def test_vocab_json_round_trip_and_validation():
    vocab = Vocab.build("char", [tuple("2021-03-05")])
    assert Vocab.from_dict(vocab.to_dict()).tokens == vocab.tokens
    with pytest.raises(TokenizerError):
        Vocab("unit", ["a", "b"])
    with pytest.raises(TokenizerError):
        Vocab("char", ["<pad>", "<unk>", "<bos>", "<eos>", "ab"])
