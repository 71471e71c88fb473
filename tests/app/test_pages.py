"""Every page in appkit.registry.PAGES through Streamlit's AppTest: renders, moves its main control."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from appkit.cache import list_checkpoints
from appkit.registry import CONTROL_KINDS, PAGES, PageSpec
from tests.conftest import ROOT

APP = str(ROOT / "app.py")


def open_page(page: PageSpec, query: dict | None = None) -> AppTest:
    """Run the app, then switch to ``page`` (AppTest needs a first run to learn st.navigation's pages)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    if query:
        at.query_params.update(query)
    at.switch_page(f"pages/{page.path}")
    return at.run()


def open_clean(page: PageSpec, query: dict | None = None) -> AppTest:
    """``open_page``, asserting the page ran without an exception or an error message."""
    at = open_page(page, query)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def find_control(at: AppTest, kind: str, label: str):
    widgets = [w for w in getattr(at, kind) if w.label == label]
    assert widgets, f"no {kind} labelled {label!r} on the page; labels: {[w.label for w in getattr(at, kind)]}"
    return widgets[0]


def move(widget, kind: str, text: str | None = None):
    """Give a widget a different valid value, the AppTest way."""
    if kind == "slider":
        value = widget.value + widget.step if widget.value + widget.step <= widget.max else widget.min
        return widget.set_value(value)
    if kind in ("selectbox", "radio", "select_slider", "segmented_control"):
        others = [o for o in widget.options if o != widget.format_func(widget.value)]
        return widget.set_value(others[0]) if kind != "selectbox" else widget.select(others[0])
    if kind in ("checkbox", "toggle"):
        return widget.set_value(not widget.value)
    if kind == "number_input":
        return widget.increment()
    if kind in ("text_input", "text_area"):
        return widget.input(text if text is not None else (widget.value or "") + " and more")
    if kind == "button":
        return widget.click()
    raise AssertionError(f"unknown control kind {kind}")


def has_model(page: PageSpec) -> bool:
    return page.model_type is None or bool(list_checkpoints(page.model_type))


def assert_expected(at: AppTest, page: PageSpec):
    found = {e.type for e in at.main} | {e.type for e in at.main.children.values()}
    present = {t for t in page.expects if at.get(t)}
    assert present == set(page.expects), f"{page.path}: missing {set(page.expects) - present}"
    assert found


@pytest.mark.parametrize("page", PAGES, ids=[p.path for p in PAGES])
def test_page_renders_and_its_main_control_moves(page, shipped_plus_tiny):
    if not page.exists:
        pytest.skip(f"pages/{page.path} is listed in PAGES but not written yet")
    at = open_page(page)
    assert not at.exception, f"{page.path}: {at.exception}"
    assert not at.error, f"{page.path}: {[e.value for e in at.error]}"
    if has_model(page):
        assert_expected(at, page)
    else:  # no checkpoint of that type anywhere: the page says so instead of failing
        assert any(page.model_type in i.value for i in at.info), [i.value for i in at.info]
        return
    if page.main_control:
        kind, label, *text = page.main_control
        move(find_control(at, kind, label), kind, *text).run()
        assert not at.exception, f"{page.path} after moving {label}: {at.exception}"
        assert not at.error, [e.value for e in at.error]
        assert_expected(at, page)


def test_registry_is_consistent():
    paths = [p.path for p in PAGES]
    assert len(paths) == len(set(paths)), "a page is listed twice"
    assert sum(p.default for p in PAGES) == 1, "exactly one landing page"
    assert len({p.url_path for p in PAGES}) == len(PAGES)


def code_lines(path) -> int:
    """Lines of a Python file that are code: not blank, not a comment, not a module, class or function docstring."""
    import ast

    source = path.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(1 for number, line in enumerate(source.splitlines(), 1)
               if line.strip() and not line.strip().startswith("#") and number not in docstrings)


@pytest.mark.parametrize("page", [p for p in PAGES if p.exists], ids=lambda p: p.path)
def test_pages_keep_within_their_code_line_budget(page):
    """A page reads widgets, calls views and draws (appkit/registry.py): one over its budget is split by meaning."""
    lines = code_lines(page.file)
    assert lines <= page.budget, f"pages/{page.path}: {lines} code lines, budget {page.budget}"


def test_zoo_without_checkpoints_explains_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert any("No checkpoints found" in i.value for i in at.info)


def test_zoo_cards_show_the_numbers_of_card_json(tiny_only):
    import json

    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    for cell in ("rnn", "gru", "lstm"):
        card = json.loads((tiny_only / f"tiny-{cell}" / "card.json").read_text())
        assert (f"**{card['parameters']:,}** parameters · validation loss **{card['val_loss']:.3f}** "
                f"nats/token · perplexity **{card['val_perplexity']:.2f}**") in text
    guide = text
    assert all(p.title in guide for p in PAGES if p.exists and not p.default)


def test_zoo_training_curves_toggle(tmp_path, monkeypatch, tiny_lm_dir):
    import json
    import shutil

    root = tmp_path / "roots"
    shutil.copytree(tiny_lm_dir / "tiny-lstm", root / "tiny-lstm")
    card = json.loads((root / "tiny-lstm" / "card.json").read_text())
    card["history"] = [{"step": 1, "train_loss": 4.0, "val_loss": 4.1}, {"step": 2, "train_loss": 3.0, "val_loss": 3.5}]
    (root / "tiny-lstm" / "card.json").write_text(json.dumps(card))
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(root))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.get("vega_lite_chart")  # off by default: the landing page needs no altair
    at.toggle(key="zoo_curves").set_value(True).run()
    assert not at.exception and len(at.get("vega_lite_chart")) == 1


def test_zoo_seq2seq_cards_show_bleu_task_and_training(tmp_path, monkeypatch):
    import json
    import shutil

    for name in ("zh-en-small-teacher-forcing", "zh-en-small-scheduled-sampling"):
        shutil.copytree(ROOT / "checkpoints" / name, tmp_path / name)
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    for name in ("zh-en-small-teacher-forcing", "zh-en-small-scheduled-sampling"):
        card = json.loads((tmp_path / name / "card.json").read_text())
        assert f"held-out BLEU **{card['test_bleu']:.1f}** · exact **{card['test_exact_match']:.1%}**" in text
        assert f"**Task**: {card['task']} ({card['training']})" in text


SECRET = "hunter2SECRET"


@pytest.fixture
def secret_files(tiny_lm_dir, tmp_path, monkeypatch):
    """A home folder of secrets, a working folder, and a checkpoints root with a link out to the home folder."""
    import json
    import shutil

    home, work, root = tmp_path / "home", tmp_path / "work", tmp_path / "checkpoints"
    (home / ".streamlit").mkdir(parents=True)
    (home / ".cache" / "huggingface").mkdir(parents=True)
    (home / ".netrc").write_text(f"machine example.com login alice password {SECRET}\n")
    (home / ".streamlit" / "secrets.toml").write_text(f'api_key = "{SECRET}"\n')
    (home / ".cache" / "huggingface" / "token").write_text(f"hf_{SECRET}\n")
    (home / "notes.txt").write_text(f"alice {SECRET} 0.5\n")
    for folder, config in (("ck-type", {"model_type": SECRET}), ("ck-cell", {"model_type": "recurrent_lm",
                                                                           "cell": SECRET})):
        (work / folder).mkdir(parents=True)
        (work / folder / "config.json").write_text(json.dumps(config))
    (work / "notes.txt").write_text(f"alice {SECRET} 0.5\n")
    shutil.copytree(tiny_lm_dir / "tiny-gru", root / "tiny-gru")
    (root / "home-link").symlink_to(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(root))
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(work))
    return ["~/.netrc", "~/.streamlit/secrets.toml", "~/.cache/huggingface/token", "~/notes.txt",
            str(work / "ck-type"), str(work / "ck-cell"), str(work / "notes.txt"),
            str(root / "home-link" / "notes.txt"), str(root / "home-link" / ".netrc"),
            str(work / ".." / "home" / "notes.txt")]


@pytest.mark.parametrize("page", [p for p in PAGES if p.model_type], ids=lambda p: p.path)
def test_typed_paths_to_secrets_are_refused_on_every_page(page, secret_files):
    at = open_page(page)
    at.sidebar.radio[0].set_value("Local folder").run()
    for typed in secret_files:
        at.sidebar.text_input[0].input(typed).run()
        assert not at.exception, (typed, at.exception)
        assert any("Could not load" in e.value for e in at.error), (typed, [e.value for e in at.error])
        shown = [str(getattr(e, "value", "")) for e in [*at.main, *at.sidebar]]
        assert any("Could not load" in s for s in shown) and not any(SECRET in s for s in shown), typed


# Each page's widget-key prefix (appkit/state.py); keys shared on purpose: the picker's ("picker."),
# the language switch's and appkit.draw's download buttons ("export_").
PREFIXES = {"zoo.py": "zoo_", "language_model.py": "lm_", "word2vec.py": "w2v_", "attention.py": "att_",
            "trajectories.py": "traj_", "gates.py": "gate_", "gradient_flow.py": "gf_", "exposure_bias.py": "eb_",
            "exposure_bias_lm.py": "ebl_", "word_map.py": "w2v_", "word2vec_evaluation.py": "w2v_",
            "exploding_vanishing.py": "gf_", "bleu_length.py": "att_", "decoding.py": "eb_"}  # the pages of one
#            topic share a prefix (appkit/state.py)
SHARED = ("picker.", "export_")


@pytest.mark.parametrize("page", [p for p in PAGES if p.path in PREFIXES], ids=lambda p: p.path)
def test_widget_keys_carry_the_page_prefix(page, shipped_plus_tiny):
    from appkit.i18n import KEY

    if not page.exists:
        pytest.skip(f"pages/{page.path} is not written yet")
    at = open_page(page)
    kinds = [k for k in CONTROL_KINDS if k != "button"] + ["multiselect"]
    keys = {w.key for kind in kinds for w in [*getattr(at.main, kind), *getattr(at.sidebar, kind)]}
    stray = sorted(k for k in keys if k is not None and k != KEY and not k.startswith((PREFIXES[page.path], *SHARED)))
    unkeyed = sorted(w.label for kind in kinds for w in getattr(at.main, kind) if w.key is None)
    assert not stray and not unkeyed, f"{page.path}: keys without {PREFIXES[page.path]!r}: {stray}; no key: {unkeyed}"
