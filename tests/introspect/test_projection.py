"""Projections, the padding/mask study and the exports, each checked against an independent reference."""

from __future__ import annotations

import string

import numpy as np
import pytest
import torch

from seqviz.registry import load
from seqviz.config import LMConfig
from seqviz.data.tokenizers import Tokenizer
from seqviz.introspect import projection as P
from seqviz.models.recurrent import RecurrentLM

ALPHABET = string.ascii_letters + " \n.,;:'!?-[]()\t\\"


def tiny(cell: str, seed: int = 0, d_hidden: int = 10) -> RecurrentLM:
    torch.manual_seed(seed)
    tok = Tokenizer.train("char", ALPHABET)
    return RecurrentLM(LMConfig(cell=cell, n_layers=2, d_embed=6, d_hidden=d_hidden,
                                vocab_size=len(tok)), tok).eval().requires_grad_(False)


def match_up_to_sign(a: np.ndarray, b: np.ndarray, atol=1e-8) -> None:
    """Columns of a equal columns of b, each possibly negated."""
    for j in range(a.shape[1]):
        sign = np.sign(a[:, j] @ b[:, j]) or 1.0
        np.testing.assert_allclose(a[:, j], sign * b[:, j], atol=atol)


def test_pca_equals_numpy_svd():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(200, 12)) @ rng.normal(size=(12, 12))  # correlated states
    new = rng.normal(size=(30, 12))
    proj = P.fit_projection(ref, "pca", dims=3)
    centred = ref - ref.mean(0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    match_up_to_sign(proj.transform(new), (new - ref.mean(0)) @ vt[:3].T)
    match_up_to_sign(proj.ref_points, centred @ vt[:3].T)
    np.testing.assert_allclose(proj.explained, s[:3] ** 2 / (s ** 2).sum(), rtol=1e-10)
    # the sign convention: each axis's largest-|loading| entry is positive
    assert all(c[np.abs(c).argmax()] > 0 for c in proj.components)
    e = 100 * s[:3] ** 2 / (s ** 2).sum()
    assert proj.describe() == (f"PC1 {e[0]:.1f} %, PC2 {e[1]:.1f} %, PC3 {e[2]:.1f} % of the reference "
                               f"variance (together {e.sum():.1f} %)")


def test_trajectory_frame_matches_the_trace():
    model = tiny("lstm")
    ref_trace = model.trace(["Hello there, friend.\nAnd more text here.", "Another line of it."])
    proj = P.fit_projection(P.valid_states(ref_trace, 1), "pca", 2)
    trace = model.trace(["Some words.", "Hi"])
    frame = P.trajectory_frame(trace, proj, layer=1, labels=["a", "b"])
    assert list(frame["text"]) == ["a"] * 11 + ["b"] * 2
    h = trace["layers.1.h"]
    states = torch.cat([h[0, :11], h[1, :2]]).double().numpy()
    np.testing.assert_allclose(frame[["x", "y"]].to_numpy(), (states - proj.mean) @ proj.components.T, atol=1e-10)
    np.testing.assert_allclose(frame["norm"], np.sqrt((states ** 2).sum(1)), rtol=1e-10)
    loss = trace["loss"]
    nan = torch.tensor([float("nan")])
    np.testing.assert_allclose(frame["loss"], torch.cat([loss[0, :10], nan, loss[1, :1], nan]).double().numpy())
    assert frame["loss"].isna().sum() == 2  # each text's last token has no next token
    assert list(frame["token"][:4]) == list("Some")


def test_tsne_places_new_points_among_reference_neighbours():
    rng = np.random.default_rng(1)
    ref = np.concatenate([rng.normal(0, 0.1, (40, 6)), rng.normal(3, 0.1, (40, 6))])
    proj = P.fit_projection(ref, "tsne", dims=2, perplexity=10)
    assert proj.ref_points.shape == (80, 2) and proj.info["n_reference"] == 80
    assert proj.describe().startswith("t-SNE of 80 reference states (perplexity 10)")
    # a reference state lands (almost) exactly on its own map point
    np.testing.assert_allclose(proj.transform(ref[:5]), proj.ref_points[:5], atol=1e-5)
    # a new state near cluster B lands at the weighted mean of its 8 nearest neighbours (all in B)
    q = np.full((1, 6), 3.0)
    d = np.linalg.norm(ref - q, axis=1)
    nn = np.argsort(d)[:8]
    w = 1 / d[nn]
    np.testing.assert_allclose(proj.transform(q)[0], (w[:, None] * proj.ref_points[nn]).sum(0) / w.sum(), rtol=1e-8)
    assert (nn >= 40).all()


def test_projection_round_trips_through_bytes_and_files(tmp_path):
    rng = np.random.default_rng(2)
    ref = rng.normal(size=(50, 8))
    for method in ("pca", "tsne"):
        proj = P.fit_projection(ref, method, dims=2, perplexity=5, info={"layer": 1, "checkpoint": "x"})
        again = P.load_projection(proj.save(tmp_path / f"{method}.safetensors"))
        assert again.method == method and again.dims == 2 and again.info["layer"] == 1
        new = rng.normal(size=(7, 8))
        np.testing.assert_allclose(again.transform(new), proj.transform(new), atol=1e-4)
    with pytest.raises(ValueError, match="units"):
        proj.transform(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="method"):
        P.fit_projection(ref, "umap")
    with pytest.raises(ValueError, match="dims"):
        P.fit_projection(ref, "pca", dims=4)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_mask_respected_equals_the_text_alone(cell, tmp_path):
    model = load(tiny(cell, seed=3).save_pretrained(tmp_path / cell, {}))
    texts = ["A long line of text, padded by nobody.", "Short one.", "Mid-sized text here."]
    study = P.mask_study(model.trace(texts), layer=1)
    longest = int(np.argmax([len(t) for t in texts]))
    for b, text in enumerate(texts):
        alone = model.trace(text)
        np.testing.assert_allclose(study.respected[b], alone["layers.1.h"][0, -1].double().numpy(), atol=1e-6)
        np.testing.assert_allclose(study.table["loss_masked"][b], np.nanmean(alone["loss"][0].numpy()), rtol=1e-5)
        if b == longest:
            np.testing.assert_allclose(study.ignored[b], study.respected[b])
            assert study.table["distance"][b] == 0 and study.table["pads"][b] == 0
        else:
            assert np.linalg.norm(study.ignored[b] - study.respected[b]) > 1e-4
    np.testing.assert_allclose(study.table["distance"], np.linalg.norm(study.respected - study.ignored, axis=1))
    assert list(study.table["length"]) == [len(t) for t in texts]
    grid = study.grid[study.grid["text"] == "text 2"]
    assert grid["is_pad"].sum() == len(texts[0]) - len(texts[1])
    assert list(grid["token"][:5]) == list("Short") and set(grid[grid["is_pad"]]["token"]) == {"<pad>"}
    with pytest.raises(ValueError, match="two texts"):
        P.mask_study(model.trace(["only one"]), 1)


def test_projector_tsv_round_trip():
    vectors = np.random.default_rng(3).normal(size=(5, 4))
    import pandas as pd

    meta = pd.DataFrame({"token": ["a", "\n", "\t", "\\", " "], "step": ["0", "1", "2", "3", "4"],
                         "text": ["x", "x", "y", "y", "z"]})
    tensors, metadata = P.projector_tsv(vectors, meta)
    assert metadata.splitlines()[0] == "token\tstep\ttext"  # several columns: a header line
    assert len(tensors.splitlines()) == 5 and all(len(r.split("\t")) == 4 for r in tensors.splitlines())
    x, back = P.read_projector_tsv(tensors, metadata)
    np.testing.assert_allclose(x, vectors, rtol=1e-5)
    assert back.equals(meta)
    single = pd.DataFrame({"token": ["a", "\n"]})
    _, metadata1 = P.projector_tsv(vectors[:2], single)
    assert metadata1 == "a\n\\n\n"  # one column: no header line
    assert list(P.read_projector_tsv("".join(tensors.splitlines(True)[:2]), metadata1)[1]["label"]) == ["a", "\n"]


def test_reference_texts_fall_back_to_the_shipped_passage(monkeypatch, tmp_path):
    monkeypatch.setattr(P, "SHAKESPEARE", tmp_path / "absent")
    chunks, source = P.reference_texts(n=5, length=300)
    assert len(chunks) == 5 and all(len(c) == 300 for c in chunks)
    assert "shipped" in source
    passage = P.REFERENCE_FILE.read_text(encoding="utf-8")
    assert all(c in passage for c in chunks) and len(set(chunks)) == 5


def test_points_csv_has_every_point():
    import io

    import pandas as pd

    frame = pd.DataFrame({"text": ["a", "a"], "step": [0, 1], "token": [",", "\n"], "x": [0.5, 1.5], "y": [2.0, 3.0]})
    back = pd.read_csv(io.StringIO(P.points_csv(frame)), keep_default_na=False)
    assert list(back["token"]) == [",", "\n"] and list(back["x"]) == [0.5, 1.5]
