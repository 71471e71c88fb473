"""appkit.cache.cached: a cache miss shows its spinner in the visitor's language, the text is not part
of the cache key, a nested call shows none, nor one on the background worker, and ``_``-named arguments stay
out of the key."""

from __future__ import annotations

import contextlib

import streamlit as st

from appkit import cache as models
from seqviz import refs


@contextlib.contextmanager
def recording(monkeypatch, language: dict):
    shown = []

    @contextlib.contextmanager
    def spinner(text, *args, **kwargs):
        shown.append(text)
        yield

    monkeypatch.setattr(st, "spinner", spinner)
    monkeypatch.setattr(models, "_", lambda msgid: language.get(msgid, msgid))
    monkeypatch.setattr(models, "get_script_run_ctx", lambda **kwargs: object())  # as in a page's run
    yield shown


def test_a_miss_spins_in_the_visitors_language_and_the_text_is_not_in_the_key(monkeypatch):
    calls = []

    @models.cached(st.cache_data, "Loading checkpoint...", max_entries=4)
    def double(x):
        calls.append(x)
        return 2 * x

    language = {}
    with recording(monkeypatch, language) as shown:
        assert double(3) == 6 and shown == ["Loading checkpoint..."]
        language["Loading checkpoint..."] = "正在加载检查点……"
        assert double(3) == 6 and calls == [3] and len(shown) == 1  # a hit in another language: no rerun
        assert double(4) == 8 and shown[-1] == "正在加载检查点……" and calls == [3, 4]


def test_a_nested_call_shows_no_spinner_of_its_own(monkeypatch):
    @models.cached(st.cache_resource, "inner", max_entries=4)
    def inner(x):
        return x + 1

    @models.cached(st.cache_data, "outer", max_entries=4)
    def outer(x):
        return inner(x) * 10

    with recording(monkeypatch, {}) as shown:
        assert outer(1) == 20
        assert shown == ["outer"]  # as Streamlit's own spinners: only the outermost miss shows one
        assert inner(5) == 6 and shown == ["outer", "inner"]


def test_the_background_worker_shows_no_spinner(monkeypatch):
    """A task of seqviz.background (no page run, no script context) loads through the same cache, silently."""
    @models.cached(st.cache_resource, "Loading checkpoint...", max_entries=4)
    def load(x):
        return -x

    with recording(monkeypatch, {}) as shown:
        assert load(1) == -1 and shown == ["Loading checkpoint..."]  # in a page's run
        monkeypatch.setattr(models, "get_script_run_ctx", lambda **kwargs: None)  # on the worker
        assert load(2) == -2 and shown == ["Loading checkpoint..."]


def test_underscore_arguments_stay_out_of_the_key(monkeypatch):
    class Unhashable:
        __hash__ = None

        def __reduce__(self):
            raise TypeError("not picklable either")

    calls = []

    @models.cached(st.cache_data, "words", max_entries=4)
    def size(ref: str, _vectors, n: int):
        calls.append((ref, n))
        return n

    with recording(monkeypatch, {}):
        assert size("a", Unhashable(), 2) == 2 and size("a", Unhashable(), 2) == 2
        assert size("a", Unhashable(), n=3) == 3
    assert calls == [("a", 2), ("a", 3)]


def test_a_spec_with_many_rows_is_drawn_on_a_canvas_unless_it_names_a_renderer():
    from seqviz.views.spec import CANVAS_ROWS, on_canvas

    many = {"mark": "point", "datasets": {"a": [{"x": i} for i in range(CANVAS_ROWS // 2 + 1)],
                                          "b": [{"x": i} for i in range(CANVAS_ROWS // 2 + 1)]}}
    assert on_canvas(dict(many))["usermeta"] == {"embedOptions": {"renderer": "canvas"}}
    # On a canvas the per-mark ARIA descriptions (SVG-only) are left out; the spec's own config is kept.
    assert on_canvas({**many, "config": {"font": "f"}})["config"] == {"font": "f", "aria": False}
    few = {"mark": "point", "datasets": {"a": [{"x": i} for i in range(CANVAS_ROWS)]}}
    assert "usermeta" not in on_canvas(dict(few)) and "config" not in on_canvas(dict(few))
    named = {**many, "usermeta": {"embedOptions": {"renderer": "svg", "actions": False}, "note": 1}}
    assert on_canvas(dict(named))["usermeta"] == {"embedOptions": {"renderer": "svg", "actions": False}, "note": 1}
    assert "config" not in on_canvas(dict(named))  # drawn as SVG: its descriptions stay
    kept = on_canvas({**many, "usermeta": {"note": 1}})["usermeta"]
    assert kept == {"note": 1, "embedOptions": {"renderer": "canvas"}}


def test_show_sends_what_streamlit_would_and_converts_each_dataset_once(monkeypatch):
    """``appkit.draw.show`` hands Streamlit the datasets already in Arrow form: the chart's message is the same
    byte for byte as ``st.vega_lite_chart``'s own, and a second draw converts nothing."""
    from streamlit.testing.v1 import AppTest

    def script():
        import altair as alt
        import pandas as pd
        import streamlit as st

        from appkit import draw as cm

        frame = pd.DataFrame({"x": [1.5, 2.0, None], "y": [3, 4, 5], "token": ["a", "ß", "\n"]})
        spec = alt.Chart(frame).mark_point().encode(x="x:Q", y="y:Q", tooltip="token:N").to_dict()
        before = {k: list(v) for k, v in spec["datasets"].items()}
        st.vega_lite_chart(spec, width="stretch")
        cm.show(st, spec, width="stretch")
        st.session_state["unchanged"] = {k: list(v) for k, v in spec["datasets"].items()} == before

    at = AppTest.from_function(script, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    plain, shown = (c.proto for c in at.get("vega_lite_chart"))
    assert shown.spec == plain.spec and len(shown.datasets) == len(plain.datasets) == 1
    assert shown.datasets[0].name == plain.datasets[0].name
    assert shown.datasets[0].data.data == plain.datasets[0].data.data
    assert at.session_state["unchanged"]  # the caller's spec is left as it was

    from streamlit import dataframe_util

    from appkit import draw as cm

    calls = []
    original = dataframe_util.convert_anything_to_arrow_bytes
    monkeypatch.setattr(dataframe_util, "convert_anything_to_arrow_bytes",
                        lambda *args, **kwargs: calls.append(args) or original(*args, **kwargs))
    # kept under its content-hash name: the second draw of the same dataset converts nothing
    assert cm.arrow(plain.datasets[0].name, [{"x": 1}]) == shown.datasets[0].data.data and calls == []
    assert cm.arrow("my-own-name", [{"x": 1}]) is None  # a name that is not a content hash: not kept


def test_a_column_of_layered_plots_is_fitted_to_its_column(monkeypatch):
    """Issue 51: Streamlit pads a vconcat whose rows are layered (its guard against nested concatenations), so its
    axes ran past the column (the memory knockout bars: 1,014 px in 940); ``show`` asks Vega-Lite to fit it (fit-x),
    but not a vconcat of hconcats, nor a chart drawn at its own width."""
    import altair as alt
    import pandas as pd
    import streamlit as st

    from appkit import draw as cm
    from seqviz.views.spec import fits_by_rows

    base = alt.Chart(pd.DataFrame({"x": ["a", "b"], "y": [1, 2]})).encode(x="x:N", y="y:Q")
    layered = alt.vconcat(base.mark_bar() + base.mark_text(), base.mark_bar()).to_dict()
    nested = alt.vconcat(alt.hconcat(base.mark_bar(), base.mark_bar()), base.mark_bar()).to_dict()
    assert fits_by_rows(layered) and not fits_by_rows(nested) and not fits_by_rows(base.mark_bar().to_dict())
    sent = []
    monkeypatch.setattr(st, "vega_lite_chart", lambda spec, **kw: sent.append(spec))
    cm.show(st, layered, width="stretch")
    cm.show(st, layered, width="content")
    cm.show(st, nested, width="stretch")
    assert [s.get("autosize") for s in sent] == [{"type": "fit-x", "contains": "padding"}, None, None]
    assert "autosize" not in layered  # the caller's (cached) spec is left as it was


def test_a_shipped_ref_is_fingerprinted_again_only_when_a_file_changed(tmp_path, tiny_lm_dir, monkeypatch):
    """Shipped.ref() reads the folder's JSON files once; the same files give the same ref without reading
    them, a changed file (content, size or mtime) gives a new key, as ModelRef.of would."""
    import os
    import shutil

    folder = tmp_path / "lm"
    shutil.copytree(tiny_lm_dir / "tiny-lstm", folder)
    shipped = refs.Shipped("lm", str(folder.resolve()), "recurrent_lm")
    reads = []
    real = refs.content_key
    monkeypatch.setattr(refs, "content_key", lambda path: reads.append(path) or real(path))
    first = shipped.ref()
    assert shipped.ref() == first and len(reads) == 1
    card = folder / "card.json"
    card.write_text('{"name": "changed"}')
    os.utime(card, ns=(1, 1))  # even with an old mtime: the size changed
    second = shipped.ref()
    assert len(reads) == 2 and second.key != first.key and second.key == real(folder.resolve())
