"""The seq2seq pages on a small plain encoder-decoder trained here (``trained_plain``), with and without the
user's own pairs file: every page runs, the numbers it shows are the trained module's own, a model without
attention says why the alignment is absent, and a malformed pairs file is named by its line."""

from __future__ import annotations

import os

import pytest
import sacrebleu
from streamlit.testing.v1 import AppTest

from appkit.registry import PAGES
from appkit.sidebar import widget_key
from tests.app.tabs import choose_tab
from tests.app.test_pages import APP
from tests.seq2seq import trained_plain as tp

PAGE = {p.path: p for p in PAGES}
HELD = tp.all_pairs()[:40]  # 3 to 5 letters
PAIRS_KEY = {"attention.py": "att_pairs", "bleu_length.py": "att_pairs", "exposure_bias.py": "eb_pairs",
             "decoding.py": "eb_pairs"}


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory):
    """A folder with the tutorial's modules trained here, with and without attention (encoder.pt + decoder.pt +
    spec.json each), and the modules themselves."""
    root = tmp_path_factory.mktemp("plain-pages")
    modules = {"with": tp.train(attention=True), "without": tp.train(attention=False, steps=100)}
    for name, module in modules.items():
        tp.save(module, root / name)
    (root / "shipped").mkdir()
    return root, modules


@pytest.fixture
def plain(trained_dir, monkeypatch):
    root, modules = trained_dir
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(root / "shipped"))  # nothing shipped: the user's model only
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", os.pathsep.join([str(root)]))
    return root, modules


def tsv(pairs) -> bytes:
    return "".join(f"{s}\t{t}\n" for s, t in pairs).encode("utf-8")


def clean(at: AppTest) -> AppTest:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def open_plain(path: str, folder, pairs: bytes | None = None, query: dict | None = None) -> AppTest:
    """``path`` with the plain model in ``folder`` typed in the sidebar, and ``pairs`` uploaded on the page."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.query_params.update(query or {})
    at.switch_page(f"pages/{path}").run()
    name = path.removesuffix(".py")
    at.sidebar.radio(key=widget_key("seq2seq", "source", name)).set_value("Local folder").run()
    at.sidebar.text_input(key=widget_key("seq2seq", "folder", name)).input(str(folder)).run()
    if pairs is not None:
        at.file_uploader(key=PAIRS_KEY[path]).set_value(("mine.tsv", pairs, "text/tab-separated-values")).run()
    return clean(at)


def texts(at: AppTest) -> str:
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info])


def measuring(at: AppTest, n: int) -> bool:
    return any(c.value.startswith(f"Measuring on **mine.tsv**: {n} pairs") for c in at.caption)


# ------------------------------------------------------------------ with the user's pairs file
def test_the_attention_page_translates_as_the_module_does_and_offers_the_files_pairs(plain):
    root, modules = plain
    at = open_plain("attention.py", root / "with", tsv(HELD))
    assert measuring(at, len(HELD))
    box = at.selectbox(key="att_example")
    assert box.options and all(o.split(" units: ")[1] in {s for s, _t in HELD} for o in box.options)
    src = at.text_input(key="att_sentence").value
    assert src in {s for s, _t in HELD}  # opens on the file's first example, not a Chinese sentence
    assert f"**Greedy translation:** {' '.join(tp.greedy(modules['with'], src))}" in texts(at)
    assert len(at.get("vega_lite_chart")) >= 2  # the alignment and one word's weights
    assert any(c.value.startswith("Reference:") for c in at.caption)


def test_bleu_by_length_is_measured_on_the_pairs_file_and_is_sacrebleu_of_the_modules_translations(plain):
    root, modules = plain
    at = open_plain("bleu_length.py", root / "with", tsv(HELD))
    assert measuring(at, len(HELD))
    assert any("No BLEU-by-length table is stored" in i.value for i in at.info)  # a plain model has no card table
    table = next(d.value for d in at.dataframe if "BLEU" in d.value.columns).set_index("source length (units)")
    hyps = [" ".join(tp.greedy(modules["with"], s, max_len=20)) for s, _t in HELD]
    by_hand = sacrebleu.corpus_bleu(hyps, [[t for _s, t in HELD]], tokenize="none").score
    assert table.loc["all", "sentences"] == str(len(HELD)) and table.loc["all", "BLEU"] == f"{by_hand:.1f}"
    assert len(at.get("vega_lite_chart")) == 1 and f"{len(HELD)} pairs of your pairs file" in texts(at)


def test_the_exposure_page_measures_the_held_out_curves_on_the_pairs_file(plain):
    root, modules = plain
    at = open_plain("exposure_bias.py", root / "with", tsv(HELD))
    assert measuring(at, len(HELD)) and any(m.label == "First divergence" for m in at.metric)
    src, ref = at.text_input(key="eb_src").value, at.text_input(key="eb_ref").value
    assert (src, ref) in set(HELD)  # the menu's first pair, as written in the file
    free = " ".join(tp.greedy(modules["with"], src))
    assert f"**Free-running output:** {free}" in texts(at)
    choose_tab(at, "eb_tab", "Over the held-out set")
    summary = next(d.value for d in clean(at.run()).dataframe if "token error, free-running" in d.value.columns)
    exact = sum(tp.greedy(modules["with"], s) == t.split() for s, t in HELD) / len(HELD)
    assert summary["sentences"].tolist() == [str(len(HELD))]
    assert summary["exact match, free-running"].iloc[0] == f"{100 * exact:.1f}%"


def test_the_decoding_page_runs_the_strategies_on_the_pairs_file(plain):
    root, _modules = plain
    at = open_plain("decoding.py", root / "with", tsv(HELD))
    assert measuring(at, len(HELD))
    assert (at.text_input(key="eb_src").value, at.text_input(key="eb_ref").value) == HELD[0]
    assert any(m.value.startswith("**Beam k=4:**") for m in at.markdown)
    at.toggle(key="eb_strat").set_value(True).run()
    clean(at)
    table = next(d.value for d in at.dataframe if "strategy" in d.value.columns)
    assert "greedy" in set(table["strategy"]) and any(s.startswith("sampling T=") for s in table["strategy"])
    assert len(at.get("vega_lite_chart")) == 2


def test_the_pairs_file_follows_the_visitor_to_the_next_seq2seq_page_until_dropped(plain):
    root, _modules = plain
    at = open_plain("attention.py", root / "with", tsv(HELD[:12]))
    at.switch_page("pages/exposure_bias.py").run()
    assert measuring(clean(at), 12)
    at.button(key="eb_pairs_drop").click().run()
    clean(at)
    assert not any(c.value.startswith("Measuring on") for c in at.caption)


# ------------------------------------------------------------------ without one, without attention, a bad one
def test_without_a_pairs_file_the_pages_say_what_to_give(plain):
    root, _modules = plain
    at = open_plain("bleu_length.py", root / "with")
    at.button(key="att_measure").click().run()
    assert "Give a pairs file above to measure on" in texts(clean(at))
    at = open_plain("decoding.py", root / "with", query={"eb_src": "a b c", "eb_ref": "C B A"})
    assert any(m.value.startswith("**Beam k=4:**") for m in at.markdown)
    assert "give a pairs file above" in texts(at)
    at = open_plain("exposure_bias.py", root / "with", query={"eb_src": "a b c", "eb_ref": "C B A",
                                                              "eb_tab": "Over the held-out set"})
    assert "give a pairs file above" in texts(at) and any(m.label == "First divergence" for m in at.metric)


def test_a_model_without_attention_says_why_and_its_exposure_views_still_work(plain):
    root, modules = plain
    at = open_plain("attention.py", root / "without", tsv(HELD))
    assert any("no attention" in i.value for i in at.info) and not at.get("vega_lite_chart")
    src = at.text_input(key="att_sentence").value
    assert f"**Greedy translation:** {' '.join(tp.greedy(modules['without'], src))}" in texts(at)
    at.switch_page("pages/exposure_bias.py").run()
    clean(at)
    assert any(m.label == "First divergence" for m in at.metric) and len(at.get("vega_lite_chart")) == 3
    at.switch_page("pages/decoding.py").run()
    assert any(m.value.startswith("**Beam k=4:**") for m in clean(at).markdown)
    at.switch_page("pages/bleu_length.py").run()
    assert len(clean(at).get("vega_lite_chart")) == 1  # measured on the pairs file at once


@pytest.mark.parametrize("data, problem", [(b"a b\tB A\nc d\tD C\ne f g\n", "line 3: expected source<TAB>target, found no tab"),
                                           (b"a\tA\n\t B\n", "line 2: the source is empty"),
                                           ("a\tA\ncaf\u00e9\tC\n".encode("latin-1"), "line 2: not UTF-8")])
def test_a_bad_pairs_file_is_named_by_its_line_and_the_page_goes_on(plain, data, problem):
    root, _modules = plain
    at = open_plain("exposure_bias.py", root / "with", query={"eb_src": "a b c", "eb_ref": "C B A"})
    at.file_uploader(key="eb_pairs").set_value(("bad.tsv", data, "text/tab-separated-values")).run()
    assert not at.exception, at.exception
    assert any("Could not read that pairs file" in e.value and f"bad.tsv: {problem}" in e.value for e in at.error), \
        [e.value for e in at.error]
    assert any(m.label == "First divergence" for m in at.metric)  # on the model's own (no) pairs, no traceback


def test_uploaded_weights_and_spec_open_on_the_attention_page_with_a_pairs_file(plain):
    """The files themselves (encoder.pt, decoder.pt, spec.json) uploaded in the sidebar, then the pairs."""
    root, modules = plain
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/attention.py").run()
    at.sidebar.radio(key=widget_key("seq2seq", "source", "attention")).set_value("Upload").run()
    files = [(f.name, f.read_bytes(), "application/octet-stream") for f in sorted((root / "with").iterdir())]
    at.sidebar.file_uploader(key=widget_key("seq2seq", "upload", "attention")).set_value(files).run()
    at.file_uploader(key="att_pairs").set_value(("mine.tsv", tsv(HELD), "text/tab-separated-values")).run()
    clean(at)
    assert measuring(at, len(HELD))
    assert any("(upload)" in c.value for c in at.sidebar.caption)
    src = at.text_input(key="att_sentence").value
    assert f"**Greedy translation:** {' '.join(tp.greedy(modules['with'], src))}" in texts(at)


def test_without_pairs_the_attention_page_opens_on_words_the_plain_model_knows(plain):
    root, modules = plain
    at = open_plain("attention.py", root / "with")
    src = at.text_input(key="att_sentence").value
    assert src == "a b c d e" and not at.warning  # no <unk>: not the Chinese lesson sentence
    assert f"**Greedy translation:** {' '.join(tp.greedy(modules['with'], src))}" in texts(at)
    assert at.selectbox(key="att_example").disabled  # no held-out sentences to pick until a pairs file is given


def test_a_pairs_file_by_its_path_on_the_server_is_measured_and_a_path_outside_is_refused(plain, tmp_path):
    root, _modules = plain
    (root / "mine.tsv").write_bytes(tsv(HELD[:12]))
    at = open_plain("bleu_length.py", root / "with")
    at.text_input(key="att_pairs_path").input(str(root / "mine.tsv")).run()
    assert measuring(clean(at), 12)
    (tmp_path / "outside.tsv").write_bytes(tsv(HELD[:3]))
    at.text_input(key="att_pairs_path").input(str(tmp_path / "outside.tsv")).run()
    assert not at.exception and any("outside the folders this app may open" in e.value for e in at.warning)
    assert measuring(at, 12)  # the file read before stays in use
