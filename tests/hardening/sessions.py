"""Many visitors at once: AppTest sessions driven from threads, as `streamlit run` serves them.

A Streamlit server runs every visitor's script in its own thread of one process, sharing the
``st.cache_*`` caches; here each ``Visitor`` is an AppTest session in its own thread, so the
shared caches (and the models in them) are the ones under test and can be checked in-process.

AppTest itself was written for one session at a time: each run swaps a process-global mock
``Runtime`` in and out, patches ``config.get_option`` and compiles the page afresh.
``concurrent_apptest()`` installs one shared mock runtime, one config patch and one script cache
for all sessions instead (what a server has), so concurrent runs do not pull the runtime from
under each other.
Used by tests/hardening/test_concurrency.py and benchmarks/robustness.py (no pytest here).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import random
import re
import threading
import time
import traceback
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r"Vq\d\dZx")  # every visitor's own word; a random model samples it with p ~ 76^-6 per place


@contextlib.contextmanager
def concurrent_apptest():
    """One mock runtime, one config patch and one script cache shared by every AppTest run while inside."""
    from streamlit.components.v2.component_manager import BidiComponentManager
    from streamlit.runtime import Runtime
    from streamlit.runtime.caching.storage.dummy_cache_storage import MemoryCacheStorageManager
    from streamlit.runtime.dataframe_source_manager import DataframeSourceManager
    from streamlit.runtime.media_file_manager import MediaFileManager
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import app_test, local_script_runner
    from streamlit.testing.v1.util import patch_config_options

    shared = mock.MagicMock(spec=Runtime)
    shared.media_file_mgr = MediaFileManager(MemoryMediaFileStorage("/mock/media"))
    shared.dataframe_source_mgr = DataframeSourceManager()
    shared.cache_storage_manager = MemoryCacheStorageManager()
    shared.bidi_component_registry = BidiComponentManager()
    shared.bidi_component_registry.discover_and_register_components(start_file_watching=False)

    scripts = ScriptCache()  # one, as a server has: compiling in many threads at once trips CPython 3.11
    #                          ("AST constructor recursion depth mismatch"); a server compiles each page once

    class Holder:  # stands in for Runtime inside app_test: its per-run swaps land here, harmlessly
        _instance = None

    saved = Runtime._instance
    with patch_config_options({"global.appTest": True}), \
            mock.patch.object(app_test, "patch_config_options", lambda *_: contextlib.nullcontext()), \
            mock.patch.object(app_test, "Runtime", Holder), \
            mock.patch.object(app_test, "MagicMock", lambda **_: _Sink(shared)), \
            mock.patch.object(app_test, "ScriptCache", lambda: scripts), \
            mock.patch.object(local_script_runner, "ScriptCache", lambda: scripts):
        Runtime._instance = shared
        try:
            yield shared
        finally:
            Runtime._instance = saved


class _Sink:
    """AppTest's per-run mock runtime: its attribute writes are dropped, reads go to the shared one."""

    def __init__(self, shared):
        object.__setattr__(self, "_shared", shared)

    def __setattr__(self, name, value):
        pass

    def __getattr__(self, name):
        return getattr(self._shared, name)


# ------------------------------------------------------------------ what every visitor checks
def checksum(obj) -> str:
    """SHA-256 of a cached model's numbers: torch parameters and buffers, or word vectors."""
    import numpy as np

    h = hashlib.sha256()
    if hasattr(obj, "state_dict"):
        for name, tensor in sorted(obj.state_dict().items()):
            h.update(name.encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    else:
        h.update(np.ascontiguousarray(obj.vectors).tobytes())
    return h.hexdigest()


def untouched(obj) -> list[str]:
    """What would make a shared model unsafe to share: training mode, gradients, hooks."""
    problems = []
    modules = list(obj.modules()) if hasattr(obj, "modules") else []
    if any(m.training for m in modules):
        problems.append("in training mode")
    if hasattr(obj, "parameters") and any(p.requires_grad or p.grad is not None for p in obj.parameters()):
        problems.append("parameters require or hold gradients")
    if any(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks for m in modules):
        problems.append("hooks left on a module")
    return problems


def cache_report() -> list[tuple[str, str, int, float]]:
    """(kind, function, entries, max_entries) for every st.cache_* cache created so far."""
    from streamlit.runtime.caching import cache_data_api, cache_resource_api

    rows = []
    for sessions in list(cache_resource_api._resource_caches._function_caches.values()):
        for cache in list(sessions.values()):
            rows.append(("resource", cache.display_name, len(cache._mem_cache), cache._mem_cache.maxsize))
    for sessions in list(cache_data_api._data_caches._function_caches.values()):
        for cache in list(sessions.values()):
            limit = math.inf if cache.max_entries is None else cache.max_entries
            mem = getattr(cache.storage, "_mem_cache", None)
            rows.append(("data", cache.display_name, len(mem) if mem is not None else -1, limit))
    return rows


def visible_text(at) -> str:
    """Everything a visitor can read on the page: text, HTML without tags, widget values."""
    parts = []
    for kind in ("markdown", "caption", "text", "code", "warning", "info", "error", "success", "title",
                 "header", "subheader", "latex"):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [re.sub(r"<[^>]+>", "", h.value) for h in at.get("html")]
    parts += [str(m.value) + " " + str(m.label) for m in at.metric]
    for kind in ("text_input", "text_area"):
        parts += [str(w.value) for w in getattr(at, kind)]
    return "\n".join(parts)


# ------------------------------------------------------------------ one visitor
@dataclass
class Visitor:
    """One browser tab: its own word, its own model (uploaded or shipped), moving controls everywhere."""

    index: int
    pages: list  # appkit.registry.PageSpec, every page of the app
    model_name: str  # the shipped checkpoint chosen, or the uploaded file's name
    upload: bytes | None = None  # a zipped checkpoint folder of its own, when it uploads one
    expected_perplexity: str | None = None  # what the language-model page must show for its text
    visits: int = 0
    runs: int = 0
    problems: list[str] = field(default_factory=list)
    seen_pages: set = field(default_factory=set)
    chosen: bool = False  # its model is picked (on the first recurrent_lm page it opens)

    @property
    def word(self) -> str:
        return f"Vq{self.index % 100:02d}Zx"

    @property
    def text(self) -> str:
        return f"To be, or not to be {self.word}, that is the question."

    def run(self, at, what: str):
        at.run()
        self.runs += 1
        if at.exception:
            where = "".join(at.exception[0].stack_trace[-3:])[-600:]
            self.problems.append(f"{what}: exception {at.exception[0].message[:300]}\n{where}")
        foreign = {m for m in MARK.findall(visible_text(at)) if m != self.word}
        if foreign:
            self.problems.append(f"{what}: sees another visitor's text {sorted(foreign)}")
        return at

    def check_model(self, at, page) -> None:
        if page.model_type != "recurrent_lm" or not self.chosen:
            return
        captions = " ".join(c.value for c in at.sidebar.caption)
        if f"Using **{self.model_name}**" not in captions and not _stands_in(page):
            self.problems.append(f"{page.path}: uses another model: {captions[:200]!r}")
        if page.path == "language_model.py" and self.expected_perplexity:
            shown = [m.value for m in at.metric if m.label == "Perplexity"]
            if shown != [self.expected_perplexity]:
                self.problems.append(f"language_model.py: perplexity {shown}, its own model gives "
                                     f"{self.expected_perplexity}")

    def choose_model(self, at) -> None:
        """On the first language-model page it opens: Upload (its own zip) or a shipped one, in the sidebar."""
        self.chosen = True
        if self.upload is not None:
            at.sidebar.radio[0].set_value("Upload")
            self.run(at, "choose Upload")
            at.sidebar.file_uploader[0].set_value((self.model_name, self.upload, "application/zip"))
        else:
            at.sidebar.selectbox[0].select(self.model_name)

    def visit(self, at, page, rng: random.Random) -> None:
        """Open a page, then type its own text and move the page's main control (one rerun, as a quick user)."""
        from tests.app.test_pages import find_control, move

        at.switch_page(f"pages/{page.path}")
        self.run(at, f"open {page.path}")
        self.seen_pages.add(page.path)
        if page.model_type == "recurrent_lm" and not self.chosen:
            self.choose_model(at)
        boxes = [w for kind in ("text_input", "text_area") for w in getattr(at.main, kind)]
        if boxes:
            rng.choice(boxes).input(self.text if page.model_type == "recurrent_lm" else self.word)
        if page.main_control and not at.exception:
            kind, label, *text = page.main_control
            try:
                move(find_control(at, kind, label), kind, *text)
            except AssertionError as e:  # the control is missing: a page that did not render fully
                self.problems.append(f"{page.path}: {e}")
        self.run(at, f"type and move {page.main_control[1] if page.main_control else ''} on {page.path}")
        self.check_model(at, page)
        self.visits += 1

    def drive(self, deadline: float) -> None:
        from streamlit.testing.v1 import AppTest

        rng = random.Random(self.index)
        try:
            at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
            self.run(at, "open the app")
            step = 0
            while True:  # every visitor starts on a different page, so the first round covers them all
                self.visit(at, self.pages[(self.index + step) % len(self.pages)], rng)
                step += 1
                if time.monotonic() > deadline:
                    break
        except Exception:  # noqa: BLE001 - reported, not raised: the test lists every visitor's problems
            self.problems.append(traceback.format_exc(limit=6))


def zipped_checkpoint(folder: Path, name: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in sorted(folder.iterdir()):
            z.write(f, f"{name}/{f.name}")
    return buf.getvalue()


def run_visitors(visitors: list[Visitor], seconds: float) -> float:
    """Drive every visitor in its own thread for ``seconds`` (each finishes its current page); wall time."""
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=v.drive, args=(deadline,), name=f"visitor-{v.index}") for v in visitors]
    t0 = time.monotonic()
    with concurrent_apptest():
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return time.monotonic() - t0


def _stands_in(page) -> bool:
    """Whether ``page`` opens on a checkpoint its default tab applies to (``deferred_picker(needs=...)``: the tanh
    RNN of the Exploding-and-vanishing bench) rather than the visitor's model, saying so in its sidebar."""
    import re

    from tests.conftest import ROOT

    return re.search(r"deferred_picker\([^)]*needs=", (ROOT / "pages" / page.path).read_text()) is not None
