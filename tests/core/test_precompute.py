"""``seqviz precompute PATH``: the results a folder ships, written for a folder trained elsewhere."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib.metadata import entry_points

import numpy as np
import pandas as pd

from seqviz.introspect.language import SAMPLE_TEXTS, read_scores, score_text
from seqviz.introspect.wordmap import FILE, load_word_map
from seqviz.models.recurrent import RecurrentLM
from seqviz.precompute import precompute
from tests.conftest import ROOT
from tests.float32 import ATOL, RTOL


def test_a_language_model_gets_the_sample_scores_its_weights_give(tiny_lm_dir, tmp_path):
    folder = shutil.copytree(tiny_lm_dir / "tiny-gru", tmp_path / "mine")
    assert read_scores(folder, SAMPLE_TEXTS["hamlet"]) is None  # none shipped yet
    written = precompute(folder, log=lambda _m: None)
    assert [p.name for p in written] == ["scores.json", "results.json"]
    model = RecurrentLM.from_pretrained(folder)
    shipped, live = read_scores(folder, SAMPLE_TEXTS["hamlet"]), score_text(model, SAMPLE_TEXTS["hamlet"])
    pd.testing.assert_frame_equal(shipped.table, live.table, rtol=RTOL, atol=ATOL)


def test_word_vectors_get_their_default_map(tmp_path):
    from seqviz.word2vec.formats import save_checkpoint
    from seqviz.word2vec.vectors import WordVectors

    rng = np.random.default_rng(0)
    words = ["man", "woman", "king", "queen"] + [f"w{i}" for i in range(80)]
    wv = WordVectors(words, rng.normal(size=(len(words), 8)).astype(np.float32), list(range(len(words), 0, -1)))
    folder = tmp_path / "vectors"
    save_checkpoint(wv, folder, {"name": "random"})
    precompute(folder, log=lambda _m: None)
    m = load_word_map(folder / FILE)
    assert set(m.words) <= set(words) and {"king", "queen"} <= set(m.words) and np.isfinite(m.coords).all()


def test_the_command_says_what_it_cannot_do_in_one_line(tmp_path):
    (tmp_path / "vocab.json").write_text(json.dumps(["a", "b"]))
    run = subprocess.run([sys.executable, "-m", "seqviz", "precompute", str(tmp_path / "vocab.json")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.startswith("error: ") and len(run.stderr.splitlines()) == 1


def test_the_seqviz_command_is_installed_as_a_console_script():
    scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    assert scripts.get("seqviz") == "seqviz.cli:main"


def test_results_json_keeps_numbers_finer_than_the_tolerances_that_compare_them():
    """precompute stores 7 significant digits (seqviz.results._float32): relative STORED at most, a fiftieth of
    the finest tolerance a shipped-vs-live test applies (tests/float32.py), so the file never decides one."""
    from seqviz.results import _float32
    from tests.float32 import DELTA, NETWORK, STORED, product

    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-6, 4, 2000), [-0.01164484, 1 / 3]])
    assert max(abs(_float32(float(v)) - v) / abs(v) for v in values) <= STORED
    assert all(STORED * 50 <= tol.rtol for tol in (NETWORK, DELTA, product(400)))
