"""The proof: every page of appkit.registry.PAGES, opened with ?lang=zh, shows no English of its own.

Each page runs through AppTest (shipped checkpoints plus the tiny test models) with ``lang=zh`` in the
URL; ``shown_texts`` collects its titles, captions, notices, labels, help, options and chart titles, and
``untranslated`` must find nothing but allowed English (model names, tokens, numbers, units, formulas).
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

import pytest
from streamlit.testing.v1 import AppTest

from appkit.i18n import language
from appkit.registry import PAGES, PageSpec
from tests.app.tabs import choose_tab, tab_sets
from tests.conftest import ROOT
from tests.i18n.completeness import shown_texts, untranslated

# Pages not translated yet: they are run (no crash in Chinese) but their English is not counted.
NOT_YET: set[str] = set()
# Shown texts that are data (a model's output, the tokens it reads), per page: whole-text patterns.
DATA_TEXTS: dict[str, tuple[str, ...]] = {
    "attention.py": (r"\*\*贪心解码译文：\*\* .*",  # the model's English translation
                     r"\d+: .*"),  # target-word options "t: word"
    "word2vec.py": (r"3Cos\w+: .* : .* :: .* : \?",),  # the analogy query as the chart's title
    "word_map.py": (r"图中的类比：.* : .* :: .* : .*（d：预期答案，若未填写则为类比实验的首选答案）。",),  # the analogy's words (d: the model's answer)
    "trajectories.py": (r"文本 \d+：.*",),  # the "Texts drawn" options: each text's own first words
    "exposure_bias.py": (r"\*\*自由生成的输出：\*\* .*", r"\*\*后续输出：\*\* .*",
                         r"\*\*本来会说：\*\* .*"),  # the model's English output
    "decoding.py": (r"\*\*束搜索 k=\d+：\*\* .*",),
    "interventions.py": (r".*layers\.\d+\.\w+ 的单元 .*",),  # the state edited or patched, by its trace name
}
# Widgets whose options are data (words of the vocabulary), per page: (kind, key).
DATA_WIDGETS: dict[str, tuple[tuple[str, str], ...]] = {"word_map.py": (("multiselect", "w2v_labels"),),
                                                        "exposure_bias.py": (("selectbox", "eb_token"),)}
# Modules whose English is excused here (none now: appkit/models.py's spinners are translated through its
# ``cached`` decorator, see its docstring).
OTHER_OWNERS: tuple[str, ...] = ()


@lru_cache(maxsize=None)
def _other_owners_patterns() -> tuple[re.Pattern, ...]:
    """Each string literal and f-string of OTHER_OWNERS as a pattern (an f-string's fields match anything)."""
    found = set()
    for name in OTHER_OWNERS:
        tree = ast.parse((ROOT / name).read_text(encoding="utf-8"))
        parts_of_fstrings = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                pattern = "".join(re.escape(v.value) if isinstance(v, ast.Constant) else ".*" for v in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts_of_fstrings:
                pattern = re.escape(node.value)
            else:
                continue
            if len(pattern.replace(".*", "").strip()) > 3:
                found.add(pattern)
    return tuple(re.compile(p, re.DOTALL) for p in found)


@lru_cache(maxsize=None)
def card_values() -> tuple[str, ...]:
    """The free-text facts of the shipped model cards (architecture, corpus, split ...): data, shown as written."""
    import json

    found = set()
    for card in (ROOT / "checkpoints").glob("*/card.json"):
        for value in json.loads(card.read_text(encoding="utf-8")).values():
            if isinstance(value, str) and value.strip():
                found.add(value.strip())
    tiny = {f"{n}-layer {cell}, hidden {d}" for n in (1, 2) for cell in ("RNN", "GRU", "LSTM") for d in (12, 16)}
    return tuple(found | tiny | {"none (random weights, for tests)", "a two-line held-out string"})


def _from_other_owners(text: str) -> bool:
    """Shown by OTHER_OWNERS: the whole text is one of their literals or f-strings (the library's model
    descriptions they quote, e.g. seqviz.registry's, included)."""
    from seqviz.registry import FAMILIES

    text = text.strip()
    for family in FAMILIES.values():
        text = text.replace(family.description, "")
    return any(p.fullmatch(text) for p in _other_owners_patterns())


def open_zh(page: PageSpec) -> AppTest:
    """Run the app in Chinese and switch to ``page``.

    AppTest calls a widget's ``format_func`` (often ``_``) in the test's own thread when it sends the
    widget states back, where no URL is known: ``language("zh")`` makes that side Chinese too.
    """
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["lang"] = "zh"
    with language("zh"):
        at.run()
        assert not at.exception, at.exception
        at.switch_page(f"pages/{page.path}")
        return at.run()


def english_left(page: PageSpec, at: AppTest) -> list[str]:
    """What ``at`` shows in English that is not allowed: model names, data, card facts, device strings."""
    assert not at.exception, f"{page.path}: {at.exception}"
    shown = shown_texts(at)
    assert shown, f"{page.path}: nothing shown"
    # device strings ("cpu (1 thread)") come from the cards as well
    data = {str(o) for kind, key in DATA_WIDGETS.get(page.path, ()) if key in {w.key for w in getattr(at, kind)}
            for o in getattr(at, kind)(key=key).options}  # a data widget on a section not drawn by default
    shown = [t for t in shown if t not in data]
    return [t for t in untranslated(shown, allow=[*card_values(), "threads", "thread", "worker", "cpu",
                                                   "cuda", "word2vec skipgram", "word2vec cbow"])
            if not _from_other_owners(t) and not any(re.fullmatch(p, t, re.DOTALL)
                                                     for p in DATA_TEXTS.get(page.path, ()))]


@pytest.mark.parametrize("page", [p for p in PAGES if p.exists], ids=lambda p: p.path)
def test_page_shows_no_english_in_chinese(page, shipped_plus_tiny):
    left = english_left(page, open_zh(page))
    if page.path in NOT_YET:
        pytest.xfail(f"{page.path} is not translated yet ({len(left)} English strings)")
    assert not left, f"{page.path}: {left}"


@pytest.mark.parametrize("page", [p for p in PAGES if p.exists and p.path not in NOT_YET], ids=lambda p: p.path)
def test_every_tab_shows_no_english_in_chinese(page, shipped_plus_tiny):
    """Each lazy tab opened (only the open one runs): the tables and charts a tab draws are checked too
    (the held-out summary, the padding study and the parameter counts showed English headers)."""
    for key, labels in tab_sets(open_zh(page)._tree):
        for label in labels:
            at = open_zh(page)
            with language("zh"):
                if choose_tab(at, key, label):
                    at.run()
            left = english_left(page, at)
            assert not left, f"{page.path}, tab {label!r}: {left}"
