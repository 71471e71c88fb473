"""The views a checkpoint ships (``results.json``, ``seqviz precompute``): what the live views give, and a
shared link to the Gate activations page draws its first charts from them before torch is imported."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from seqviz import load
from seqviz.introspect import projection
from seqviz.introspect.projection import passage_only
from seqviz.results import Peer, peer_key, read_view, ships, view_key
from seqviz.text import catalogue, in_language
from seqviz.precompute import opened
from seqviz.views.spec import enable_cjk_theme, to_spec
from tests.conftest import ROOT
from tests.float32 import Tol, close, explain, for_view

SHIPPED_LMS = sorted(p for p in (ROOT / "checkpoints").glob("shakespeare-char-*"))
# Each checkpoint's views recomputed take 20-250 s on the 2-core machine: by default an LSTM and a Mamba (two
# families, their gradient comparisons with the others); every one in the slow tier CI runs, on three kernel paths.
ALWAYS = {"shakespeare-char-lstm", "shakespeare-char-mamba"}


def named_by_order(spec):
    """A Vega-Lite spec with its datasets renamed data-0, data-1 ... in order of appearance: Altair names a
    dataset by the hash of its rows, so float32 results that differ in the 7th digit (another CPU) rename it."""
    text = json.dumps(spec)
    for i, name in enumerate(dict.fromkeys(re.findall(r"data-[0-9a-f]{32}", text))):
        text = text.replace(name, f"data-{i}")
    return json.loads(text)


def slack(fn, facts) -> Tol:
    """The view's float32 tolerance (tests/float32.py); saturation is a fraction of tokens past a threshold: a
    gate within float32 noise of 0.1 falls on either side on another CPU or thread count (seen: one token of
    3,000 for one unit), so allow two."""
    tol = for_view(fn.__name__)
    return Tol(tol.atol + 2 / facts["tokens"], tol.rtol) if fn.__name__ == "saturation" else tol


@pytest.mark.parametrize("folder", [p if p.name in ALWAYS else pytest.param(p, marks=pytest.mark.slow)
                                    for p in SHIPPED_LMS], ids=lambda p: p.name)
def test_each_shipped_view_is_the_view_computed_now(folder):
    with passage_only():  # as precompute computed them, whatever corpus an earlier test fetched
        assert ships(folder), f"{folder.name}: run python -m seqviz precompute {folder}"
        enable_cjk_theme()  # as the app and precompute draw
        check_opening(loaded(folder), folder)


@pytest.mark.parametrize("name", ["zh-en-attention-gru", "zh-en-noattention-gru", "dates-attention-gru"])
def test_an_encoder_decoder_ships_what_the_attention_page_opens_on(name):
    folder = ROOT / "checkpoints" / name
    enable_cjk_theme()
    model = loaded(folder)
    check_opening(model, folder, least=6 if model.attn is not None else 2, compares=False)


def loaded(folder, step=None):
    """Each checkpoint (or its snapshot at ``step``) loaded once for this module: a comparison's six gradient
    matrices are then computed once (views memoise per model object), not once per checkpoint that ships it."""
    return _loaded(Path(folder).resolve(), step)


@functools.lru_cache(maxsize=None)
def _loaded(folder, step):
    return load(folder, snapshot=step)


def check_opening(model, folder, least: int = 9, compares: bool = True):
    opening = opened(model, folder, loaded)  # a compared checkpoint: its Peer, its model
    assert len(opening) >= least
    if compares:
        compared = [key["models"] for _, key, _ in opening if "models" in key]  # the Gradient flow page's comparison
        assert compared and all(isinstance(peer, Peer) for models in compared for _, peer in models)
    for fn, key, choices in opening:
        choices = dict(choices)
        at = choices.pop("at_snapshot", model)  # a view of a training snapshot is computed on it
        for lang in ("en", "zh"):
            shipped = read_view(folder, view_key(fn, key, lang))
            assert shipped is not None, (fn.__name__, lang)
            with in_language(lang):
                live = fn(at, **choices)
                spec = None if live.chart is None else to_spec(live.chart, catalogue(lang).gettext)
            facts, tol = json.loads(json.dumps(live.facts, default=int)), slack(fn, live.facts)
            assert close(shipped["facts"], facts, tol), (fn.__name__, lang, explain(shipped["facts"], facts, tol))
            if spec is None:
                assert shipped["spec"] is None
                assert shipped["data"] is None if live.data is None else len(shipped["data"]["data"]) == len(live.data)
            else:
                a, b = named_by_order(shipped["spec"]), named_by_order(spec)
                assert close(a, b, tol), (fn.__name__, lang, explain(a, b, tol))


def test_once_the_corpus_is_fetched_only_the_views_that_read_it_are_computed_again(tmp_path, monkeypatch):
    """They were computed on the shipped passage (a fresh clone's reference text); with the held-out plays
    fetched, the views that read the corpus sample (saturation, the units it tracks, the PCA of the
    trajectories) are computed live, and those that read a text of their own are still drawn from the file."""
    folder = SHIPPED_LMS[0]
    views = _keys(folder)
    reading = {key for key, entry in views.items() if entry["reads_reference"]}
    assert reading and len(reading) < len(views)
    assert {key.split("|")[0].rsplit(".", 1)[1].split("@")[0] for key in reading} <= {"saturation", "unit_ranking", "memory_table", "trajectory"}
    plays = tmp_path / "shakespeare"
    plays.mkdir()
    for name in projection.SHAKESPEARE_VALIDATION:
        (plays / name).write_text("To be, or not to be.\n" * 40, encoding="utf-8")
    monkeypatch.setattr(projection, "SHAKESPEARE", plays)
    assert projection.reference_source().startswith("held-out validation plays")
    assert ships(folder)
    for key in views:
        assert (read_view(folder, key) is None) == (key in reading), key
    with passage_only():
        assert all(read_view(folder, key) is not None for key in views)


def _keys(folder):
    return json.loads((folder / "results.json").read_text(encoding="utf-8"))["views"]


def test_changed_weights_are_not_drawn_from_old_results(tmp_path):
    import shutil

    folder = shutil.copytree(SHIPPED_LMS[0], tmp_path / "ck")
    with passage_only():
        assert ships(folder)
        weights = (folder / "model.safetensors").read_bytes()
        (folder / "model.safetensors").write_bytes(weights[:-4] + b"\0\0\0\1")
        assert not ships(folder)


FIRST_CHART = """
import json
import sys
from streamlit.testing.v1 import AppTest
import appkit.draw as draw
import seqviz.background as background

background.warm_up = lambda: None  # as if this page's were the server's first run (the warm-up starts after it)
seen = []
real = draw.show
def show(where, spec, **kw):
    seen.append("torch" in sys.modules)
    return real(where, spec, **kw)
draw.show = show
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.run()
at.switch_page("pages/" + sys.argv[2])
at.query_params["lang"] = "zh"
at.query_params.update(json.loads(sys.argv[4]) if len(sys.argv) > 4 else {})
at.run()
print("exception" if at.exception else "ok", seen[:int(sys.argv[3])], len(at.get("vega_lite_chart")))
"""


@pytest.mark.parametrize("page, shipped", [("gates.py", 2), ("memory_attention.py", 2), ("trajectories.py", 4),
                                           ("units.py", 1), ("gradient_flow.py", 2), ("exploding_vanishing.py", 1),
                                           ("exposure_bias_lm.py", 2), ("interventions.py", 1), ("attention.py", 2),
                                           ("exposure_bias.py", 3), ("decoding.py", 1),
                                           ("word2vec.py", 1), ("word_map.py", 1), ("word2vec_evaluation.py", 1)])
def test_a_link_to_a_model_page_draws_its_first_charts_before_torch_is_imported(tmp_path, page, shipped):
    """The heat map and the means; the layer's memory map and one step's shares beside their knockouts; the
    trajectory and the three models compared; the saturation map; the six models' gradient by distance and the
    gradient matrix; the ρ bench (on the RNN: the page opens on the GRU); the two runs of the LM's exposure bias; the
    switch-off; the alignment and one word's weights; the two runs of a translation and an injected error; the beam
    tree; word vectors are numpy (their pages never need torch)."""
    assert first_charts(tmp_path, page, shipped).startswith(f"ok {[False] * shipped}")  # no torch yet


def first_charts(tmp_path, page: str, shipped: int, query: dict | None = None) -> str:
    """FIRST_CHART's line for ``page`` opened (with ``query``) in a fresh process, as on a fresh clone."""
    script = tmp_path / "first_chart.py"
    script.write_text(FIRST_CHART)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEQVIZ_") or k == "SEQVIZ_DATA"}
    # a fresh clone's data cache (no corpus fetched): the shipped views were measured on the shipped passage
    env.update(PYTHONPATH=str(ROOT), SEQVIZ_CHECKPOINTS=str(ROOT / "checkpoints"), SEQVIZ_DATA=str(tmp_path / "data"))
    run = subprocess.run([sys.executable, str(script), str(ROOT / "app.py"), page, str(shipped), json.dumps(query or {})],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return (run.stdout.strip().splitlines() or [run.stderr[-2000:]])[-1]


@pytest.mark.parametrize("own", [False, True])
def test_a_training_snapshots_trajectory_comes_shipped(tmp_path, own):
    """The Over-training slider at an earlier step, in the final model's space or the snapshot's own: the trajectory
    is read from the file (no torch for it), as a fresh clone would draw it."""
    query = {"traj_step": "300", **({"traj_own": "true"} if own else {})}
    assert first_charts(tmp_path, "trajectories.py", 1, query).startswith("ok [False]")


def test_the_gate_pages_other_layer_comes_shipped(tmp_path):
    """The Layer control at the LSTM's top layer: its heat map, means and memory product are read from the file."""
    assert first_charts(tmp_path, "gates.py", 3, {"gate_layer": "1"}).startswith("ok [False, False, False]")


def test_a_snapshots_view_is_keyed_by_its_weights_file(tmp_path):
    """A changed snapshot file is not drawn from results measured on the old one; the final weights' views still are."""
    import shutil

    from seqviz.results import Snapshot

    folder = shutil.copytree(SHIPPED_LMS[0], tmp_path / SHIPPED_LMS[0].name)
    with passage_only():
        keys = [k for k in _keys(folder) if '"at_snapshot"' in k and '"file": "step-300.safetensors"' in k]
        assert len(keys) == 4, keys  # in the final space and its own, in en and zh
        assert all(read_view(folder, k) is not None for k in keys)
        def rekeyed(key):  # the key the app builds for this view now (appkit.cache.view: view_key's JSON)
            name, choices, lang = key.split("|")
            return "|".join([name, json.dumps({**json.loads(choices), "at_snapshot": Snapshot(folder, 300).key()},
                                              sort_keys=True), lang])

        assert [rekeyed(k) for k in keys] == keys
        snap = folder / "snapshots" / "step-300.safetensors"
        snap.write_bytes(snap.read_bytes()[:-4] + b"\0\0\0\1")
        assert all(read_view(folder, rekeyed(k)) is None for k in keys)
        assert ships(folder)  # the final weights' views are untouched


def test_a_compared_checkpoint_keys_a_shipped_view_by_its_files(tmp_path):
    """A comparison is drawn from the file only while every checkpoint it compares is the one it was measured on:
    the app keys each compared folder as ``Peer(folder).key()`` computes it (name and files' SHA-1s), read from
    that folder's own results; a folder whose weights changed (or that ships none) gives no key."""
    import shutil

    folder = shutil.copytree(SHIPPED_LMS[0], tmp_path / SHIPPED_LMS[0].name)
    with passage_only():
        assert peer_key(folder) == Peer(folder).key() == Peer(SHIPPED_LMS[0]).key()
        assert {"config.json", "vocab.json", "model.safetensors"} <= set(Peer(folder).key()["files"])
        weights = (folder / "model.safetensors").read_bytes()
        (folder / "model.safetensors").write_bytes(weights[:-4] + b"\0\0\0\1")
        assert peer_key(folder) is None
        (folder / "results.json").unlink()
        assert peer_key(folder) is None
