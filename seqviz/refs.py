"""The handle a model is named by (``ModelRef``: path + content key, what caches key on), what its folder says
without torch (``Info``), and the folders of shipped checkpoints."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from seqviz import installed
from seqviz.text import N_, _

SOURCES = ("Shipped", "Local folder", "Upload", "Hub")  # where a visitor's model comes from (``ModelRef.source``)
# The sources' labels (the stored values stay English): on the app's radio, and in its "Using" caption.
SOURCE_LABELS = {"Shipped": N_("Shipped"), "Local folder": N_("Local folder"), "Upload": N_("Upload"), "Hub": N_("Hub")}
SOURCE_NAMES = {"Shipped": N_("shipped"), "Local folder": N_("local folder"), "Upload": N_("upload"), "Hub": N_("hub")}
CLASSIC = ("rnn", "gru", "lstm")  # checkpoint-name endings a comparison's "RNN vs GRU vs LSTM" title names


def offered_sources() -> list[str]:
    """The sources this server allows: no typed paths with SEQVIZ_LOCAL_PATHS=0, no Hub with SEQVIZ_HUB=0."""
    from seqviz.files import local_paths_enabled  # torch-free: the picker is drawn before any model loads
    from seqviz.hub import hub_enabled

    off = {"Local folder"} if not local_paths_enabled() else set()
    return [s for s in SOURCES if s not in off and (s != "Hub" or hub_enabled())]


def checkpoint_roots() -> list[Path]:
    """Folders holding shipped checkpoints: ``$SEQVIZ_CHECKPOINTS`` (os.pathsep list) or the dashboard's checkpoints/."""
    env = os.environ.get("SEQVIZ_CHECKPOINTS")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [(installed.dashboard() or installed.REPOSITORY) / "checkpoints"]


def content_key(path: Path) -> str:
    """Fingerprint of a checkpoint: JSON bytes + name, size and mtime of every file of the folder (or beside it)."""
    h = hashlib.sha1()
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else \
        [path, path.with_suffix(".json"), path.parent / "spec.json", path.parent / "vocab.json"]
    for f in files:
        if not f.is_file():
            continue
        stat = f.stat()
        h.update(f"{f.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
        if f.suffix == ".json" and stat.st_size < (1 << 20):
            h.update(f.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Choice:
    """What a visitor picked, before it is checked and opened (``ref`` names the model then)."""

    source: str  # one of SOURCES
    path: str  # what seqviz.load opens
    label: str  # shown to the visitor

    def ref(self, model_type: str, limit: int | None = None) -> "ModelRef":
        """``ModelRef.chosen`` of this choice for a page of ``model_type``; CheckpointError when it cannot be used."""
        return ModelRef.chosen(self.path, model_type, self.label, self.source, limit)

    def problem(self, model_type: str) -> str | None:
        """Why this choice cannot be opened on a page of ``model_type``, one sentence in the visitor's language
        (None: it can): a folder a link names is checked as a typed one (``appkit.folder_link``)."""
        from seqviz.files import CheckpointError, check_allowed, shown
        from seqviz.text import problem_text

        path = "`" + shown(self.path).replace("`", "'") + "`"  # the URL's text, never read as markdown
        try:
            check_allowed(self.path, checkpoint_roots())
        except CheckpointError:
            return _(NOT_ALLOWED).format(path=path)
        if not Path(self.path).expanduser().exists():
            return _(GONE).format(path=path)
        try:
            self.ref(model_type)
        except (CheckpointError, OSError, ValueError) as e:  # CheckpointError is a ValueError
            problem = problem_text(str(getattr(e, "problem", e)))
            return _(UNUSABLE).format(path=path, problem=problem.replace("`", "'"))
        return None


# What is wrong with a folder a link names, one full sentence each (the picker then shows the page's default model)
NOT_ALLOWED = N_("The link's folder {path} is not one this server may open, so the page shows its default model.")
GONE = N_("The link's folder {path} no longer exists on this server, so the page shows its default model.")
UNUSABLE = N_("The link's folder {path} could not be opened here ({problem}), so the page shows its default model.")


class _Unkeyed(Exception):
    """A compared model no shipped view can name (``ModelRef.shipped_choices``)."""


@dataclass(frozen=True)
class ModelRef:
    """What the picker hands a page: which model, in which state. Hashable, so caches key on it; re-training into
    the same folder changes ``key``, so a cache never serves the old weights."""

    path: str  # resolved folder or file that seqviz.load opens (an upload's file name for uploaded vectors)
    key: str  # content fingerprint (an upload's SHA-1): changed files make a new ref
    model_type: str  # the pages it opens on: "recurrent_lm", "seq2seq" or "word2vec"
    snapshot: int | None = None  # training step of snapshots/step-<n>.safetensors; None = final weights
    limit: int | None = None  # word vectors: read only the N most frequent words
    family: str = ""  # its row of seqviz.registry.FAMILIES ("state_dict", "transformers" ...)
    label: str = ""  # shown to the user
    source: str = "Shipped"  # which of SOURCES it came from

    @classmethod
    def of(cls, path, label: str = "", source: str = "Shipped", limit: int | None = None) -> "ModelRef":
        """A ref to ``path`` as it is now; CheckpointError when no seqviz family opens it."""
        from seqviz.files import CheckpointError
        from seqviz.registry import detect

        p = Path(path).expanduser()
        if not p.exists():
            raise CheckpointError(path, "no such file or folder")
        p = p.resolve()
        row = detect(p)
        return cls(str(p), content_key(p), row.model_type, None, limit if row.accepts_limit and p.is_file() else None,
                   row.name, label or p.name, source)

    @classmethod
    def chosen(cls, path, model_type: str, label: str = "", source: str = "Shipped", limit: int | None = None):
        """``of`` a path a visitor chose for a page of ``model_type``: a typed server path (``source`` "Local
        folder") only under the allowed folders (``seqviz.files.check_allowed``, never a hidden one); a
        CheckpointError when it cannot be used there, naming what it is and what the page needs."""
        from seqviz.files import CheckpointError, check_allowed

        if source == "Local folder":
            check_allowed(path, checkpoint_roots())
        ref = cls.of(path, label, source, limit)
        if not ref.row.opens_on(model_type):
            raise CheckpointError(path, _("this is a {kind} checkpoint ({description}); this page needs a {needed} "
                                          "one").format(kind=ref.model_type, description=ref.what, needed=model_type))
        return ref

    def load(self, **options):
        """``seqviz.load`` of it (uncached: the app's cache calls this once per ref), torch on the server's threads."""
        if self.row is None or self.row.needs_torch:  # word vectors are numpy: their pages never import torch
            import torch

            from seqviz.background import TORCH_THREADS

            torch.set_num_threads(TORCH_THREADS)  # several threads per request oversubscribe a small server
        import seqviz

        if self.limit is not None:
            options["limit"] = self.limit
        return seqviz.load(self.path, snapshot=self.snapshot, **options)

    @property
    def row(self):
        """Its format's row of ``seqviz.registry.FAMILIES`` (how it loads, what it needs), or None."""
        from seqviz.registry import FAMILIES

        return FAMILIES.get(self.family)

    @property
    def what(self) -> str:
        """Its format's description (``seqviz.registry.Family.description``) in the reader's language, else its kind."""
        return _(self.row.description) if self.row is not None else self.model_type

    def found(self, info: "Info", load) -> str:
        """One sentence on what this ref opens: its format and sizes, from ``info`` (its config where the folder has
        one, so a shipped checkpoint is described without loading it), else from ``load()``, the loaded model."""
        if info.card.get("inferred"):
            return _("Found {what}: {inferred}, inferred from the weight shapes.").format(what=self.what,
                                                                                         inferred=info.card["inferred"])
        return _("Found {what}: {detail}.").format(what=self.what, detail=self._sizes(info.config, load))

    def _sizes(self, cfg, load) -> str:
        """Word vectors' words x dims, a language model's layers, cell and sizes, an encoder-decoder's own sentence."""
        if self.row is not None and self.row.accepts_limit:
            sizes = load().describe()
            if self.limit and sizes["words"] >= self.limit:
                return _("{words:,} words × {dims} (the first {limit:,} of the file)").format(
                    words=sizes["words"], dims=sizes["dims"], limit=self.limit)
            return _("{words:,} words × {dims}").format(words=sizes["words"], dims=sizes["dims"])
        if hasattr(cfg, "vocab_size") and hasattr(cfg, "n_layers"):  # a recurrent LM: seqviz.families names its cell
            from seqviz.families import of

            return _("{layers}-layer {cell}, hidden {hidden}, {vocab:,} tokens").format(
                layers=cfg.n_layers, cell=of(cfg).title, hidden=cfg.d_hidden, vocab=cfg.vocab_size)
        if self.row is not None and self.row.info and cfg is not None:  # read torch-free: its config says it
            return cfg.describe()
        return load().describe().get("architecture") or self.model_type

    def at(self, snapshot: int | None) -> "ModelRef":
        """The same checkpoint at another training step (None: its final weights)."""
        return dataclasses.replace(self, snapshot=snapshot)

    @property
    def ships_views(self) -> bool:
        """Whether its views can come from its checkpoint's shipped results (``seqviz.results``: no model loaded)."""
        from seqviz.results import ships

        return self.snapshot is None and Path(self.path).is_dir() and ships(self.path)

    def read_info(self) -> "Info | None":
        """Its config, tokenizer and card from the folder's files without torch where its format reads them
        (``seqviz.registry.Family.read_info``: a page's first chart can come from the shipped results); None
        where only loading the model tells (and says exactly what is wrong)."""
        from seqviz.files import CheckpointError, read_json

        folder = Path(self.path)
        if self.row is None or not self.row.info or not folder.is_dir():
            return None
        try:
            config, tokenizer = self.row.read_info(folder)
            card = read_json(folder / "card.json") if (folder / "card.json").is_file() else {}
        except (CheckpointError, ValueError, TypeError, OSError):
            return None
        return Info(config, tokenizer, {**card, "path": str(folder)})

    def shipped_choices(self, choices: dict) -> dict | None:
        """``choices`` as a view shipped with this checkpoint is keyed on (``seqviz.results.view_key``): each compared
        ``ModelRef`` (also inside a tuple) as its folder's name and files' SHA-1s (``seqviz.results.peer_key``), a
        snapshot's weights file as ``at_snapshot``; None where no shipped view can hold it (not a folder, an upload's
        bytes, a compared model that is a snapshot, not a folder or ships no results)."""
        from seqviz.results import Snapshot, peer_key

        def keyed(choice):
            if isinstance(choice, ModelRef):
                key = peer_key(choice.path) if choice.snapshot is None and Path(choice.path).is_dir() else None
                if key is None:
                    raise _Unkeyed
                return key
            return tuple(map(keyed, choice)) if isinstance(choice, tuple) else choice

        if not Path(self.path).is_dir() or any(isinstance(v, bytes) for v in choices.values()):
            return None
        try:
            out = {k: keyed(v) for k, v in choices.items()}
        except _Unkeyed:
            return None
        if self.snapshot is not None:
            out["at_snapshot"] = Snapshot(Path(self.path), self.snapshot)
        return out

    def read_shape(self):
        """Its config (family, sizes) where its format reads one from the folder's files without torch
        (``seqviz.registry.Family.read_shape``), else None."""
        if self.row is None or not Path(self.path).is_dir():
            return None
        try:
            return self.row.read_shape(self.path)
        except (OSError, ValueError, TypeError, AttributeError):
            return None  # loading the model says exactly what is wrong


@dataclass(frozen=True)
class Info:
    """What a page needs of a model before it draws: its config, tokenizer and card (no weights)."""

    config: object
    tokenizer: object
    card: dict

    @classmethod
    def of(cls, model) -> "Info":
        """A loaded model's (an encoder-decoder has no one tokenizer)."""
        return cls(getattr(model, "config", None), getattr(model, "tokenizer", None), getattr(model, "card", None) or {})


@dataclass(frozen=True)
class Shipped:
    """A checkpoint folder found under a root, with its card (empty dict if it has none)."""

    name: str
    path: str
    model_type: str
    card: dict = field(default_factory=dict, hash=False, compare=False)

    def ref(self) -> ModelRef:
        """``ModelRef.of`` this folder, made again only when one of its files changed (name, size or mtime):
        fingerprinting reads its JSON files, which pages would otherwise pay per run for each model listed."""
        return _shipped_ref(self.path, self.name, _stat_key(Path(self.path)))


def _stat_key(folder: Path) -> tuple:
    try:
        return tuple((f.name, info.st_size, info.st_mtime_ns) for f in sorted(folder.iterdir())
                     if f.is_file() and (info := f.stat()))
    except OSError:
        return ()


@functools.lru_cache(maxsize=64)
def _shipped_ref(path: str, name: str, stats: tuple) -> ModelRef:
    return ModelRef.of(path, name)


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def listing_key(roots: list[Path]) -> tuple:
    """Cheap fingerprint of the roots (folder names + config/card mtimes): the catalogue cache's key."""
    key = []
    for root in roots:
        for config in sorted(root.glob("*/config.json")):
            card = config.parent / "card.json"
            key.append((str(config), config.stat().st_mtime_ns, card.stat().st_mtime_ns if card.exists() else 0))
    return tuple(key)


def scan(roots) -> dict[str | None, list[Shipped]]:
    """The checkpoint folders under ``roots`` by the pages they open on (None: all of them, in order); a folder
    whose config.json no family reads is not offered (loading it would fail)."""
    from seqviz.files import CheckpointError
    from seqviz.registry import detect  # torch-free: reads config.json only

    found: dict[str | None, list[Shipped]] = {None: []}
    for root in map(Path, roots):
        for config in sorted(root.glob("*/config.json")):
            try:
                row = detect(config.parent)
            except CheckpointError:
                continue
            shipped = Shipped(config.parent.name, str(config.parent.resolve()), row.model_type,
                              _read_json(config.parent / "card.json"))
            found[None].append(shipped)
            found.setdefault(row.model_type, []).append(shipped)
    return found


def classic_cells(names: list[str]) -> list[str]:
    """Of checkpoint names, the RNN, GRU and LSTM in that order (the comparisons' default choice), or the first
    three when fewer than two of them are there."""
    classic = [n for ending in CLASSIC for n in names if n.endswith(f"-{ending}")]
    return classic[:3] if len(classic) >= 2 else list(names[:3])


def snapshots(ref: ModelRef) -> list[int]:
    """Training steps whose weights the checkpoint folder keeps."""
    from seqviz.files import list_snapshots

    return list_snapshots(ref.path) if Path(ref.path).is_dir() else []
