"""The lesson views seqviz ships (seqviz/lessons/data/results.json): what the live views give now, not used
once a checkpoint they read changes, and a step opened on a fresh server is drawn before torch is imported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from seqviz.introspect.projection import passage_only
from seqviz.lessons import shipped
from seqviz.lessons.load import lessons
from seqviz.lessons.views import run_view
from seqviz.registry import load
from seqviz.text import LANGUAGES, in_language
from seqviz.views.spec import enable_cjk_theme
from tests.app.test_shipped_views import named_by_order
from tests.conftest import ROOT
from tests.float32 import close, explain, for_view

CK = ROOT / "checkpoints"
FOLDERS = {f.name: f for f in CK.iterdir() if (f / "config.json").is_file()}
STEPS = [(lid, i, s) for lid, lesson in lessons().items() for i, s in enumerate(lesson.steps)]


@pytest.mark.parametrize("lid, i, step", STEPS, ids=lambda x: x if isinstance(x, (str, int)) else "")
def test_each_shipped_step_is_the_view_computed_now(lid, i, step):
    enable_cjk_theme()  # as the app and precompute draw
    models = {n: load(FOLDERS[n]) for n in step.models}
    cards = {n: json.loads((FOLDERS[n] / "card.json").read_text(encoding="utf-8")) for n in step.cards}
    # the default in every language, each other option of the control in English
    shown = [(step.control.default, lang) for lang in LANGUAGES] + [
        (v, "en") for v in shipped.shipped_values(step) if v != step.control.default]
    with passage_only():  # as precompute computed them, whatever corpus an earlier test fetched
        for value, lang in shown:
            found = shipped.read(step, value, lang, FOLDERS)
            if step.view in shipped.LIVE:
                assert found is None
                continue
            assert found is not None, f"{lid} step {i + 1} at {value}: run python -m seqviz precompute --lessons"
            spec, numbers, table = found
            with in_language(lang):
                live = run_view(step.view, models, cards, value, step.params, step.choice, step.table)
            tol = for_view(step.view)  # its quantity's float32 error (tests/float32.py)
            now = json.loads(json.dumps(live.numbers, default=float))
            assert close(numbers, now, tol), (lid, i + 1, value, lang, explain(numbers, now, tol))
            a, b = named_by_order(spec), named_by_order(json.loads(json.dumps(live.spec(), default=float)))
            assert close(a, b, tol), (lid, i + 1, value, lang, explain(a, b, tol))
            assert (table is None) == (live.table is None)


def test_a_changed_checkpoint_is_not_drawn_from_old_lesson_views(tmp_path):
    step = next(s for _lid, _i, s in STEPS if s.models == ("shakespeare-char-rnn",) and s.view not in shipped.LIVE)
    folders = dict(FOLDERS)
    with passage_only():
        assert shipped.read(step, step.control.default, "en", folders) is not None
        copy = shutil.copytree(FOLDERS["shakespeare-char-rnn"], tmp_path / "rnn")
        weights = (copy / "model.safetensors").read_bytes()
        (copy / "model.safetensors").write_bytes(weights[:-4] + b"\0\0\0\1")
        folders["shakespeare-char-rnn"] = copy
        assert shipped.read(step, step.control.default, "en", folders) is None
        assert shipped.read(step, 0.123, "en", FOLDERS) is None  # only the control's own values are shipped


def test_fetching_the_corpus_leaves_the_steps_that_never_read_it_shipped(monkeypatch):
    """Each shipped view records whether it asked for the reference text; once the held-out plays are fetched
    (another reference text) only those that did are computed again."""
    from seqviz.introspect import projection

    with passage_only():
        before = {(lid, i): shipped.read(s, s.control.default, "en", FOLDERS) for lid, i, s in STEPS}
    monkeypatch.setattr(projection, "reference_source", lambda: "held-out validation plays (fetched since)")
    shipped._read.clear()
    body = json.loads(shipped.FILE.read_text(encoding="utf-8"))["views"]
    kept = set()
    for lid, i, step in STEPS:
        if before[(lid, i)] is None:  # LIVE
            continue
        reads = body[shipped.step_key(step, step.control.default, "en")]["reads_reference"]
        found = shipped.read(step, step.control.default, "en", FOLDERS)
        assert (found is None) == reads, (lid, i + 1)
        kept |= {(lid, i)} if found is not None else set()
    assert kept  # the steps read texts of their own: a fresh server draws them whether the corpus is there or not
    shipped._read.clear()


FIRST = """
import sys
from streamlit.testing.v1 import AppTest
import appkit.draw as draw
import seqviz.background as background

background.warm_up = lambda: None  # as if this were the server's first run
seen = []
real = draw.show
def show(where, spec, **kw):
    seen.append("torch" in sys.modules)
    return real(where, spec, **kw)
draw.show = show
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.run()
at.query_params.update({"lesson": "stations", "step": sys.argv[2], "lang": "zh", "reveal": "1"})
at.switch_page("pages/lessons.py")
at.run()
print("exception" if at.exception else "ok", seen)
"""


@pytest.mark.parametrize("step", ["1", "4"])
def test_a_lesson_step_on_a_fresh_server_is_drawn_before_torch_is_imported(tmp_path, step):
    script = tmp_path / "first.py"
    script.write_text(FIRST)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEQVIZ_")}
    env.update(PYTHONPATH=str(ROOT), SEQVIZ_CHECKPOINTS=str(CK), SEQVIZ_DATA=str(tmp_path / "data"))
    run = subprocess.run([sys.executable, str(script), str(ROOT / "app.py"), step], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    out = (run.stdout.strip().splitlines() or [run.stderr[-2000:]])[-1]
    assert out == "ok [False]", out


def test_the_lesson_files_name_the_views_there_are_without_importing_them():
    from seqviz.lessons import load as lesson_load
    from seqviz.lessons.views import VIEWS

    assert set(lesson_load.VIEW_NAMES) == set(VIEWS)
    code = "import sys, seqviz.lessons as L; L.lessons(); print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True).stdout.strip() == "False"
