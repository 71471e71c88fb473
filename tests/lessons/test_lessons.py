"""Lessons: the views' numbers against independent references, the lesson files, and every step walked in AppTest.

The walk is the issue's proof: both lessons, both languages, every step — no exception, the view draws,
each "what to notice" line equals the template filled with the library's numbers for that state, the
Chinese walk shows no English of its own (``tests/i18n/completeness.untranslated``), and each step's
link opens the named page with the same control values (and the same tab). Models are loaded once
per test session and each view is computed once per (view, value), so the file stays within minutes.
"""

from __future__ import annotations

import copy
import io
import json
import math
import re
from functools import lru_cache

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import seqviz
from appkit.lessons import shown_spec
from seqviz.extract import extract_lessons
from seqviz.lessons import LessonError, lessons, read_lesson, run_view
from seqviz.views import gradients as grad_views
from seqviz.lessons.load import DATA
from tests.conftest import ROOT
from tests.i18n.completeness import shown_texts, untranslated

CK = ROOT / "checkpoints"
TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer"
torch.set_num_threads(1)  # as the app (appkit.cache): several threads on a loaded 2-core machine run 50x slower


@lru_cache(maxsize=None)
def _model(name: str):
    return seqviz.load(CK / name)


@lru_cache(maxsize=None)
def _card(name: str) -> dict:
    return json.loads((CK / name / "card.json").read_text())


_NUMBERS: dict = {}


def numbers_of(step, value, lang: str = "en") -> dict:
    """The library's numbers for a step at ``value`` in ``lang`` (a model's name reads in the language: run_view on
    this test's own models, once per state)."""
    from seqviz.text import in_language

    key = (step.view, json.dumps(step.params, sort_keys=True, ensure_ascii=False), step.models, step.cards, value,
           lang)
    if key not in _NUMBERS:
        with in_language(lang):
            _NUMBERS[key] = run_view(step.view, {n: _model(n) for n in step.models},
                                     {n: _card(n) for n in step.cards}, value, step.params, step.choice,
                                     step.table).numbers
    return _NUMBERS[key]


# ------------------------------------------------------------------ views against independent references
def test_book_slip_matches_the_seed_and_the_true_chain_is_computed_by_hand():
    h1 = math.tanh(1.0)
    h2, h3 = math.tanh(0.5 * h1 + 0.5), math.tanh(0.5 * math.tanh(0.5 * h1 + 0.5) - 0.2)
    v = grad_views.scalar_rnn(None, 2.0)  # the stations lesson's S3 step: the declared view itself
    v.numbers = v.facts
    assert v.numbers["book"] == pytest.approx((1 - h2 ** 2) * 2.0 * (1 - h3 ** 2) * 2.0, abs=1e-12)
    assert v.numbers["book"] == pytest.approx(1.958, abs=5e-3)  # the seed's printed value (rounded states)
    t2 = math.tanh(2.0 * h1 + 0.5)
    t3 = math.tanh(2.0 * t2 - 0.2)
    assert v.numbers["true"] == pytest.approx((1 - t2 ** 2) * 2.0 * (1 - t3 ** 2) * 2.0, abs=1e-12)
    assert v.numbers["true"] == pytest.approx(0.0319, abs=5e-4) and v.numbers["slip"] and v.numbers["shrinks"]
    assert not grad_views.scalar_rnn(None, 0.5).facts["slip"]  # at 0.5 the book is right
    spec = v.chart.to_dict()
    assert spec["encoding"]["x"]["type"] == "ordinal"  # three steps: ticks 1, 2, 3, never 1.5
    assert sorted({row["t"] for row in next(iter(spec["datasets"].values()))}) == [1, 2, 3]


def _top_layer_input(m, ids):
    """The top recurrent layer's input (float64 model): the layers below it, run as the model runs them."""
    x = m.embed(ids)
    for rnn in m.layers[:-1]:
        x, _ = rnn(x)
    return x[0]


def test_radius_cliff_against_numpy_powers_and_an_autograd_unroll():
    m, rho, d = _model("shakespeare-char-rnn"), 1.5, 20
    v = grad_views.radius_bench(m, TEXT, 50, rho, d, short=True)
    v.numbers = v.facts
    ids = torch.tensor([[m.tokenizer.tokens.index(c) for c in TEXT[:50]]])
    m64 = copy.deepcopy(m).double()
    W = m64.layers[-1].weight_hh_l0.detach().numpy()
    rho0 = float(np.abs(np.linalg.eigvals(W)).max())
    assert v.numbers["rho_trained"] == pytest.approx(rho0, rel=1e-9)
    with torch.enable_grad():
        # linear regime: s_t = dL_t/dh_t of the trained model, pushed back d steps through (rho/rho0) W alone
        x = _top_layer_input(m64, ids).detach()
        h, _ = m64.layers[-1](x[None])
        h = h[0].detach().requires_grad_(True)
        losses = F.cross_entropy(m64.head(h[:-1]), ids[0, 1:], reduction="none")
        seeds = np.stack([torch.autograd.grad(losses[t], h, retain_graph=True)[0][t].numpy()
                          for t in range(len(losses))])
        # ... laid along W's leading left eigenvector u (u W = lambda u), where the chain is rho^d exactly
        values, vectors = np.linalg.eig(W.T)
        u = vectors[:, np.abs(values).argmax()] / np.linalg.norm(vectors[:, np.abs(values).argmax()])
        Wd = np.linalg.matrix_power(W * rho / rho0, d)
        linear = np.linalg.norm(np.linalg.norm(seeds, axis=1).mean() * u @ Wd)  # at the seeds' mean size
        assert v.numbers["lin"] == pytest.approx(linear, rel=1e-6)
        # the trained RNN with W_hh rescaled: unroll its top layer by hand and differentiate L_t by h_(t-d)
        rnn = m64.layers[-1]
        Wr = rnn.weight_hh_l0.detach() * rho / rho0
        x = x.requires_grad_(True)  # a graph through every state (the weights of a loaded model need no grad)
        states, hk = [], torch.zeros(Wr.shape[0], dtype=torch.float64)
        for t in range(len(x)):
            hk = torch.tanh(x[t] @ rnn.weight_ih_l0.T + rnn.bias_ih_l0 + hk @ Wr.T + rnn.bias_hh_l0)
            states.append(hk)
        norms = [torch.autograd.grad(F.cross_entropy(m64.head(states[t])[None], ids[0, t + 1:t + 2]), states[t - d],
                                     retain_graph=True)[0].norm().item() for t in range(d, len(x) - 1)]
    assert v.numbers["tanh"] == pytest.approx(np.mean(norms), rel=1e-6)
    assert v.numbers["rho_d"] == pytest.approx(rho ** d) and v.numbers["linear_grows"] and v.numbers["vanishes"]
    assert v.numbers["lin_ratio"] == pytest.approx(rho ** d, rel=1e-9)  # what the note beside it says


def test_clipping_numbers_follow_the_two_runs():
    from seqviz.introspect import clipping as cl
    from seqviz.introspect.projection import corpus_text

    v = run_view("clipping", {}, {}, 1.0, {"chars": 20000, "lr": 3.0, "seed": 0})
    text = corpus_text()[0][:20000]
    free, kept = cl.train_run(text, None, lr=3.0, seed=0), cl.train_run(text, 1.0, lr=3.0, seed=0)
    assert v.numbers["free_jump"] == pytest.approx(float(np.diff(free["loss"].to_numpy()).max()))
    assert v.numbers["kept_jump"] == pytest.approx(float(np.diff(kept["loss"].to_numpy()).max()))
    assert v.numbers["free_max"] == pytest.approx(free["grad_norm"].max())
    assert v.numbers["above"] == int((kept["grad_norm"] > 1.0).sum()) > 0
    # g <- min(1, c/||g||) g: the applied norm is min(c, ||g||) at every step
    assert np.allclose(kept["applied_norm"], np.minimum(1.0, kept["grad_norm"]), rtol=1e-5)
    assert v.numbers["kept_max"] == pytest.approx(1.0, rel=1e-5) and v.numbers["tamed"]  # 1.47 < 24.4 / 10
    # the question is about the loss: it is drawn, above the norms the notes quote
    top, bottom = v.spec()
    fields = [[layer["encoding"]["y"]["field"] for layer in c["layer"] if "y" in layer["encoding"]] for c in (top, bottom)]
    assert set(fields[0]) == {"loss"} and fields[1][0] == "grad_norm"  # the loss, its largest rises ringed


def test_memory_span_against_a_hand_product_and_a_hand_shifted_bias():
    m = _model("shakespeare-char-lstm")
    text = "HAMLET.\nTo be, or not to be, that is the question:\n"
    v = run_view("memory", {"m": m}, {}, 1.0, {"text": text, "layer": 0, "start": 0})

    def spans(model):
        f = model.trace([text], names=["layers.0.gates.forget"])["layers.0.gates.forget"][0].double().numpy()
        above = np.cumprod(f, axis=0) > 0.5
        return np.where(above.all(0), len(f), above.argmin(0))

    trained = spans(m)
    assert v.numbers["span"] == trained.max() and trained[v.numbers["unit"]] == trained.max()
    shifted = copy.deepcopy(m)
    H = shifted.layers[0].hidden_size
    with torch.no_grad():  # PyTorch's LSTM stacks (i, f, g, o): the forget bias is the second quarter
        shifted.layers[0].bias_hh_l0[H:2 * H] += 1.0
    assert v.numbers["span_new"] == spans(shifted)[v.numbers["unit"]]
    assert v.numbers["median"] == pytest.approx(float(np.median(trained)))


def test_the_memory_race_against_hand_products_of_f_and_of_exp_dt_a():
    """The LSTM's spans from its forget gates, the Mamba's from Δ and A_log by hand (each channel's slowest
    state: the largest A = −exp(A_log)), both cumulated here; the verdict follows the two spans."""
    lstm, mamba = _model("shakespeare-char-lstm"), _model("shakespeare-char-mamba")
    step = lessons()["memories"].steps[0]
    text, start = step.params["text"], 25
    v = run_view("memory_race", {n: _model(n) for n in step.models}, {}, start, step.params)

    def spans(gates):
        above = np.cumprod(gates[start:], axis=0) > 0.5
        return np.where(above.all(0), len(above), above.argmin(0))

    f = lstm.trace([text], names=["layers.0.gates.forget"])["layers.0.gates.forget"][0].double().numpy()
    dt = mamba.trace([text], names=["layers.0.dt"])["layers.0.dt"][0].double().numpy()  # [T, D]
    slowest = (-np.exp(mamba.model.backbone.layers[0].mixer.A_log.double().numpy())).max(-1)  # [D]
    lstm_spans, mamba_spans = spans(f), spans(np.exp(dt * slowest))
    assert v.numbers["span"] == lstm_spans.max() and lstm_spans[v.numbers["unit"]] == lstm_spans.max()
    assert v.numbers["mamba_span"] == mamba_spans.max() and mamba_spans[v.numbers["channel"]] == mamba_spans.max()
    assert v.numbers["rest"] == len(f) - start and text[start] == v.numbers["token"] == '"'
    assert v.numbers["mamba_longer"] == (mamba_spans.max() > lstm_spans.max())
    per_token = run_view("decay_by_token", {n: _model(n) for n in step.models}, {}, start, step.params).numbers
    decay = np.exp(dt * slowest)[start:, per_token["channel"]]
    assert per_token["decay_min"] == pytest.approx(decay.min(), rel=1e-5)
    # −log of a float32 decay near 1 (1 − 1.4e-4 at its slowest) keeps only ~3 digits: 6e-8 / 1.4e-4 = 4e-4
    assert per_token["ratio"] == pytest.approx(np.log(decay).min() / np.log(decay).max(), rel=2e-3)


def test_switching_the_memory_off_against_a_hand_zeroed_cell_state():
    from seqviz.models.edits import ablate

    m = _model("shakespeare-char-lstm")
    text = "HAMLET.\nTo be, or not to be, that is the question:\nThe slings and arrows. [Exit.]\n"
    v = run_view("switch_off", {"m": m}, {}, 1, {"text": text, "layer": 0})
    unit = int(v.numbers["units"])
    ids = [m.tokenizer.encode(text).ids]
    delta = (m.trace(ids, edits=[ablate("layers.0.c", [unit])])["loss"][0] - m.trace(ids)["loss"][0]).double()
    assert v.numbers["mean"] == pytest.approx(float(delta.mean()), abs=1e-6)
    assert v.numbers["worst"] == pytest.approx(float(delta.max()), abs=1e-6)
    assert text[int(delta.argmax()) + 1] == v.numbers["token"]
    assert sum(v.numbers[w] for w in ("name_dot", "bracket_worst", "everywhere")) == 1  # one right answer


def test_forget_path_against_a_hand_product():
    m = _model("shakespeare-char-lstm")
    text = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind"
    v = grad_views.forget_gain(m, text, 0.99, 20)
    v.numbers = v.facts
    assert v.numbers["fk"] == pytest.approx(0.99 ** 20, rel=1e-12)
    f = m.trace([text], names=["layers.0.gates.forget"])["layers.0.gates.forget"][0].double().numpy()
    prods = [np.prod(f[t - 19: t + 1], axis=0).mean() for t in range(20, len(f))]  # t - k = 20, k >= 0 as in gradients.forget_product
    assert v.numbers["real"] == pytest.approx(float(np.mean(prods)), rel=1e-6)


def test_connectivity_share_against_autograd():
    m = _model("shakespeare-char-rnn")
    text = "To be, or not to be, that is the question"
    v = grad_views.connectivity(m, text, 50, 20, 5)
    v.numbers = v.facts
    ids = torch.tensor([[m.tokenizer.tokens.index(c) for c in text]])  # a character model: one id per char
    x = m.embed.weight[ids[:, :21]].detach().clone().requires_grad_(True)
    with torch.enable_grad():
        h, _ = m.layers[0](x)
        for layer in m.layers[1:]:
            h, _ = layer(h)
        logit = m.head(h[0, 20])[ids[0, 21]]
        (g,) = torch.autograd.grad(logit, x)
    norms = g[0].norm(dim=1).double().numpy()
    assert v.numbers["far_share"] == pytest.approx(norms[:15].sum() / norms.sum(), rel=1e-4)  # t − k > 5


def test_attention_numbers_against_a_numpy_softmax():
    m = _model("zh-en-attention-gru")
    v = run_view("alignment", {"m": m}, {}, 2.0, {"sentence": "他们昨晚没在图书馆笑"})
    from seqviz.introspect.attention import translate_text

    run = translate_text(m, "他们昨晚没在图书馆笑")
    n = len(run["source"])
    scores = run["trace"]["decoder.attn.scores"][0, :, :n].double().numpy()
    own = np.exp(scores - scores.max(1, keepdims=True))
    own /= own.sum(1, keepdims=True)
    content = [t for t, w in enumerate(run["trace"].target_strings[0]) if w in ("laugh", "library", "night")]
    assert run["trace"].target_strings[0].index(v.numbers["word"]) in content  # a content word, not "the"
    t = run["trace"].target_strings[0].index(v.numbers["word"])
    assert own[t].max() >= 0.9 * max(own[c].max() for c in content)  # as sharp as any (default_target)
    e = scores[t] / 2.0
    p = np.exp(e - e.max()) / np.exp(e - e.max()).sum()
    assert v.numbers["max"] == pytest.approx(p.max(), abs=1e-6)
    assert v.numbers["entropy"] == pytest.approx(-(p * np.log(p)).sum(), abs=1e-5)
    assert v.numbers["uniform"] == pytest.approx(math.log(n))


def test_bottleneck_reads_the_cards():
    cards = {n: _card(n) for n in ("zh-en-attention-gru", "zh-en-noattention-gru")}
    v = run_view("bottleneck", {}, cards, "51+", {"attention": "zh-en-attention-gru", "plain": "zh-en-noattention-gru"})
    row = {n: next(r["bleu"] for r in c["bleu_by_length"] if r["bucket"] == "51+") for n, c in cards.items()}
    assert v.numbers["gap"] == pytest.approx(row["zh-en-attention-gru"] - row["zh-en-noattention-gru"])


def test_lesson_files_load_and_bad_ones_are_refused(tmp_path):
    found = lessons()
    assert {"stations", "attention"} <= set(found) and len(found["stations"].steps) >= 10
    assert {s.view for s in found["stations"].steps} >= {"gradients.radius_bench", "clipping", "memory"}
    bad = tmp_path / "bad.toml"
    bad.write_text('title = "x"\n[[steps]]\ntitle = "t"\n', encoding="utf-8")
    with pytest.raises(LessonError, match="missing field"):
        read_lesson(bad)


SCALAR_STEP = """title = "x"
[[steps]]
title = "t"
goal = "g"
view = "gradients.scalar_rnn"
choice = "w"
control = { kind = "select_slider", label = "W_hh", options = [0.5, 2.0], default = 2.0 }
question = "Does it grow?"
options = [{ text = "yes", when = "grows" }, { text = "no", when = "shrinks" }]
notice = ["true {true:.3f}", "{NOTE}"]
link = { page = "exploding_vanishing" }
"""


@pytest.mark.parametrize("note, refused", [("book {book:.3f}", None), ("position {pos}", "quotes pos"),
                                           ("{book_says}", "quotes book_says")])
def test_a_lesson_quoting_a_fact_its_view_does_not_have_is_refused_when_it_loads(tmp_path, note, refused):
    """A step on a declared view quotes its facts by the view's own names (``ScalarFacts``): a renamed or missing
    fact fails when the lessons load, naming the view and what it has, not when a visitor opens the step."""
    path = tmp_path / "quotes.toml"
    path.write_text(SCALAR_STEP.replace("{NOTE}", note), encoding="utf-8")
    if refused is None:
        assert read_lesson(path).steps[0].choice == "w"
        return
    with pytest.raises(LessonError, match=f"{refused}, which gradients.scalar_rnn does not have") as e:
        read_lesson(path)
    assert "slip" in str(e.value)  # the facts it does have are listed
    bad_when = SCALAR_STEP.replace("{NOTE}", "b").replace('when = "shrinks"', 'when = "small"')
    path.write_text(bad_when, encoding="utf-8")
    with pytest.raises(LessonError, match="quotes small"):
        read_lesson(path)
    path.write_text(SCALAR_STEP.replace("{NOTE}", "b").replace('choice = "w"', 'choice = "rho"'), encoding="utf-8")
    with pytest.raises(LessonError, match="control sets one of w"):
        read_lesson(path)


def test_extractor_collects_every_option_and_note():
    for path in DATA.glob("*.toml"):
        got = {m for _, _, m, _ in extract_lessons(io.BytesIO(path.read_bytes()), [], [], {})}
        lesson = read_lesson(path)
        for step in lesson.steps:
            assert {step.title, step.goal, step.question, step.control.label, *step.notice} <= got
            assert {o for o, _ in step.options} <= got


def test_presenter_fonts_reach_the_chart_and_titles_wrap_by_the_drawn_width():
    spec = run_view("memory", {"m": _model("shakespeare-char-lstm")}, {}, 1.0,
                    {"text": "HAMLET.\nTo be, or not to be", "layer": 0}).chart.to_dict()
    shown = json.dumps(shown_spec(spec, present=True), ensure_ascii=False)
    assert '"labelFontSize": 12' in json.dumps(spec) and '"labelFontSize": 12' not in shown  # explicit sizes raised
    title = json.loads(shown)["title"]["text"]  # lines on a phone, one line on a projector
    assert json.loads(shown)["config"]["axis"]["labelFontSize"] == 22 and "since position" in title["expr"]
    narrow, wide = (json.loads(x) for x in re.fullmatch(r"width < \d+ \? (\[.*?\]) : (\[.*\])", title["expr"]).groups())
    assert len(narrow) > 1 and len(wide) == 1 and " ".join(narrow) == wide[0]
    plain = shown_spec(spec, present=False)  # English, not presenting: the cached spec, its tooltips titled
    assert {k: v for k, v in plain.items() if k != "layer"} == {k: v for k, v in spec.items() if k != "layer"}


def test_wrapping_keeps_words_and_formulas_whole():
    from seqviz.charts.presenter import wrap

    assert wrap("‖∂L_t/∂h_k‖ 随距离 t − k 的变化", 11.5) == ["‖∂L_t/∂h_k‖ 随距离", "t − k 的变化"]  # not "t|− k"
    assert wrap("实际施加的 ‖g‖（≤ c）", 10.5) == ["实际施加的 ‖g‖", "（≤ c）"]  # not "(≤|c)"
    assert wrap("∂h_t/∂h_1：真实值与教材表格对比", 11.5) == ["∂h_t/∂h_1：", "真实值与教材表格对比"]  # not "教|材"
    assert wrap("训练好的 RNN，用它自己的 tanh", 10.5) == ["训练好的 RNN，", "用它自己的 tanh"]  # not "用它自|己的"
    assert wrap("linear regime (tanh′ = 1)", 10.5) == ["linear regime", "(tanh′ = 1)"]


# ------------------------------------------------------------------ the page, every step, both languages
CITED = ("Jozefowicz",)  # authors the notes cite by name, as the seeds do (seed 002: "Jozefowicz 2015")


def _allowed(step, numbers) -> list[str]:
    """Data a step shows as it is: the view's words (tokens, translations, model names), the control's options."""
    return [str(v) for v in (*numbers.values(), *step.control.options) if isinstance(v, str)] + list(CITED)


def _walk(lesson_id: str, lang: str):
    from streamlit.testing.v1 import AppTest

    from seqviz.text import gettext_in

    lesson = lessons()[lesson_id]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.query_params.update({"lesson": lesson_id, "step": "1", "lang": lang})
    at.switch_page("pages/lessons.py")
    at.run()
    for i, step in enumerate(lesson.steps):
        assert not at.exception, at.exception
        guess = [r for r in at.radio if r.key == f"lesson_{lesson_id}_{i}_guess"]
        assert guess, f"step {i + 1}: no predict-first question"
        guess[0].set_value(0).run()
        assert not at.exception and not at.error, (i, at.exception, [e.value for e in at.error])
        assert at.get("vega_lite_chart"), f"step {i + 1} drew no chart"
        value = at.session_state[f"lesson_{lesson_id}_{i}_value"]
        numbers = numbers_of(step, value, lang)
        shown = "\n".join(m.value for m in at.markdown)
        for template in step.notice:
            note = gettext_in(lang, template).format(**numbers)
            assert (note in shown) == (template in step.notes_shown(numbers)), (i, template)
        if step.slip and numbers.get("slip"):
            assert gettext_in(lang, step.slip).format(**numbers) in "\n".join(w.value for w in at.warning)
        assert step.link.url(value, lang, numbers) in shown
        if lang == "zh":
            left = untranslated(shown_texts(at), allow=_allowed(step, numbers))
            assert not left, (i + 1, left)
        if i < len(lesson.steps) - 1:
            at.button(key="lesson_next").click().run()
            assert at.query_params["step"] == [str(i + 2)] or at.query_params["step"] == str(i + 2)
    return at


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson_id", ["stations", "attention", "memories", "hidden"])
def test_every_step_walks_and_quotes_the_library(lesson_id, lang):
    _walk(lesson_id, lang)


WIDGETS = ("slider", "select_slider", "text_area", "text_input", "selectbox", "number_input", "radio")


def _open_tab(at, key: str) -> str | None:
    """The label of the open tab of the tab group ``key`` (lazy tabs run only the open one)."""
    return at.session_state[key] if key in at.session_state else None


@pytest.mark.parametrize("lesson_id", ["stations", "attention", "memories", "hidden"])
def test_links_open_the_page_with_the_same_control_values(lesson_id):
    from streamlit.testing.v1 import AppTest

    for i, step in enumerate(lessons()[lesson_id].steps):
        value = step.control.default
        query = step.link.query(value, numbers_of(step, value))
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
        at.run()
        at.query_params.update({k: str(v) for k, v in query.items()})
        at.switch_page(f"pages/{step.link.page}.py")
        at.run()
        assert not at.exception, (i + 1, at.exception)
        for key, want in query.items():
            if key == step.link.model_type:
                assert str(at.query_params.get(key)) in (want, str([want])), (i + 1, key)
                continue
            if key.endswith("_tab"):
                assert _open_tab(at, key) == want, (i + 1, key, _open_tab(at, key))
                continue
            widgets = [w for kind in WIDGETS for w in getattr(at, kind) if w.key == key]
            assert widgets, f"step {i + 1}, {step.link.page}: no widget with key {key!r}"
            assert widgets[0].value == want or str(widgets[0].value) == str(want), (i + 1, key, widgets[0].value, want)


def test_a_steps_table_shows_a_dash_where_a_number_is_missing_not_none():
    from appkit.lessons import table_text
    from seqviz.introspect.worked_examples import scalar_rnn

    shown = table_text(scalar_rnn(2.0))  # t = 1 has no ∂h_1/∂h_0
    assert shown["∂h_t/∂h_{t-1}"].tolist()[0] == "—" and shown["t"].tolist() == [1, 2, 3]
    assert shown["h_t"].tolist()[0] == f"{np.tanh(1.0):.4f}"


def _param(at, name):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def test_an_answer_and_a_control_are_kept_back_and_forth_and_in_the_address():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.query_params.update({"lesson": "stations", "step": "4"})
    at.switch_page("pages/lessons.py")
    at.run()
    radio = next(r for r in at.radio if r.key == "lesson_stations_3_guess")
    radio.set_value(1).run()
    rho = next(s for s in at.select_slider if s.key == "lesson_stations_3_value")
    rho.set_value(1.1).run()
    assert _param(at, "answer") == "2" and _param(at, "value") == "1.1"
    verdict = [m.value for m in (*at.success, *at.warning)]
    at.button(key="lesson_next").click().run()
    assert _param(at, "answer") is None and _param(at, "step") == "5"
    at.button(key="lesson_prev").click().run()
    assert next(r for r in at.radio if r.key == "lesson_stations_3_guess").value == 1
    assert next(s for s in at.select_slider if s.key == "lesson_stations_3_value").value == 1.1
    assert [m.value for m in (*at.success, *at.warning)] == verdict and not at.exception
    assert _param(at, "answer") == "2" and _param(at, "value") == "1.1"

    shared = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)  # a new visitor opens that address
    shared.run()
    shared.query_params.update({"lesson": "stations", "step": "4", "answer": "2", "value": "1.1"})
    shared.switch_page("pages/lessons.py")
    shared.run()
    assert next(r for r in shared.radio if r.key == "lesson_stations_3_guess").value == 1
    assert next(s for s in shared.select_slider if s.key == "lesson_stations_3_value").value == 1.1
    assert [m.value for m in (*shared.success, *shared.warning)] == verdict and not shared.exception


def test_a_question_names_what_it_asks_about_before_the_view_is_shown():
    from streamlit.testing.v1 import AppTest

    steps = lessons()["stations"].steps
    text = steps[0].params["text"]
    assert steps[0].question.format(**steps[0].asked_about(40)) .count(f"«{text[40]}»") == 1
    analogy = next(s for s in steps if s.view == "analogy")
    assert "queen" in analogy.question.format(**analogy.asked_about("king"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.query_params.update({"lesson": "stations", "step": "1", "lang": "zh"})
    at.switch_page("pages/lessons.py")
    at.run()
    label = next(r for r in at.radio if r.key == "lesson_stations_0_guess").label
    assert f"第 40 个位置（«{text[40]}»）" in label and not at.get("vega_lite_chart")  # named, not yet shown


def test_a_root_address_that_names_a_lesson_opens_its_step():
    """``/?lesson=stations&step=4&present=1&lang=zh``, the form a teacher copies from the README, opens the lesson
    page at that step (it used to open the model zoo), its parameters kept."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params.update({"lesson": "stations", "step": "4", "present": "1", "lang": "zh"})
    at.run()
    assert not at.exception, at.exception
    assert [r for r in at.radio if r.key == "lesson_stations_3_guess"], [r.key for r in at.radio]
    assert _param(at, "present") == "1" and _param(at, "lang") == "zh"
