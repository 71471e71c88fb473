"""The language-model page through AppTest: numbers against torch, bad input, URL state, the picker."""

from __future__ import annotations

import io
import math
import zipfile

import pytest
import torch
from streamlit.testing.v1 import AppTest

from appkit.registry import PAGES
from seqviz.checkpoints import load
from tests.app.test_pages import open_page

LM = next(p for p in PAGES if p.path == "language_model.py")


def lm_page(query=None) -> AppTest:
    at = open_page(LM, query)
    assert not at.exception, at.exception
    return at


def metric(at, label):
    return next(m.value for m in at.metric if m.label.startswith(label))


def sample(at) -> str:
    return next(h.value for h in at.html if "seqviz-sample" in h.value)


def set_text(at, text):
    next(t for t in at.text_area if t.label == "Text").input(text).run()
    assert not at.exception, at.exception
    return at


def test_perplexity_shown_equals_exp_mean_nll(tiny_only):
    at = set_text(lm_page({"recurrent_lm": "tiny-gru"}), "Whether 'tis nobler in the mind")
    model = load(tiny_only / "tiny-gru")
    ids = model.tokenizer.encode("Whether 'tis nobler in the mind").ids
    logits, _ = model(torch.tensor([ids]))
    nll = -torch.log_softmax(logits[0, :-1].double(), -1)[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
    assert metric(at, "Perplexity") == f"{math.exp(float(nll.mean())):.2f}"
    assert metric(at, "Mean loss (nats") == f"{float(nll.mean()):.3f}"
    assert metric(at, "Tokens scored") == str(len(ids) - 1)
    assert metric(at, "Uniform guess") == str(len(model.tokenizer))
    assert at.get("vega_lite_chart") and at.get("html")


def test_empty_text_gets_a_message_not_a_traceback(tiny_only):
    at = set_text(lm_page(), "   ")
    assert any("Type some text" in i.value for i in at.info)
    assert not at.metric and not at.error


def test_unknown_characters_are_shown_and_the_rest_is_scored(tiny_only):
    at = set_text(lm_page(), "naïve café, or not")
    warning = " ".join(w.value for w in at.warning)
    assert "'ï'" in warning and "'é'" in warning and "left out" in warning
    assert metric(at, "Tokens scored") == str(len("nave caf, or not") - 1)


def test_only_unknown_characters(tiny_only):
    at = set_text(lm_page(), "ééé")
    assert any("vocabulary" in w.value for w in at.warning) and not at.metric


def test_long_text_is_truncated_with_a_notice(tiny_only):
    at = set_text(lm_page(), "abcdefghij" * 300)
    assert any("only the first 2,000 were read" in w.value and "1,000 tokens cut" in w.value for w in at.warning)
    assert metric(at, "Tokens scored") == "1,999"


def test_query_params_restore_the_view(tiny_only):
    at = lm_page({"recurrent_lm": "tiny-lstm", "text": "To be or not", "temp": "1.3", "unit": "bits",
                  "n": "40", "seed": "5"})
    assert next(t for t in at.text_area if t.label == "Text").value == "To be or not"
    assert next(s for s in at.slider if s.label == "Temperature").value == pytest.approx(1.3)
    assert next(s for s in at.slider if s.label == "Tokens to sample").value == 40
    assert at.number_input[0].value == 5
    assert next(r for r in at.radio if r.label == "Unit").value == "bits"
    assert any("tiny-lstm" in c.value for c in at.sidebar.caption)
    assert metric(at, "Mean loss (bits")


def test_sample_picker_and_seeded_continuation(tiny_only):
    at = lm_page()
    at.selectbox(key="sample").select("Modern prose").run()
    assert "quick brown fox" in next(t for t in at.text_area if t.label == "Text").value
    first = sample(at)
    at.run()
    assert sample(at) == first  # same seed, same sample
    at.number_input[0].increment().run()
    assert sample(at) != first


def test_comparison_lists_every_chosen_model(tiny_only):
    at = lm_page()
    table = at.dataframe[0].value
    assert list(table["model"]) == ["tiny-gru", "tiny-lstm", "tiny-rnn"]
    assert (table["perplexity"] - table["loss (nats/token)"].map(math.exp)).abs().max() < 1e-9


def test_choice_persists_across_page_switches(tiny_only):
    at = lm_page()
    at.sidebar.selectbox[0].select("tiny-rnn").run()
    assert any("tiny-rnn" in c.value for c in at.sidebar.caption)
    at.switch_page("pages/zoo.py").run()
    at.switch_page("pages/language_model.py").run()
    assert not at.exception
    assert any("tiny-rnn" in c.value for c in at.sidebar.caption)


def test_bad_local_folder_shows_the_error_and_falls_back(tiny_only, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(tmp_path))  # typed paths open only under these
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    at = lm_page()
    at.sidebar.radio[0].set_value("Local folder").run()
    at.sidebar.text_input[0].input(str(tmp_path / "broken")).run()
    assert not at.exception
    assert any("not valid JSON" in e.value for e in at.error)
    assert any("instead" in i.value for i in at.info)
    assert at.metric  # the page still works, on a shipped checkpoint


def test_hub_repo_offline_gives_a_clear_message(tiny_only, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = lm_page()
    at.sidebar.radio[0].set_value("Hub").run()
    at.sidebar.text_input[0].input("nobody/no-such-model").run()
    assert not at.exception
    assert any("Hub download failed" in e.value for e in at.error)
    assert at.metric


def test_uploaded_zip_is_used(tiny_only):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in (tiny_only / "tiny-lstm").iterdir():
            z.write(f, f"uploaded/{f.name}")
    at = lm_page()
    at.sidebar.radio[0].set_value("Upload").run()
    at.sidebar.file_uploader[0].upload("mine.zip", buf.getvalue(), "application/zip").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("mine.zip" in c.value for c in at.sidebar.caption)


def test_hostile_upload_is_refused_and_the_page_keeps_working(tiny_only):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("../../escape.json", "{}")
    at = lm_page()
    at.sidebar.radio[0].set_value("Upload").run()
    at.sidebar.file_uploader[0].upload("evil.zip", buf.getvalue(), "application/zip").run()
    assert not at.exception
    assert any("outside the folder" in e.value for e in at.error)
    assert at.metric and any("tiny-" in c.value for c in at.sidebar.caption)


def test_a_checkpoint_of_another_type_is_refused(tiny_only, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(tmp_path))
    folder = tmp_path / "w2v"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "word2vec"}')
    at = lm_page()
    at.sidebar.radio[0].set_value("Local folder").run()
    at.sidebar.text_input[0].input(str(folder)).run()
    assert not at.exception
    assert any("this is a word2vec checkpoint" in e.value for e in at.error)
    assert at.metric


def test_a_broken_shipped_checkpoint_falls_back_to_the_next(tiny_lm_dir, tmp_path, monkeypatch):
    import shutil

    root = tmp_path / "roots"
    shutil.copytree(tiny_lm_dir, root)
    (root / "tiny-gru" / "model.safetensors").write_bytes(b"not weights")
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(root))
    at = lm_page()
    assert any("tiny-gru" in e.value and "safetensors" in e.value for e in at.error)
    assert any("tiny-lstm" in c.value for c in at.sidebar.caption) and at.metric
