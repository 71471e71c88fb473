"""Project hidden states h_t to 2-D/3-D with a projection fitted once on a reference sample.

Also here: the padding/mask study and the exports (CSV, TensorBoard projector TSV files).
A projection is fitted on the states a model produces while reading a fixed reference
sample (held-out validation text when the data folder exists, else the passage shipped
beside this file) and kept, so every new text lands in the same space.

* PCA (default): top principal axes of the centred reference states in float64
  (eigenvectors of Xc^T Xc = the SVD axes of Xc); new points ``(h - mean) @ components.T``.
  Each axis's largest loading is made positive, so figures stay stable between fits.
* t-SNE (van der Maaten & Hinton 2008; ``seqviz.introspect.wordmap.tsne``) has no ``transform``: it embeds only
  the points it was fitted on. A new state is *placed* at the inverse-distance-weighted
  mean of the map coordinates of its k nearest reference states (Euclidean, in h-space):
  it lands among the reference points it resembles, never outside their hull.
* UMAP is not offered: ``umap-learn`` needs numba/llvmlite, not a light dependency.

A fitted projection serialises to safetensors plus a JSON header (no pickle).
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save

from seqviz.data.corpus import SHAKESPEARE, SHAKESPEARE_VALIDATION
from seqviz.data.tokenizers import PAD

if TYPE_CHECKING:
    import torch

METHODS = {"pca": "PCA", "tsne": "t-SNE"}
REFERENCE_FILE = Path(__file__).with_name("reference_sample.txt")
TSNE_MAX_POINTS = 800  # t-SNE is O(N log N) per iteration; more points cost seconds, not insight
KNN = 8  # neighbours used to place a new state in a t-SNE map


@dataclass
class Projection:
    """A fitted map from h-space [H] to ``dims`` coordinates, kept and reused."""

    method: str  # "pca" or "tsne"
    dims: int  # 2 or 3
    mean: np.ndarray  # [H] centre of the reference states
    components: np.ndarray  # pca: [dims, H] orthonormal rows; tsne: [0, H]
    explained: np.ndarray  # pca: fraction of reference variance per axis; tsne: []
    ref_states: np.ndarray  # tsne: [N, H] reference states (for placement); pca: [0, H]
    ref_points: np.ndarray  # [N, dims] the reference sample in the projected space
    info: dict = field(default_factory=dict)  # provenance: checkpoint, layer, sample ...

    @property
    def axis_names(self) -> list[str]:
        prefix = "PC" if self.method == "pca" else "t-SNE "
        return [f"{prefix}{i + 1}" for i in range(self.dims)]

    def describe(self) -> str:
        """One sentence on how this space was made, for a caption."""
        if self.method == "pca":
            parts = ", ".join(f"PC{i + 1} {100 * v:.1f} %" for i, v in enumerate(self.explained))
            return f"{parts} of the reference variance (together {100 * sum(self.explained):.1f} %)"
        return (f"t-SNE of {self.info.get('n_reference', len(self.ref_points)):,} reference states "
                f"(perplexity {self.info.get('perplexity', 30):g}); a new state is placed at the weighted "
                f"mean of its {KNN} nearest reference states")

    def transform(self, states) -> np.ndarray:
        """[N, H] states -> [N, dims] coordinates in this fitted space."""
        x = _as_2d(states, self.mean.shape[0])
        if self.method == "pca":
            return (x - self.mean) @ self.components.T
        return _knn_place(x, self.ref_states, self.ref_points)

    # ------------------------------------------------------------- serialisation
    def to_bytes(self) -> bytes:
        arrays = {k: np.ascontiguousarray(getattr(self, k), dtype=np.float32)
                  for k in ("mean", "components", "explained", "ref_states", "ref_points")}
        header = {"method": self.method, "dims": str(self.dims), "info": json.dumps(self.info)}
        return st_save(arrays, metadata=header)

    @classmethod
    def from_bytes(cls, data: bytes) -> "Projection":
        arrays = st_load(data)
        # safetensors layout: u64 header length, then a JSON header whose "__metadata__" we wrote
        header = json.loads(data[8: 8 + int.from_bytes(data[:8], "little")]).get("__metadata__", {})
        if header.get("method") not in METHODS:
            raise ValueError(f"not a seqviz projection (method {header.get('method')!r})")
        return cls(header["method"], int(header["dims"]), info=json.loads(header.get("info", "{}")),
                   **{k: arrays[k].astype(np.float64) for k in
                      ("mean", "components", "explained", "ref_states", "ref_points")})

    def save(self, path) -> Path:
        path = Path(path)
        path.write_bytes(self.to_bytes())
        return path


def load_projection(path) -> Projection:
    return Projection.from_bytes(Path(path).read_bytes())


def _as_2d(states, width: int) -> np.ndarray:
    x = np.asarray(states.numpy() if hasattr(states, "numpy") and not isinstance(states, np.ndarray) else states)
    x = x.astype(np.float64).reshape(-1, x.shape[-1])
    if x.shape[1] != width:
        raise ValueError(f"states have {x.shape[1]} units but the projection was fitted on {width}")
    return x


def _knn_place(x: np.ndarray, ref_states: np.ndarray, ref_points: np.ndarray) -> np.ndarray:
    """Inverse-distance-weighted mean of the k nearest reference points' map coordinates."""
    k = min(KNN, len(ref_states))
    out = np.empty((len(x), ref_points.shape[1]))
    ref_sq = (ref_states ** 2).sum(1)
    for s in range(0, len(x), 2048):  # bounded memory: 2048 x N distances at a time
        q = x[s: s + 2048]
        d2 = np.maximum((q ** 2).sum(1)[:, None] - 2 * q @ ref_states.T + ref_sq[None], 0.0)
        nn_idx = np.argpartition(d2, k - 1, axis=1)[:, :k]
        d = np.sqrt(np.take_along_axis(d2, nn_idx, axis=1))
        w = 1.0 / np.maximum(d, 1e-9)  # an exact match gets (almost) all the weight
        w /= w.sum(1, keepdims=True)
        out[s: s + 2048] = np.einsum("nk,nkd->nd", w, ref_points[nn_idx])
    return out


# ------------------------------------------------------------------ fitting
def fit_projection(states, method: str = "pca", dims: int = 2, seed: int = 0,
                   perplexity: float = 30.0, info: dict | None = None) -> Projection:
    """Fit PCA or t-SNE on reference states [N, H]."""
    import torch

    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if dims not in (2, 3):
        raise ValueError(f"dims must be 2 or 3, got {dims}")
    x = _as_2d(states, np.asarray(states).shape[-1])
    if len(x) <= dims:
        raise ValueError(f"need more than {dims} reference states to fit, got {len(x)}")
    mean = x.mean(0)
    info = dict(info or {}, n_reference=len(x))
    if method == "pca":
        # Principal axes = top eigenvectors of the scatter matrix Xc^T Xc ([H, H], float64):
        # the same axes as the SVD of Xc, at a fraction of its cost for N >> H.
        xc = torch.from_numpy(x - mean)
        evals, evecs = torch.linalg.eigh(xc.T @ xc)  # ascending
        comps = evecs.flip(1)[:, :dims].T.numpy()
        # sign convention: the largest-|loading| entry of each axis is positive
        signs = np.sign(comps[np.arange(dims), np.abs(comps).argmax(1)])
        comps = comps * signs[:, None]
        var = np.clip(evals.flip(0).numpy(), 0, None)
        explained = var[:dims] / var.sum() if var.sum() > 0 else np.zeros(dims)
        return Projection("pca", dims, mean, comps, explained, np.zeros((0, x.shape[1])),
                          (x - mean) @ comps.T, info)
    from seqviz.introspect.wordmap import tsne

    rng = np.random.default_rng(seed)
    if len(x) > TSNE_MAX_POINTS:  # a fixed, seeded subsample keeps the fit within seconds
        x = x[np.sort(rng.choice(len(x), TSNE_MAX_POINTS, replace=False))]
        info["n_reference"] = len(x)
    perp = float(min(perplexity, (len(x) - 1) / 3))
    # The word map's t-SNE (exact gradient in numpy, one BLAS thread: on a shared, busy CPU more
    # threads made a fit 20-40x slower, measured), float64 coordinates for placement.
    pts = tsne(x, perp, seed, dims).astype(np.float64)
    info["perplexity"] = perp
    return Projection("tsne", dims, mean, np.zeros((0, x.shape[1])), np.zeros(0), x, pts, info)


# ------------------------------------------------------------------ reference sample
PASSAGE = "the original sample passage shipped with seqviz (no corpus folder found)"
_passage_only = [False]


@contextmanager
def passage_only():
    """Read the reference text as a fresh clone does (the shipped passage, whatever corpus is fetched):
    how ``seqviz precompute`` computes the views a checkpoint ships, and how tests check them."""
    _passage_only.append(True)
    try:
        yield
    finally:
        _passage_only.pop()


class reading_reference:
    """``with reading_reference() as read``: ``read`` is non-empty once the block asked where the reference text
    comes from (``reference_source``, which every reader of the corpus or its sample calls): shipped views
    record it, so that fetching the corpus recomputes only the views that read it."""

    def __enter__(self):
        self.real, self.read = globals()["reference_source"], []

        def source() -> str:
            self.read.append(True)
            return self.real()

        globals()["reference_source"] = source
        return self.read

    def __exit__(self, *exc):
        globals()["reference_source"] = self.real


def reference_source() -> str:
    """Where ``corpus_text()`` reads from now (a few stat calls, no reading): shipped views record it."""
    files = [SHAKESPEARE / f for f in SHAKESPEARE_VALIDATION]
    if not _passage_only[-1] and all(f.is_file() for f in files):
        return f"held-out validation plays ({', '.join(f.stem for f in files)})"
    return PASSAGE


def corpus_text() -> tuple[str, str]:
    """The held-out Shakespeare validation plays when the data folder exists, else the shipped passage.

    Returns (text, where it came from). Never the training text: projections and searches
    should see what the model did not learn from.
    """
    source = reference_source()
    if source == PASSAGE:
        return REFERENCE_FILE.read_text(encoding="utf-8"), source
    return "\n".join((SHAKESPEARE / f).read_text(encoding="utf-8") for f in SHAKESPEARE_VALIDATION), source


def reference_texts(n: int = 8, length: int = 400) -> tuple[list[str], str]:
    """``n`` chunks of ``length`` characters from ``corpus_text()``, spread evenly, each from a line start
    (fewer when the text is shorter than ``n * length``: the shipped passage is read once, not overlapped)."""
    text, source = corpus_text()
    n = max(1, min(n, len(text) // length))
    chunks = []
    for i in range(n):
        start = (len(text) - length) * i // max(n - 1, 1)
        nl = text.find("\n", start, start + length // 2)
        start = nl + 1 if nl >= 0 and nl + 1 + length <= len(text) else start
        chunks.append(text[start: start + length])
    return chunks, f"{n} chunks x {length} characters from {source}"


def valid_states(trace, layer: int) -> np.ndarray:
    """All valid positions' h of one layer, stacked: [sum of lengths, H]."""
    h, mask = trace[f"layers.{layer}.h"], trace["mask"]
    return h[mask].double().numpy()


# ------------------------------------------------------------------ trajectories
def trajectory_frame(trace, projection: Projection, layer: int, labels=None) -> pd.DataFrame:
    """One row per valid token: text, step, token, projected coordinates, ||h_t||, loss.

    ``loss`` is the next-token loss at step t (nats), NaN at each text's last token.
    """
    h, mask, loss = trace[f"layers.{layer}.h"], trace["mask"], trace["loss"]
    pieces = trace.token_strings or [[str(int(i)) for i in row] for row in trace["tokens"]]
    labels = labels or [f"text {b + 1}" for b in range(h.shape[0])]
    frames = []
    for b in range(h.shape[0]):
        n = int(mask[b].sum())
        states = h[b, :n].double().numpy()
        pts = projection.transform(states)
        frame = pd.DataFrame({"text": labels[b], "step": np.arange(n), "token": pieces[b][:n]})
        for j, name in enumerate("xyz"[: projection.dims]):
            frame[name] = pts[:, j]
        frame["norm"] = np.linalg.norm(states, axis=1)
        frame["loss"] = np.append(loss[b, : max(n - 1, 0)].double().numpy(), np.nan)[:n]  # the last predicts nothing
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def pick_texts(frame: pd.DataFrame, text: str | None = None) -> pd.DataFrame:
    """The rows of one text of a trajectory frame (``text`` None or absent: every text), index reset."""
    if text is None or text not in set(frame["text"]):
        return frame
    return frame[frame["text"] == text].reset_index(drop=True)


def points_csv(frame: pd.DataFrame) -> str:
    """The projected points as CSV text (for a download button)."""
    return frame.to_csv(index=False)


# ------------------------------------------------------------------ padding and masks (station S1)
# Texts of different lengths are right-padded into one [B, T] batch. A recurrent layer keeps
# updating its state on the pad tokens, so "the final hidden state" depends on where it is
# read: at position T-1 of the padded batch (mask ignored) or at each row's last valid
# position length-1 (mask respected). With right padding and a causal model the respected
# state equals the state of the text read alone; the ignored one has also read T - length
# pad tokens. Likewise a loss averaged over every position scores predictions of <pad>.

@dataclass
class MaskStudy:
    """Final states of a padded batch, read with and without the mask, per text."""

    table: pd.DataFrame  # one row per text: length, pads, distance, cosine, norms, losses
    respected: np.ndarray  # [B, H] h at each row's last valid position
    ignored: np.ndarray  # [B, H] h at position T-1 of the padded batch
    grid: pd.DataFrame  # one row per (text, position): token, is_pad: the padded batch's layout


def mask_study(trace, layer: int) -> MaskStudy:
    """Compare the two readings of the final state in the trace of a right-padded batch.

    ``trace``: ``model.trace([text, text, ...])`` (texts of different lengths, padded).
    """
    import torch

    h, mask, tokens = trace[f"layers.{layer}.h"], trace["mask"], trace["tokens"]
    if len(tokens) < 2:
        raise ValueError("the padding study needs at least two texts")
    lengths = mask.sum(1)
    width = tokens.shape[1]
    rows = torch.arange(len(tokens))
    respected = h[rows, lengths - 1].double()
    ignored = h[:, width - 1].double()
    dist = (respected - ignored).norm(dim=1)
    cos = torch.nn.functional.cosine_similarity(respected, ignored, dim=1)
    loss_masked, loss_all = _losses(trace["logits"], tokens, mask)
    pieces = trace.token_strings or [[str(int(i)) for i in row] for row in tokens]
    table = pd.DataFrame({
        "text": [f"text {b + 1}" for b in range(len(tokens))],
        "length": lengths.numpy(),
        "pads": (width - lengths).numpy(),
        "distance": dist.numpy(),
        "cosine": cos.numpy(),
        "norm_respected": respected.norm(dim=1).numpy(),
        "norm_ignored": ignored.norm(dim=1).numpy(),
        "loss_masked": loss_masked,
        "loss_pads_counted": loss_all,
    })
    grid = pd.DataFrame([
        {"text": f"text {b + 1}", "step": t, "is_pad": not bool(mask[b, t]),
         "token": pieces[b][t] if bool(mask[b, t]) else PAD}
        for b in range(len(tokens)) for t in range(width)
    ])
    return MaskStudy(table, respected.numpy(), ignored.numpy(), grid)


def _losses(logits: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor):
    """Per-row mean next-token loss (nats): valid predictions only vs every position.

    "Every position" is what an unmasked ``cross_entropy`` over the padded batch computes:
    it also scores predicting ``<pad>`` after the text and after each pad.
    """
    import torch

    if tokens.shape[1] < 2:
        nan = np.full(tokens.shape[0], np.nan)
        return nan, nan
    logp = torch.log_softmax(logits[:, :-1].double(), dim=-1)
    nll = -logp.gather(-1, tokens[:, 1:, None]).squeeze(-1)  # [B, T-1]
    valid = (mask[:, 1:] & mask[:, :-1]).double()
    masked = ((nll * valid).sum(1) / valid.sum(1)).numpy()  # NaN for a one-token text
    return masked, nll.mean(1).numpy()

# ------------------------------------------------------------------ TensorBoard projector files
# The projector (projector.tensorflow.org, TensorBoard's Projector tab) reads two TSV files:
# vectors one per line, tab-separated, no header; metadata one line per vector, with a
# header line only when there is more than one column. Tabs and newlines inside a value
# would break the format, so they are written as the escapes \t and \n (and \ as \\).
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def _escape(value) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in str(value))


def _unescape(value: str) -> str:
    out, it = [], iter(value)
    for ch in it:
        out.append(_UNESCAPES.get(next(it, ""), "") if ch == "\\" else ch)
    return "".join(out)


def projector_tsv(vectors, metadata: pd.DataFrame) -> tuple[str, str]:
    """(tensors.tsv, metadata.tsv) text for TensorBoard's embedding projector."""
    x = np.asarray(vectors, dtype=np.float64).reshape(len(metadata), -1)
    return tensors_tsv(x), metadata_tsv(metadata)


def tensors_tsv(vectors) -> str:
    """One vector per line, tab-separated, no header."""
    return "".join("\t".join(f"{v:.6g}" for v in row) + "\n" for row in np.asarray(vectors, dtype=np.float64))


def metadata_tsv(metadata: pd.DataFrame) -> str:
    """One line per vector; a header line only when there are several columns."""
    cols = list(metadata.columns)
    lines = ["\t".join(_escape(c) for c in cols)] if len(cols) > 1 else []
    lines += ["\t".join(_escape(v) for v in row) for row in metadata.itertuples(index=False)]
    return "".join(line + "\n" for line in lines)


def read_projector_tsv(tensors: str, metadata: str) -> tuple[np.ndarray, pd.DataFrame]:
    """Parse the two projector files back (the inverse of ``projector_tsv``; metadata as text)."""
    rows = [line.split("\t") for line in tensors.splitlines() if line]
    x = np.array(rows, dtype=np.float64)
    lines = [[_unescape(v) for v in line.split("\t")] for line in metadata.split("\n")[:-1]]
    if len(lines) == len(x) + 1:  # a header line: several columns
        return x, pd.DataFrame(lines[1:], columns=lines[0])
    if len(lines) != len(x):
        raise ValueError(f"metadata has {len(lines)} lines for {len(x)} vectors")
    return x, pd.DataFrame({"label": [line[0] for line in lines]})
