"""Every declared view's facts are a typed record: each names a ``TypedDict`` (``@declare(facts=...)``), and what it
returns holds what that record says (``Declared.check``), run here once per view on the shipped checkpoints at small
choices, and read back from every shipped results.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_type_hints

import pytest
from typing_extensions import is_typeddict  # typing's does not know typing_extensions' (extra_items) records

from seqviz.views import registry

ROOT = Path(__file__).resolve().parents[2]
# seqviz/views/implicit.py's views get their records on the branch that owns that module (issue 46).
OWNED_ELSEWHERE = "implicit."
TEXT = "HAMLET.\nTo be, or not to be, that is the question:\n"
SOURCE = "我昨天在公园吃了一个苹果"


@pytest.fixture(scope="module")
def load():
    import seqviz

    loaded = {}
    return lambda name: loaded.setdefault(name, seqviz.load(ROOT / "checkpoints" / name))


def ids(model, text: str = TEXT) -> tuple[int, ...]:
    return tuple(model.tokenizer.encode(text).ids)


def held_out_pair(s2s) -> dict:
    first = registry.named("decoding.first_pair").fn(s2s).facts
    return {"src": first["source"], "reference": first["reference"]}


def tiny_transformer(tmp: Path):
    """A 2-layer Marian with random weights (no download): the one kind of model ``attention.heads`` draws."""
    import torch

    from seqviz.hf_seq2seq import HFSeq2Seq
    from tests.seq2seq.test_hf_cross_attention import CONFIGS, tokenizer

    cls, config = CONFIGS["marian"]
    torch.manual_seed(0)
    cls(config).save_pretrained(tmp, safe_serialization=True)
    tokenizer().save_pretrained(tmp)
    return HFSeq2Seq.from_pretrained(tmp)


LM, RNN, GRU = "shakespeare-char-lstm", "shakespeare-char-rnn", "shakespeare-char-gru"
S2S, S2S_STUDY, W2V = "zh-en-attention-gru", "zh-en-small-teacher-forcing", "word2vec-shakespeare"
# view name -> (load, tmp) -> the View (or the tuple of Views) it returns at small choices.
CALLS = {
    "language.surprisal": lambda load, tmp: fn("language.surprisal")(load(LM), TEXT),
    "language.shipped_surprisal": lambda load, tmp: fn("language.shipped_surprisal")(
        str(ROOT / "checkpoints" / LM), None, sample_text()),
    "language.continuation": lambda load, tmp: fn("language.continuation")(load(LM), TEXT, n=8),
    "language.comparison": lambda load, tmp: fn("language.comparison")(tables(load)),
    "language.summary": lambda load, tmp: fn("language.summary")(tables(load)),
    "trajectories.trajectory": lambda load, tmp: fn("trajectories.trajectory")(load(LM), two_texts(load(LM))),
    "trajectories.hidden_states": lambda load, tmp: fn("trajectories.hidden_states")(load(LM), two_texts(load(LM))),
    "trajectories.padded_batch": lambda load, tmp: fn("trajectories.padded_batch")(load(LM), two_texts(load(LM))),
    "trajectories.mask_distance": lambda load, tmp: fn("trajectories.mask_distance")(load(LM), two_texts(load(LM))),
    "trajectories.final_states": lambda load, tmp: fn("trajectories.final_states")(load(LM), two_texts(load(LM))),
    **{f"gates.{name}": (lambda name: lambda load, tmp: fn(f"gates.{name}")(load(LM), ids(load(LM))))(name)
       for name in ("heat_map", "gate_means", "memory_spans", "memory_product", "retention", "memory_table",
                    "unit_on_text")},
    "gates.memory_race": lambda load, tmp: fn("gates.memory_race")([load(LM), load(GRU)], ids(load(LM))),
    "gates.saturation": lambda load, tmp: fn("gates.saturation")(load(LM)),
    "gates.unit_ranking": lambda load, tmp: fn("gates.unit_ranking")(load(LM)),
    **{f"gradients.{name}": (lambda name: lambda load, tmp: fn(f"gradients.{name}")(load(LM), TEXT, tokens=20))(name)
       for name in ("token_pieces", "distance_curve", "gradient_heatmap", "two_paths", "forget_curve", "layers",
                    "what_if", "over_training")},
    "gradients.connectivity": lambda load, tmp: fn("gradients.connectivity")(load(LM), TEXT, tokens=20, target=10),
    "gradients.spectrum_change": lambda load, tmp: fn("gradients.spectrum_change")(load(LM)),
    "gradients.radius_bench": lambda load, tmp: fn("gradients.radius_bench")(load(RNN), TEXT, tokens=20),
    "gradients.forget_gain": lambda load, tmp: fn("gradients.forget_gain")(load(LM), TEXT, steps=20),
    "gradients.clipping_norms": lambda load, tmp: fn("gradients.clipping_norms")(None, chars=2000),
    "gradients.clipping_loss": lambda load, tmp: fn("gradients.clipping_loss")(None, chars=2000),
    **{f"gradients.{name}": (lambda name: lambda load, tmp: fn(f"gradients.{name}")(None))(name)
       for name in ("book_comparison", "scalar_rnn", "scalar_lstm", "forget_powers", "norm_gamma")},
    "exposure.gold_logprob": lambda load, tmp: fn("exposure.gold_logprob")(load(LM), sample_text(), prompt=10, n=10),
    "exposure.divergence": lambda load, tmp: fn("exposure.divergence")(load(LM), sample_text(), prompt=10, n=10),
    **{f"interventions.{name}": (lambda name: lambda load, tmp: fn(f"interventions.{name}")(load(LM), ids(load(LM))))(
        name) for name in ("switch_off_text", "switch_off_tokens", "switch_off_classes")},
    "interventions.patch_next": lambda load, tmp: patched(load(LM)),
    "attention.vocabulary": lambda load, tmp: fn("attention.vocabulary")(load(S2S)),
    **{f"attention.{name}": (lambda name: lambda load, tmp: fn(f"attention.{name}")(load(S2S), SOURCE))(name)
       for name in ("translation", "alignment", "target_weights", "entropy")},
    "attention.heads": lambda load, tmp: fn("attention.heads")(tiny_transformer(tmp), "我 昨天 在 公园 吃 了 一个 苹果"),
    "attention.examples": lambda load, tmp: fn("attention.examples")(str(ROOT / "checkpoints" / S2S)),
    "attention.pair_examples": lambda load, tmp: fn("attention.pair_examples")(load(S2S), ((SOURCE, "i ate"),)),
    "attention.bottleneck": lambda load, tmp: fn("attention.bottleneck")(cards()),
    "attention.bleu_table": lambda load, tmp: fn("attention.bleu_table")(cards()),
    "attention.measured_bleu": lambda load, tmp: fn("attention.measured_bleu")(load(S2S), n=4),
    "pairs.pairs_file": lambda load, tmp: fn("pairs.pairs_file")(load(S2S), f"{SOURCE}\ti ate\n".encode()),
    "pairs.framing": lambda load, tmp: fn("pairs.framing")(load(S2S)),
    "decoding.gold_logprob": lambda load, tmp: fn("decoding.gold_logprob")(load(S2S), **held_out_pair(load(S2S))),
    "decoding.divergence": lambda load, tmp: fn("decoding.divergence")(load(S2S), **held_out_pair(load(S2S))),
    "decoding.injectable": lambda load, tmp: fn("decoding.injectable")(
        load(S2S), held_out_pair(load(S2S))["reference"], 1),
    "decoding.injection": lambda load, tmp: fn("decoding.injection")(load(S2S), **held_out_pair(load(S2S)), k=1),
    "decoding.comparison": lambda load, tmp: fn("decoding.comparison")(
        load(S2S), **held_out_pair(load(S2S)), rivals=(("study", load(S2S_STUDY)),), k=1),
    "decoding.beam": lambda load, tmp: fn("decoding.beam")(load(S2S), **held_out_pair(load(S2S)), k=2),
    "decoding.strategies": lambda load, tmp: fn("decoding.strategies")(load(S2S), n=3, ks=(1, 2)),
    "decoding.shipped_strategies": lambda load, tmp: fn("decoding.shipped_strategies")(study_folder(), None),
    "decoding.held_out": lambda load, tmp: fn("decoding.held_out")(load(S2S), n=4),
    "decoding.shipped_held_out": lambda load, tmp: fn("decoding.shipped_held_out")(study_folder(), None),
    "decoding.held_out_compared": lambda load, tmp: fn("decoding.held_out_compared")(
        {"a": fn("decoding.held_out")(load(S2S), n=4).data}),
    "decoding.held_out_summary": lambda load, tmp: fn("decoding.held_out_summary")(
        {"a": fn("decoding.held_out")(load(S2S), n=4).facts}),
    "decoding.menu": lambda load, tmp: fn("decoding.menu")(study_folder(), None, first_errors=(1, None, 0)),
    "decoding.pair_menu": lambda load, tmp: fn("decoding.pair_menu")(load(S2S), ((SOURCE, "i ate"),), (0,)),
    "decoding.first_pair": lambda load, tmp: fn("decoding.first_pair")(load(S2S)),
    "word2vec.analogy": lambda load, tmp: fn("word2vec.analogy")(load(W2V), "man", "woman", "king", expected="queen"),
    "word2vec.nearest": lambda load, tmp: fn("word2vec.nearest")(load(W2V), "king"),
    "word2vec.evaluation": lambda load, tmp: fn("word2vec.evaluation")(load(W2V)),
    "word2vec.word_map": lambda load, tmp: fn("word2vec.word_map")(load(W2V), method="pca", n=200),
    "word2vec.analogy_layers": lambda load, tmp: fn("word2vec.analogy_layers")(
        load(W2V), ("man", "woman", "king", "queen"), method="pca", n=200),
    "word2vec.projector": lambda load, tmp: fn("word2vec.projector")(load(W2V), method="pca", n=200),
    "word2vec.bias_axis": lambda load, tmp: fn("word2vec.bias_axis")(load(W2V), ("king", "queen", "nosuchword")),
}


def fn(name: str):
    return registry.named(name).fn


def sample_text() -> str:
    from seqviz.introspect.language import SAMPLE_TEXTS

    return SAMPLE_TEXTS["hamlet"]


def two_texts(model) -> tuple:
    return ids(model), ids(model, "The rest is silence.")


def tables(load) -> dict:
    return {name: fn("language.surprisal")(load(name), TEXT).data for name in (LM, GRU)}


def patched(model):
    from seqviz.views.interventions import PATCH_SOURCE, PATCH_TARGET

    return fn("interventions.patch_next")(model, ids(model, PATCH_TARGET), ids(model, PATCH_SOURCE))


def cards() -> dict:
    return {name: json.loads((ROOT / "checkpoints" / name / "card.json").read_text(encoding="utf-8"))
            for name in (S2S, "zh-en-noattention-gru")}


def study_folder() -> str:
    return str(ROOT / "checkpoints" / S2S_STUDY)


def test_every_declared_view_names_a_facts_record():
    for d in registry.views():
        if d.name.startswith(OWNED_ELSEWHERE):
            continue
        assert d.facts is not None and is_typeddict(d.facts), f"{d.name}: @declare(facts=...) names no TypedDict"
        get_type_hints(d.facts, include_extras=True)  # every field's type resolves (a NameError otherwise)


def test_every_view_is_run_here():
    assert set(CALLS) == {d.name for d in registry.views() if not d.name.startswith(OWNED_ELSEWHERE)}


def test_the_check_refuses_a_missing_or_an_undeclared_fact():
    scalar = registry.named("gradients.scalar_rnn")
    facts = scalar.fn(None, 2.0).facts
    scalar.check(facts)
    with pytest.raises(ValueError, match="missing w$"):
        scalar.check({k: v for k, v in facts.items() if k != "w"})
    with pytest.raises(ValueError, match="not declared pos"):
        scalar.check({**facts, "pos": 1})
    surprisal, means = registry.named("language.surprisal"), registry.named("gates.gate_means")
    assert "worst" not in registry.fact_keys(surprisal.facts)[0]  # NotRequired: absent when nothing is scored
    with pytest.raises(ValueError, match="missing kind, max_tokens"):
        surprisal.check({})
    means.check({"position": 0, "token": "a", "forget": 0.5})  # open (extra_items): the family's own signals


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_view_returns_the_facts_its_record_declares(name, load, tmp_path):
    done = CALLS[name](load, tmp_path)
    assert done is not None, f"{name}: the shipped files hold nothing for these choices"
    for view in done if isinstance(done, tuple) else (done,):
        registry.named(name).check(view.facts)


def test_shipped_results_hold_the_facts_their_views_declare():
    """Each entry of every shipped results.json (``seqviz precompute``) against its view's record: a fact renamed in
    the code and not in the shipped results fails here, not on a page opened from a shared link."""
    by_key = {d.key: d for d in registry.views() if not d.name.startswith(OWNED_ELSEWHERE)}
    checked = set()
    for path in sorted((ROOT / "checkpoints").glob("*/results.json")):
        for key, raw in json.loads(path.read_text(encoding="utf-8"))["views"].items():
            d = by_key.get(key.split("|")[0])
            if d is not None:  # another version's entries are never read
                d.check((json.loads(raw) if isinstance(raw, str) else raw)["facts"])
                checked.add(d.name)
    assert {"gates.heat_map", "gradients.radius_bench", "decoding.injection", "attention.alignment"} <= checked


# ------------------------------------------------------------------ the facts pages quote
VIEW_CALLS = {"view", "view_of_path", "view_of_data"}  # appkit.cache's calls that draw a view


def quoted_facts(path: Path) -> list[tuple[int, str, str]]:
    """(line, view name, fact) of every fact a page reads by name: ``x.facts["k"]`` and ``f["k"]`` after
    ``f = x.facts``, where ``x = cm.view(views.fn, ...)`` (bindings followed in line order, tuples pairwise)."""
    import ast
    import importlib

    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = {(a.asname or a.name): f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               and (n.module or "").startswith("seqviz.views") for a in n.names}

    def declared(call):
        if not (isinstance(call, ast.Call) and call.args and getattr(call.func, "attr", None) in VIEW_CALLS):
            return None
        first = call.args[0]
        if isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name) and first.value.id in modules:
            view = getattr(importlib.import_module(modules[first.value.id]), first.attr, None)
            return getattr(view, "declared", None)
        return None

    def facts_of(node):  # the Declared whose facts ``node`` holds (``x.facts``), or None
        if isinstance(node, ast.Attribute) and node.attr == "facts" and isinstance(node.value, ast.Name):
            return views.get(node.value.id)
        return None

    views, facts, found = {}, {}, []
    nodes = sorted((n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.Subscript))),
                   key=lambda n: (n.lineno, n.col_offset))
    for node in nodes:
        if isinstance(node, ast.Assign):
            target, value = node.targets[0], node.value
            pairs = zip(target.elts, value.elts) if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
                else [(target, value)]
            for t, v in pairs:
                if isinstance(t, ast.Name):
                    views[t.id], facts[t.id] = declared(v), facts_of(v)
        elif isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            d = facts_of(node.value) or (facts.get(node.value.id) if isinstance(node.value, ast.Name) else None)
            if d is not None and d.facts is not None:
                found.append((node.lineno, d, node.slice.value))
    return found


@pytest.mark.parametrize("page", sorted((ROOT / "pages").glob("*.py")), ids=lambda p: p.stem)
def test_each_fact_a_page_quotes_is_in_its_views_record(page):
    """A caption reads its view's facts by name: a name the view's record lacks fails here, not when a visitor
    opens the page."""
    for line, d, name in quoted_facts(page):
        required, optional = registry.fact_keys(d.facts)
        opened = getattr(d.facts, "__extra_items__", None) not in (None, registry.NoExtraItems)
        assert name in required | optional or opened, f"{page.name}:{line}: {d.name} has no fact {name!r}"


def test_the_page_walk_sees_the_facts_pages_quote(tmp_path):
    quoted = [q for page in (ROOT / "pages").glob("*.py") for q in quoted_facts(page)]
    assert len(quoted) >= 100 and len({d.name for _, d, _ in quoted}) >= 25
    page = tmp_path / "renamed.py"  # a caption still reading a fact by its old name
    page.write_text("from seqviz.views import gates as views\nheat = cm.view(views.heat_map, ref, ids=ids)\n"
                    "f = heat.facts\nst.caption(f['pos'])\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="gates.heat_map has no fact 'pos'"):
        test_each_fact_a_page_quotes_is_in_its_views_record(page)
