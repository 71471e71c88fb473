"""Surprisal, perplexity and continuations checked against log-softmax computed here by hand."""

import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest
import torch

import seqviz
from seqviz.introspect.language import (MAX_TOKENS, SAMPLE_TEXTS, compare, continue_text, perplexity, prepare,
                                        read_scores, score_text, summary, write_scores)
from seqviz.models.recurrent import RecurrentLM, generate
from tests.conftest import ROOT, build_tiny_lm
from tests.float32 import ATOL, RTOL

TEXT = "To be, or not to be: that is the question."


def reference_nll(model, ids):
    """-log p(ids[t] | ids[<t]) for t >= 1 from the plain forward pass and torch.log_softmax."""
    logits, _ = model(torch.tensor([ids]))
    logp = torch.log_softmax(logits[0, :-1].double(), dim=-1)
    return -logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_surprisal_and_perplexity_match_log_softmax(cell):
    model = build_tiny_lm(cell, seed=3)
    scored = score_text(model, TEXT)
    ids = model.tokenizer.encode(TEXT).ids
    nll = reference_nll(model, ids)
    table = scored.table
    assert list(table["token"]) == list(TEXT)
    assert math.isnan(table["loss"][0])  # the first character has no context
    assert torch.allclose(torch.tensor(table["loss"][1:].to_numpy()), nll, atol=1e-5)
    assert torch.allclose(torch.tensor(table["bits"][1:].to_numpy()), nll / math.log(2), atol=1e-5)
    assert torch.allclose(torch.tensor(table["prob"][1:].to_numpy()), torch.exp(-nll), atol=1e-6)
    assert scored.n_scored == len(TEXT) - 1
    assert scored.perplexity == pytest.approx(math.exp(float(nll.mean())), rel=1e-6)
    assert perplexity(table) == pytest.approx(scored.perplexity)


def test_expected_token_is_the_argmax_of_the_previous_step():
    model = build_tiny_lm("lstm", seed=4)
    ids = model.tokenizer.encode(TEXT).ids
    logits, _ = model(torch.tensor([ids]))
    probs = torch.softmax(logits[0].double(), -1)
    table = score_text(model, TEXT).table
    for t in (1, 7, len(ids) - 1):
        top = int(probs[t - 1].argmax())
        assert table["expected"][t] == model.tokenizer.tokens[top]
        assert table["expected_prob"][t] == pytest.approx(float(probs[t - 1, top]), rel=1e-6)


def test_unknown_characters_are_listed_and_dropped():
    model = build_tiny_lm("gru")
    scored = score_text(model, "café ok é")
    assert scored.unknown == ["é"]
    assert scored.text == "caf ok "
    # Scores equal those of the text without the unknown characters.
    plain = score_text(model, "caf ok ")
    assert scored.perplexity == pytest.approx(plain.perplexity)


def test_long_text_is_truncated_to_max_tokens():
    model = build_tiny_lm("rnn")
    text = "abcde" * 500  # 2,500 characters
    scored = score_text(model, text)
    assert len(scored.table) == MAX_TOKENS and scored.truncated == 2500 - MAX_TOKENS
    ids, pieces, unknown, cut = prepare(model.tokenizer, text, max_tokens=10)
    assert pieces == list("abcdeabcde") and cut == 2490 and unknown == []
    with pytest.raises(ValueError):
        prepare(model.tokenizer, text, max_tokens=0)


@pytest.mark.parametrize("text, message", [("", "empty"), ("ééé", "vocabulary")])
def test_nothing_to_score_raises_a_readable_error(text, message):
    with pytest.raises(ValueError, match=message):
        score_text(build_tiny_lm("lstm"), text)


def test_a_single_token_scores_nothing():
    scored = score_text(build_tiny_lm("lstm"), "a")
    assert scored.n_scored == 0 and math.isnan(scored.perplexity)


def test_continuation_is_seeded_and_greedy_at_temperature_zero():
    model = build_tiny_lm("lstm", seed=5)
    a = continue_text(model, TEXT, n=30, temperature=1.0, seed=7)
    assert a == continue_text(model, TEXT, n=30, temperature=1.0, seed=7)
    assert len(a) == 30 and "<pad>" not in a and "<unk>" not in a
    ids = model.tokenizer.encode(TEXT).ids
    assert a == model.tokenizer.decode(generate(model, ids, 30, temperature=1.0, seed=7))
    # Greedy by hand: feed the whole sequence again each step and take the argmax.
    greedy = continue_text(model, TEXT, n=8, temperature=0.0)
    seq = list(ids)
    banned = model.tokenizer.special_ids
    for _ in range(8):
        logits, _ = model(torch.tensor([seq]))
        last = logits[0, -1].clone()
        last[banned] = -float("inf")
        seq.append(int(last.argmax()))
    assert greedy == model.tokenizer.decode(seq[len(ids):])


def test_compare_and_summary_tables():
    scored = {cell: score_text(build_tiny_lm(cell), TEXT) for cell in ("rnn", "lstm")}
    long = compare(scored)
    assert len(long) == 2 * len(TEXT) and set(long["model"]) == {"rnn", "lstm"}
    table = summary(scored).set_index("model")
    for cell, s in scored.items():
        mean = s.table["loss"].dropna().mean()
        assert table.loc[cell, "loss (nats/token)"] == pytest.approx(mean)
        assert table.loc[cell, "bits/token"] == pytest.approx(mean / math.log(2))
        assert table.loc[cell, "perplexity"] == pytest.approx(math.exp(mean))


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_generate_cell_steps_match_the_fused_layers(cell, temperature):
    """generate() steps with torch.*_cell kernels; it must draw what the fused modules would."""
    model = build_tiny_lm(cell, seed=6)
    ids = model.tokenizer.encode(TEXT).ids
    gen = torch.Generator().manual_seed(11)
    expected = []
    with torch.no_grad():
        logits, state = model(torch.tensor([ids]))
        for _ in range(40):
            last = logits[0, -1].clone()
            last[model.tokenizer.special_ids] = -float("inf")
            nxt = int(last.argmax()) if temperature == 0 else int(
                torch.multinomial(torch.softmax(last / temperature, -1), 1, generator=gen))
            expected.append(nxt)
            logits, state = model(torch.tensor([[nxt]]), state)
    assert generate(model, ids, 40, temperature=temperature, seed=11) == expected


def test_word_level_tokens_are_joined_with_spaces():
    from seqviz.config import LMConfig
    from seqviz.data.tokenizers import Tokenizer
    from seqviz.models.recurrent import RecurrentLM

    torch.manual_seed(0)
    tok = Tokenizer.train("word", "to be or not to be that is the question")
    model = RecurrentLM(LMConfig(cell="gru", n_layers=1, d_embed=4, d_hidden=6, tokenizer="word",
                                 vocab_size=len(tok)), tok).eval()
    scored = score_text(model, "To be or not, zebra")
    assert list(scored.table["token"]) == ["To", "be", "or", "not"]  # case-folded lookup keeps "To"
    assert scored.unknown == [",", "zebra"]
    assert scored.text == " ".join(scored.table["token"])
    assert continue_text(model, "to be", n=3, seed=1).startswith(" ")


# ------------------------------------------------------------------ scores.json: the sample texts' scores, shipped
SHIPPED = sorted(p.parent for p in (ROOT / "checkpoints").glob("*/scores.json"))


def test_every_shipped_language_model_ships_its_sample_scores():
    lms = sorted(p.parent for p in (ROOT / "checkpoints").glob("*/config.json")
                 if json.loads(p.read_text()).get("model_type") in ("recurrent_lm", "mamba", "rwkv"))
    assert len(lms) == 7 and SHIPPED == lms  # RNN, GRU, LSTM, minGRU, minLSTM, a transformers Mamba and RWKV


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_shipped_scores_are_what_the_model_reads(folder):
    """Each shipped scores.json holds every sample text, as score_text computes it now from the weights."""
    model = seqviz.load(folder)  # seqviz's own cells, or a transformers Mamba
    for name, text in SAMPLE_TEXTS.items():
        shipped, live = read_scores(folder, text), score_text(model, text)
        assert shipped is not None, name
        pd.testing.assert_frame_equal(shipped.table, live.table, rtol=RTOL, atol=ATOL)  # another machine's float32
        assert (shipped.kind, shipped.vocab_size, shipped.unknown, shipped.truncated) == \
            (live.kind, live.vocab_size, live.unknown, live.truncated)
    # The numbers are real: perplexity by hand from the per-token losses of one text.
    table = read_scores(folder, SAMPLE_TEXTS["hamlet"]).table
    assert read_scores(folder, SAMPLE_TEXTS["hamlet"]).perplexity == pytest.approx(
        math.exp(table["loss"].iloc[1:].mean()))


def test_scores_are_handed_back_only_for_the_files_they_were_measured_on(tmp_path):
    folder = build_tiny_lm("gru", seed=2).save_pretrained(tmp_path / "ck")
    write_scores(folder, [TEXT, "日本語だけ"], max_tokens=20)  # the second has no known token: left out
    model = RecurrentLM.from_pretrained(folder)
    pd.testing.assert_frame_equal(read_scores(folder, TEXT, 20).table, score_text(model, TEXT, 20).table)
    assert read_scores(folder, TEXT, 20).truncated == len(TEXT) - 20
    assert read_scores(folder, "日本語だけ", 20) is None  # not held
    assert read_scores(folder, "another text", 20) is None
    assert read_scores(folder, TEXT) is None  # written with max_tokens=20, asked with the default
    weights = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(weights[:-4] + b"\0\0\0\0")  # the weights changed since
    assert read_scores(folder, TEXT, 20) is None
    (folder / "model.safetensors").write_bytes(weights)
    assert read_scores(folder, TEXT, 20) is not None
    (folder / "scores.json").write_text("{not json")
    assert read_scores(folder, TEXT, 20) is None


def test_reading_shipped_scores_needs_no_torch(tmp_path):
    """The app's first view of a sample text (picker + scores) must not wait for torch's import (2-3 s)."""
    script = (
        "import sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        "def page():\n"
        "    import sys\n"
        "    import streamlit as st\n"
        "    from appkit import cache as models\n"
        "    from appkit.sidebar import deferred_picker\n"
        "    from seqviz.introspect.language import SAMPLE_TEXTS\n"
        "    from seqviz.views import language as views\n"
        "    ref = deferred_picker('recurrent_lm').ref\n"
        "    shown = models.view_of_path(views.shipped_surprisal, ref, text=SAMPLE_TEXTS['hamlet'], unit='nats')\n"
        "    st.write(f\"{'torch' in sys.modules} {shown.facts['perplexity']!r}\")\n"
        "at = AppTest.from_function(page, default_timeout=60).run()\n"
        "print('exception' if at.exception else at.markdown[0].value)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SEQVIZ_CHECKPOINTS": str(ROOT / "checkpoints")}
    (tmp_path / "first_view.py").write_text(script)  # AppTest reads the function's source from a file
    run = subprocess.run([sys.executable, str(tmp_path / "first_view.py")], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    out = (run.stdout.strip().splitlines() or [run.stderr[-2000:]])[-1]
    imported, ppl = out.split()
    assert imported == "False"
    first = sorted(p for p in (ROOT / "checkpoints").glob("shakespeare-char-*"))[0]  # the picker's default
    live = score_text(RecurrentLM.from_pretrained(first), SAMPLE_TEXTS["hamlet"])
    assert float(ppl) == pytest.approx(live.perplexity, rel=RTOL)  # shipped: another machine's float32
