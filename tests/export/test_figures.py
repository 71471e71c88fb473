"""`python -m seqviz figure PAGE`: each page's main chart from a shipped checkpoint, without the app."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from seqviz import figures
from seqviz.views import registry

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINTS = ROOT / "checkpoints"
REQUIRED = {"language_model", "trajectories", "gates", "gradient_flow", "word2vec", "attention", "exposure_bias"}


def size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def smallest(model_type: str, need=lambda p: True) -> Path:
    """The smallest shipped checkpoint folder of a type (the fastest to load)."""
    from seqviz.registry import model_type_of

    found = [p for p in sorted(CHECKPOINTS.iterdir()) if (p / "config.json").is_file()
             and model_type_of(p) == model_type and need(p)]
    assert found, f"no shipped {model_type} checkpoint under {CHECKPOINTS}"
    return min(found, key=size)


def attention_model(p: Path) -> bool:
    import json

    config = json.loads((p / "config.json").read_text())
    card = json.loads((p / "card.json").read_text())
    return bool(config.get("attention")) and card.get("task") == "zh-en" and (p / "heldout.json").is_file()


def test_registry_covers_the_pages():
    assert REQUIRED <= set(registry.figures())
    assert all(d.model for d in registry.figures().values())
    pages = {p.stem for p in (ROOT / "pages").glob("*.py")}
    assert set(registry.figures()) <= pages  # named as the pages are


@pytest.mark.parametrize("page", sorted(registry.figures()))
def test_figure_writes_each_page(page, tmp_path, capsys):
    kind = registry.figures()[page].model
    checkpoint = smallest(kind, attention_model if kind == "seq2seq" else lambda p: True)
    fmt = {"gates": "png", "word2vec": "html"}.get(page, "svg")
    out = tmp_path / f"{page}.{fmt}"
    fast = ["--option", "tokens=30"] if page == "gradient_flow" else []  # G costs T^2: the page's 100 take seconds
    argv = [page, "--checkpoint", str(checkpoint), "--out", str(out), *fast]
    assert figures.main(argv) == 0, capsys.readouterr().err
    assert f"wrote {out}" in capsys.readouterr().out
    if fmt == "svg":
        root = ET.parse(out).getroot()
        words = " ".join("".join(t.itertext()) for t in root.iter() if t.tag.endswith("}text"))
        assert f"model: {checkpoint.name}" in words  # the footnote names the state
    elif fmt == "png":
        data = out.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and min(struct.unpack(">II", data[16:24])) > 100
    else:
        page_html = out.read_text(encoding="utf-8")
        assert "vegaEmbed" in page_html and "Model card" in page_html and checkpoint.name in page_html


def test_figure_refusals_are_one_line(tmp_path, capsys):
    lm, w2v = smallest("recurrent_lm"), smallest("word2vec")
    cases = [(["word2vec", "--checkpoint", str(lm)], "needs a word2vec checkpoint"),
             (["language_model", "--checkpoint", str(lm), "--option", "colour=red"], "takes the options"),
             (["language_model", "--checkpoint", str(lm), "--option", "unit"], "KEY=VALUE"),
             (["word2vec", "--checkpoint", str(w2v), "--out", str(tmp_path / "x.pdf")], "must end in"),
             (["exposure_bias", "--checkpoint", str(smallest("seq2seq", attention_model)), "--text", "我"],
              "needs the reference")]
    for argv, message in cases:
        argv = argv if "--out" in argv else argv + ["--out", str(tmp_path / "x.svg")]
        assert figures.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "x.svg").exists()
