"""The language-model page through AppTest: numbers against torch, bad input, URL state, the picker."""

from __future__ import annotations

import io
import math
import shutil
import zipfile
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from appkit.registry import PAGES
from seqviz import load
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
    at = lm_page({"recurrent_lm": "tiny-lstm", "lm_text": "To be or not", "lm_temp": "1.3", "lm_unit": "bits",
                  "lm_n": "40", "lm_seed": "5"})
    assert next(t for t in at.text_area if t.label == "Text").value == "To be or not"
    assert next(s for s in at.slider if s.label == "Temperature").value == pytest.approx(1.3)
    assert next(s for s in at.slider if s.label == "Tokens to sample").value == 40
    assert at.number_input[0].value == 5
    assert next(r for r in at.radio if r.label == "Unit").value == "bits"
    assert any("tiny-lstm" in c.value for c in at.sidebar.caption)
    assert metric(at, "Mean loss (bits")


def test_sample_picker_and_seeded_continuation(tiny_only):
    at = lm_page()
    at.selectbox(key="lm_sample").select("Modern prose").run()
    assert "quick brown fox" in next(t for t in at.text_area if t.label == "Text").value
    first = sample(at)
    at.run()
    assert sample(at) == first  # same seed, same sample
    at.number_input[0].increment().run()
    assert sample(at) != first


def test_comparison_lists_every_chosen_model(tiny_only):
    """Perplexity and bits come right after the model (a 390 px phone showed the first two columns only), to 3
    decimals, each the library's."""
    from seqviz.views import language as views

    at = lm_page()
    table = at.dataframe[0].value
    assert list(table.columns) == ["model", "perplexity", "bits/token", "loss (nats/token)", "tokens scored"]
    assert list(table["model"]) == ["tiny-rnn", "tiny-gru", "tiny-lstm"]  # as chosen: the default RNN, GRU, LSTM
    text = next(t for t in at.text_area if t.label == "Text").value
    models = {c: load(tiny_only / c) for c in table["model"]}
    tables = {c: views.surprisal(m, text).data for c, m in models.items()}
    lib = views.summary(tables).data
    assert list(table["perplexity"]) == [f"{v:.3f}" for v in lib["perplexity"]]
    assert list(table["bits/token"]) == [f"{v:.3f}" for v in lib["bits/token"]]
    assert all(abs(math.exp(float(lo)) - float(p)) < 2e-3 * float(p)
               for lo, p in zip(table["loss (nats/token)"], table["perplexity"]))


def test_the_comparison_table_names_its_columns_in_the_visitors_language(tiny_only):
    """The view's columns keep their English names (the CSV, the tests); the table shows them translated, and the
    mean loss's unit is 奈特 as everywhere else (it read "平均损失（nats/词元）")."""
    from seqviz.text import catalogue
    from tests.i18n.test_pages_zh import open_zh

    at = open_zh(LM)
    assert not at.exception, at.exception
    zh = catalogue("zh").gettext
    names = ("model", "perplexity", "bits/token", "loss (nats/token)", "tokens scored")
    assert list(at.dataframe[0].value.columns) == [zh(n) for n in names]
    assert all(zh(n) != n for n in names)
    assert any(m.label == "平均损失（奈特/词元）" for m in at.metric), [m.label for m in at.metric]
    assert not any("nats" in m.label for m in at.metric)


def test_touch_hints_say_tap_or_hover(tiny_only):
    at = lm_page()
    hints = [c.value for c in at.caption if "over a token" in c.value]
    assert hints and all(h.startswith("Tap or hover") for h in hints)


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
    assert any("asking the Hugging Face Hub about it failed" in e.value and "network" in e.value for e in at.error)
    assert at.metric


def fake_hub(monkeypatch, cache: Path, files: dict[str, Path], sizes: dict[str, int] | None = None) -> list:
    """The Hub answers with ``files`` (name -> local file to serve, into ``cache``); returns the names downloaded."""
    import shutil

    import huggingface_hub

    from seqviz import hub

    fetched = []
    monkeypatch.setattr(hub, "needed_files", lambda repo, patterns=None: [
        (name, (sizes or {}).get(name, path.stat().st_size)) for name, path in files.items()])

    def download(repo, name, **kw):
        fetched.append(name)
        out = cache / repo.replace("/", "--") / name
        out.parent.mkdir(parents=True, exist_ok=True)
        return str(shutil.copy(files[name], out))

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    return fetched


def test_hub_download_shows_progress_and_opens_the_model(tiny_only, tmp_path, monkeypatch):
    folder = tiny_only / "tiny-gru"
    fetched = fake_hub(monkeypatch, tmp_path, {f.name: f for f in folder.iterdir() if f.is_file()})
    progress = []
    import streamlit.delta_generator as dg

    real = dg.DeltaGenerator.progress
    monkeypatch.setattr(dg.DeltaGenerator, "progress",
                        lambda self, value, text=None: progress.append(value) or real(self, value, text=text))
    at = lm_page()
    at.sidebar.radio[0].set_value("Hub").run()
    at.sidebar.text_input[0].input("someone/tiny-gru").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert sorted(fetched) == sorted(f.name for f in folder.iterdir() if f.is_file())
    assert progress[0] == 0.0 and progress[-1] == pytest.approx(1.0) and len(progress) == len(fetched) + 1
    assert any("Using **someone/tiny-gru** (hub)" in c.value for c in at.sidebar.caption)
    assert at.metric


def test_hub_repo_over_the_budget_is_refused_before_downloading(tiny_only, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQVIZ_HUB_MAX_BYTES", str(10 << 20))
    folder = tiny_only / "tiny-gru"
    fetched = fake_hub(monkeypatch, tmp_path, {f.name: f for f in folder.iterdir() if f.is_file()},
                       sizes={"model.safetensors": 3 << 30})
    at = lm_page()
    at.sidebar.radio[0].set_value("Hub").run()
    at.sidebar.text_input[0].input("someone/huge-model").run()
    assert not at.exception and fetched == []
    assert any("over this server's 10 MiB download limit" in e.value and "refused before downloading" in e.value
               for e in at.error)
    assert at.metric and any("tiny-" in c.value for c in at.sidebar.caption)


def test_a_typed_local_path_is_never_sent_to_the_hub(tiny_only, monkeypatch):
    at = lm_page()
    at.sidebar.radio[0].set_value("Hub").run()
    at.sidebar.text_input[0].input(str(tiny_only / "tiny-gru")).run()
    assert not at.exception
    assert any("is not a Hub repo id" in e.value for e in at.error)


@pytest.mark.parametrize("switch, source", [("SEQVIZ_LOCAL_PATHS", "Local folder"), ("SEQVIZ_HUB", "Hub")])
def test_the_operator_can_switch_a_source_off(tiny_only, monkeypatch, switch, source):
    monkeypatch.setenv(switch, "0")
    at = lm_page()
    options = at.sidebar.radio[0].options
    assert source not in options and "Shipped" in options and "Upload" in options
    assert at.metric and not at.error


def test_a_typed_path_chosen_before_paths_were_switched_off_is_refused(tiny_only, monkeypatch):
    at = lm_page()
    at.sidebar.radio[0].set_value("Local folder").run()
    at.sidebar.text_input[0].input(str(tiny_only / "tiny-rnn")).run()
    assert any("tiny-rnn" in c.value and "local folder" in c.value for c in at.sidebar.caption)
    monkeypatch.setenv("SEQVIZ_LOCAL_PATHS", "0")
    at.run()
    assert not at.exception
    assert any("SEQVIZ_LOCAL_PATHS=0" in e.value for e in at.error)
    assert at.metric and "Local folder" not in at.sidebar.radio[0].options


def test_plain_state_dict_folder_loads_and_the_page_says_what_it_found(tiny_only, tmp_path, monkeypatch):
    """A PyTorch word_language_model-style LSTM: only safetensors weights and a vocab.json list, no spec."""
    import json

    from safetensors.torch import save_file

    from tests.conftest import build_tiny_lm, plain_state_dict

    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(tmp_path))
    model = build_tiny_lm("lstm", seed=7)
    folder = tmp_path / "my-char-lstm"
    folder.mkdir()
    save_file({k: v.contiguous() for k, v in plain_state_dict(model).items()}, str(folder / "weights.safetensors"))
    (folder / "vocab.json").write_text(json.dumps(model.tokenizer.tokens))
    at = set_text(lm_page(), "To be, or not to be")
    at.sidebar.radio[0].set_value("Local folder").run()
    at.sidebar.text_input[0].input(str(folder)).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "Using **my-char-lstm** (local folder)" in captions
    assert ("plain PyTorch language model's state dict" in captions and "2-layer LSTM, hidden 12" in captions
            and "inferred from the weight shapes" in captions), captions
    ids = model.tokenizer.encode("To be, or not to be").ids
    logits, _ = model(torch.tensor([ids]))
    nll = -torch.log_softmax(logits[0, :-1].double(), -1)[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
    assert metric(at, "Perplexity") == f"{math.exp(float(nll.mean())):.2f}"
    # the weight file itself works too
    at.sidebar.text_input[0].input(str(folder / "weights.safetensors")).run()
    assert not at.exception and not at.error and metric(at, "Perplexity") == f"{math.exp(float(nll.mean())):.2f}"


@pytest.mark.parametrize("where", ["hidden file", "hidden folder", "outside", "symlink out"])
def test_hidden_or_outside_paths_are_refused_without_a_traceback(tiny_only, tmp_path, monkeypatch, where):
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".streamlit").mkdir(parents=True)
    work.mkdir()
    secret = "hunter2SECRET"
    (home / ".netrc").write_text(f"machine example.com login alice password {secret}\n")
    (home / ".streamlit" / "secrets.toml").write_text(f'token = "{secret}"\n')
    (home / "notes.txt").write_text(f"alice {secret} 0.5\n")
    shutil.copytree(tiny_only / "tiny-gru", work / ".hidden-ck")
    (work / "link").symlink_to(home)
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(work))
    typed = {"hidden file": home / ".netrc", "hidden folder": work / ".hidden-ck", "outside": home / "notes.txt",
             "symlink out": work / "link" / "notes.txt"}[where]
    if where == "hidden file":  # a hidden file under an allowed folder
        monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(home))
    at = lm_page()
    at.sidebar.radio[0].set_value("Local folder").run()
    at.sidebar.text_input[0].input(str(typed)).run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "refused" in errors and ("hidden file or folder" in errors) == where.startswith("hidden"), errors
    assert any("instead" in i.value for i in at.info)
    assert at.metric and any("tiny-" in c.value for c in at.sidebar.caption)
    page = " ".join(str(getattr(e, "value", "")) for e in at.main) + " ".join(
        str(getattr(e, "value", "")) for e in at.sidebar)
    assert secret not in page


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


def test_every_control_key_carries_the_page_prefix(tiny_only):
    at = lm_page()
    kinds = ("slider", "select_slider", "selectbox", "radio", "checkbox", "toggle", "number_input", "text_input",
             "text_area", "multiselect", "segmented_control")
    keys = [w.key for kind in kinds for w in getattr(at.main, kind)]
    assert len(keys) >= 7 and all(k.startswith("lm_") for k in keys), keys


def test_comparison_of_the_chosen_models_only_equals_torch(tiny_only):
    text = "Whether 'tis nobler in the mind"
    at = set_text(lm_page(), text)
    at.multiselect(key="lm_compare").set_value(["tiny-rnn"]).run()  # a fragment rerun
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["model"]) == ["tiny-rnn"]
    model = load(tiny_only / "tiny-rnn")
    ids = model.tokenizer.encode(text).ids
    logits, _ = model(torch.tensor([ids]))
    nll = -torch.log_softmax(logits[0, :-1].double(), -1)[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
    assert table["perplexity"][0] == f"{math.exp(float(nll.mean())):.3f}"  # shown to 3 decimals
    assert table["loss (nats/token)"][0] == f"{float(nll.mean()):.3f}"
    assert int(table["tokens scored"][0]) == len(ids) - 1
    assert metric(at, "Tokens scored") == str(len(ids) - 1)  # the section above kept its own state


def test_a_kept_comparison_naming_a_checkpoint_that_is_gone_is_dropped(tiny_lm_dir, tmp_path, monkeypatch):
    import shutil

    root = tmp_path / "roots"
    shutil.copytree(tiny_lm_dir, root)
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(root))
    at = lm_page()
    at.multiselect(key="lm_compare").set_value(["tiny-gru", "tiny-rnn"]).run()
    shutil.rmtree(root / "tiny-rnn")
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert list(at.dataframe[0].value["model"]) == ["tiny-gru"]


def test_the_first_view_of_a_sample_comes_from_the_shipped_scores(monkeypatch):
    """On the shipped checkpoints the default view reads scores.json (no model is run for it) and shows the
    numbers the model gives when it reads the text here."""
    from seqviz.introspect import language
    from seqviz.introspect.language import SAMPLE_TEXTS
    from tests.conftest import ROOT

    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(ROOT / "checkpoints"))
    read, real = [], language.score_text
    monkeypatch.setattr(language, "score_text", lambda model, text, **kw: read.append(text) or real(model, text, **kw))
    at = lm_page({"recurrent_lm": "shakespeare-char-lstm"})
    assert read == [] and at.get("vega_lite_chart")
    live = real(load(ROOT / "checkpoints" / "shakespeare-char-lstm"), SAMPLE_TEXTS["hamlet"])
    assert metric(at, "Perplexity") == f"{live.perplexity:.2f}"
    assert metric(at, "Tokens scored") == str(live.n_scored)
    assert any(c.value.startswith("Found") and "2-layer LSTM" in c.value for c in at.sidebar.caption)  # opened later
    set_text(at, "A line of my own.")  # a text of the visitor's own: the model reads it
    assert read == ["A line of my own."] * 3  # the page's model, then the comparison's other two


