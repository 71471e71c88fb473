"""untranslated(): English left in the Chinese interface, allowing names, tokens, numbers and units."""

from __future__ import annotations

import ast

import pytest

from tests.i18n.completeness import ROOT, chart_texts, english_words, untranslated


@pytest.mark.parametrize("text", [
    "温度", "困惑度 12.3", "shakespeare-char-lstm 的损失 0.5 nats", "‖h_t‖ 的范数", "RNN、GRU 与 LSTM",
    "词元 'the' 与 \"cat\"", "也可在地址中用 ?lang=zh 设置", "文件 config.json 缺失", "**12** 个参数",
    "BLEU 与句长", "3CosAdd 与 3CosMul", "t-SNE 投影", "Skip-gram 与 CBOW", "LSTMs 的门", "<unk> 词元",
    "见 [文档](https://example.org/a)", "zh-en-small-teacher-forcing", "每句耗时（ms）", "G[t, k] = ‖∂L_t/∂h_k‖",
])
def test_translated_or_allowed_text_passes(text):
    assert english_words(text) == [] or untranslated([text]) == []


@pytest.mark.parametrize("text", [
    "Temperature", "Could not load this checkpoint:", "loss (nats/token)", "Exposure bias (LM)",
    "左 left-saturated 比例", "The model reads 12 tokens",
])
def test_english_is_found(text):
    assert untranslated([text]) == [text]


def test_allow_and_catalogue_strings():
    assert untranslated(["king − man + woman ≈ queen"], allow=["king", "man", "woman", "queen"]) == []
    assert untranslated(["Teacher Forcing（教师强制）"], catalogue_strings=["Teacher Forcing（教师强制）"]) == []


def test_chart_texts_reads_every_title():
    spec = {"title": {"text": "T", "subtitle": "S"}, "encoding": {"x": {"title": "X"}, "color": {"legend": {
        "title": "L"}}, "tooltip": [{"field": "a", "title": "tip"}]}, "datasets": {"d": [{"title": "data"}]}}
    assert sorted(chart_texts(spec)) == ["L", "S", "T", "X", "tip"]


def _modules_using_gettext():
    for path in sorted([ROOT / "app.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "appkit").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = any(isinstance(n, ast.ImportFrom) and n.module == "appkit.i18n" and any(a.name == "_" for a in n.names)
                      for n in ast.walk(tree))
        if imports or path.name == "i18n.py":
            yield path, tree


def test_gettext_is_called_on_literals_and_never_shadowed():
    """`_` stays the translator (no `x, _ = ...`), and `_()` gets a literal the extractor can see."""
    problems = []
    for path, tree in _modules_using_gettext():
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "_" and isinstance(node.ctx, ast.Store):
                problems.append(f"{path.name}:{node.lineno}: assigns to _ (shadows the translator)")
            literal_args = {"_": 1, "N_": 1, "ngettext": 2, "pgettext": 2}
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and path.name != "i18n.py"
                    and node.func.id in literal_args):
                # A literal, or a name/item/attribute holding an N_()-marked msgid (README: _(TITLES[k]));
                # never a string built at run time (f-string, concatenation, .format, %).
                if any(isinstance(a, ast.JoinedStr | ast.BinOp | ast.Call)
                       or (isinstance(a, ast.Constant) and not isinstance(a.value, str))
                       for a in node.args[: literal_args[node.func.id]]):
                    problems.append(f"{path.name}:{node.lineno}: {node.func.id}() of a non-literal (f-string?); "
                                    "use _(\"... {name} ...\").format(name=...)")
    assert not problems, "\n".join(problems)
