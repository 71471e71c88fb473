"""Checkpoint folders: save, validate and load models without ever unpickling.

A checkpoint is a folder::

    config.json         model_type + the config dataclass (validated before use)
    model.safetensors   the weights
    vocab.json          {"kind": "char"|"word", "tokens": [...]}
    card.json           how it was trained and how well it does (shown by the app)
    snapshots/          optional: step-<n>.safetensors from earlier in training

A plain PyTorch language model (``nn.Embedding`` + ``nn.RNN/GRU/LSTM`` +
``nn.Linear``) loads through ``load_state_dict_checkpoint`` from a ``.safetensors``
or ``.pt`` state dict (``torch.load(weights_only=True)``) plus a small JSON spec.

Every file is treated as hostile: sizes are capped before reading, a model is first built
on the ``meta`` device (no memory) and only allocated once the weights match its config,
and every failure is one ``CheckpointError(path, problem)``. ``check_allowed`` is the
app's rule for which local folders a visitor may open (see ``allowed_dirs``).
"""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from seqviz.config import ConfigError, LMConfig
from seqviz.data.tokenizers import Tokenizer, TokenizerError
from seqviz.models.recurrent import RecurrentLM

MAX_FILE_BYTES = 1 << 30  # refuse weight files over 1 GiB outright
MAX_JSON_BYTES = 64 << 20
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


UPLOAD_PREFIX = "seqviz-upload-"  # temp folders of unpacked uploads (seqviz/uploads.py); shown as "upload/"
_UPLOAD_DIR = re.compile(r"^.*?" + re.escape(UPLOAD_PREFIX) + r"[^/]+/")


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded: names the file and the problem."""

    def __init__(self, path, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"{shown(path)}: {problem}")


def shown(name, limit: int = 160) -> str:
    """A user-supplied name made safe to print: control characters escaped, long names cut."""
    text = _UPLOAD_DIR.sub("upload/", str(name))  # a visitor need not see the server's temp folders
    if not text.isprintable():
        text = repr(text)[1:-1]
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------ reading files
def read_json(path: Path) -> dict:
    if not path.is_file():
        raise CheckpointError(path, "file is missing")
    if path.stat().st_size > MAX_JSON_BYTES:
        raise CheckpointError(path, "JSON file is too large")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise CheckpointError(path, "not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise CheckpointError(path, f"not valid JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(data, dict):
        raise CheckpointError(path, "expected a JSON object")
    return data


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """Tensors from ``.safetensors`` or a weights-only ``.pt``; nothing is executed."""
    if not path.is_file():
        raise CheckpointError(path, "file is missing")
    size = path.stat().st_size
    if size == 0:
        raise CheckpointError(path, "file is empty (0 bytes)")
    if size > MAX_FILE_BYTES:
        raise CheckpointError(path, f"file is {size / 2**20:.0f} MiB, over the 1024 MiB limit")
    suffix = path.suffix.lower()
    if suffix == ".safetensors":
        try:
            tensors = load_file(str(path), device="cpu")
        except (SafetensorError, OSError, ValueError, RuntimeError) as e:
            raise CheckpointError(path, f"not a valid safetensors file ({_first_line(e)})") from None
    elif suffix in (".pt", ".pth", ".bin"):
        try:
            with warnings.catch_warnings():  # torch warns about pickle protocols; the refusal says enough
                warnings.simplefilter("ignore")
                tensors = torch.load(str(path), map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - any failure of the safe unpickler is a refusal
            raise CheckpointError(
                path, f"refused: not a plain tensor file ({_unpickler_reason(e)}): loading it would need Python "
                "code, or it is corrupt. seqviz only reads tensors; re-save the weights with safetensors") from None
        if isinstance(tensors, dict) and "state_dict" in tensors and isinstance(tensors["state_dict"], dict):
            tensors = tensors["state_dict"]
        if not isinstance(tensors, dict) or not all(
                isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in tensors.items()):
            raise CheckpointError(path, "expected a state dict (a mapping of names to tensors)")
    else:
        raise CheckpointError(path, f"unsupported weight file type {suffix or '(none)'!r}: "
                              "use .safetensors (or a weights-only .pt)")
    return tensors


def _unpickler_reason(e: Exception) -> str:
    """The line of torch's weights-only refusal that names the problem (e.g. the global it would import)."""
    text = str(e)
    m = re.search(r"WeightsUnpickler error:\s*(.+)", text)
    reason = m.group(1) if m else _first_line(e)
    return reason.split(" was not an allowed global")[0].strip()[:120]


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


# ------------------------------------------------------------------ validation
def check_state_dict(model: torch.nn.Module, tensors: dict[str, torch.Tensor], path) -> None:
    """Exact key set, exact shapes, finite values; raise CheckpointError otherwise."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing tensors {missing[:4]}")
        if extra:
            parts.append(f"unexpected tensors {extra[:4]}")
        raise CheckpointError(path, "weights do not match the config: " + "; ".join(parts))
    for name, ref in expected.items():
        got = tensors[name]
        if tuple(got.shape) != tuple(ref.shape):
            raise CheckpointError(path, f"tensor {name} has shape {tuple(got.shape)}, "
                                  f"the config implies {tuple(ref.shape)}")
        if not got.is_floating_point():
            raise CheckpointError(path, f"tensor {name} has dtype {got.dtype}, expected floating point")
        finite = torch.isfinite(got)
        if not finite.all():
            raise CheckpointError(path, f"tensor {name} contains NaN or Inf values ({int((~finite).sum()):,} of "
                                  f"{got.numel():,}); refused")


def materialize(skeleton: torch.nn.Module, tensors: dict[str, torch.Tensor], path) -> torch.nn.Module:
    """Check ``tensors`` against a model built on the meta device, then allocate it and load them.

    Building on ``meta`` first means a config.json that claims a huge model costs nothing:
    memory is only taken once every tensor in the (size-capped) file matches the config.
    """
    check_state_dict(skeleton, tensors, path)
    model = skeleton.to_empty(device="cpu")
    model.load_state_dict({k: v.float() for k, v in tensors.items()})
    return model


def _build(config_data: dict, vocab_data: dict, config_path, vocab_path) -> RecurrentLM:
    try:
        config = LMConfig.from_dict(config_data)
    except (ConfigError, TypeError) as e:
        raise CheckpointError(config_path, f"invalid config: {e}") from None
    try:
        tokenizer = Tokenizer.from_dict(vocab_data)
    except TokenizerError as e:
        raise CheckpointError(vocab_path, f"invalid vocabulary: {e}") from None
    if len(tokenizer) != config.vocab_size:
        raise CheckpointError(vocab_path, f"vocabulary has {len(tokenizer)} tokens but the config "
                              f"says vocab_size={config.vocab_size}")
    if tokenizer.kind != config.tokenizer:
        raise CheckpointError(vocab_path, f"vocabulary is {tokenizer.kind!r}-level but the config "
                              f"says tokenizer={config.tokenizer!r}")
    with torch.device("meta"):  # no memory until the weights are known to fit (see materialize)
        return RecurrentLM(config, tokenizer)


# ------------------------------------------------------------------ folders
def save_pretrained(model: RecurrentLM, folder, card: dict | None = None) -> Path:
    """Write a checkpoint folder (config, weights, vocabulary, card)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if model.tokenizer is None:
        raise ValueError("a model needs its tokenizer to be saved")
    (folder / "config.json").write_text(json.dumps(model.config.to_dict(), indent=2) + "\n")
    (folder / "vocab.json").write_text(json.dumps(model.tokenizer.to_dict(), ensure_ascii=False) + "\n")
    save_weights(model, folder / "model.safetensors")
    card = dict(card if card is not None else model.card)
    card.setdefault("parameters", model.num_parameters())
    (folder / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n")
    return folder


def save_weights(model: torch.nn.Module, path, dtype=torch.float32) -> None:
    """Weights as safetensors; snapshots use float16 to keep the repository small."""
    state = {k: v.detach().to("cpu", dtype).contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(path))


# ------------------------------------------------------------------ which local paths the app may open
def allowed_dirs(extra=()) -> list[Path]:
    """Folders under which the app opens a typed local path, resolved (symbolic links followed).

    ``$SEQVIZ_ALLOWED_DIRS`` (folders separated by ``os.pathsep``) when set, else the current
    working directory and the user's home; ``extra`` (the app's checkpoint roots) always.
    """
    env = os.environ.get("SEQVIZ_ALLOWED_DIRS")
    dirs = [Path(p) for p in env.split(os.pathsep) if p] if env is not None else [Path.cwd(), Path.home()]
    return [d.expanduser().resolve() for d in [*dirs, *map(Path, extra)]]


def check_allowed(path, extra=()) -> Path:
    """``path`` resolved, or CheckpointError if it lies outside ``allowed_dirs(extra)``."""
    target = Path(path).expanduser().resolve()
    if any(target == d or d in target.parents for d in allowed_dirs(extra)):
        return target
    raise CheckpointError(path, "is outside the folders this app may open (its checkpoint folders, its working "
                          "folder and the home folder; the server's SEQVIZ_ALLOWED_DIRS sets them); refused")


def resolve(path_or_repo_id) -> Path:
    """A local folder, or a Hub repo id downloaded (json + safetensors only) when online."""
    path = Path(path_or_repo_id).expanduser()
    if path.exists():
        return path
    text = str(path_or_repo_id)
    if REPO_ID.match(text) and not text.startswith((".", "/")):
        try:
            from huggingface_hub import snapshot_download

            return Path(snapshot_download(text, allow_patterns=["*.json", "*.safetensors"]))
        except Exception as e:  # noqa: BLE001 - offline, unknown repo, ...: one message
            raise CheckpointError(text, f"no such folder, and the Hub download failed ({_first_line(e)[:120]})") from None
    raise CheckpointError(text, "no such file or folder")


def load(path_or_repo_id, snapshot: int | None = None) -> RecurrentLM:
    """Load a checkpoint folder (or Hub repo id) on the CPU, in eval mode, with its tokenizer."""
    folder = resolve(path_or_repo_id)
    if folder.is_file():
        raise CheckpointError(folder, "a checkpoint is a folder (config.json, model.safetensors, "
                              "vocab.json); for a bare state dict use load_state_dict_checkpoint")
    config_data = read_json(folder / "config.json")
    model_type = config_data.get("model_type", LMConfig.model_type)
    if model_type != LMConfig.model_type:
        raise CheckpointError(folder / "config.json", f"unknown model_type {model_type!r}")
    model = _build(config_data, read_json(folder / "vocab.json"), folder / "config.json", folder / "vocab.json")
    return fill_from_folder(model, folder, snapshot)


def fill_from_folder(model, folder: Path, snapshot: int | None = None):
    """Give a meta-device model the folder's weights (or a snapshot's) and its card; eval, no grad."""
    weights = folder / "model.safetensors"
    if snapshot is not None:
        weights = folder / "snapshots" / f"step-{int(snapshot)}.safetensors"
    model = materialize(model, read_weights(weights), weights)
    card_path = folder / "card.json"
    model.card = read_json(card_path) if card_path.exists() else {}
    model.card["path"] = str(folder)
    if snapshot is not None:
        model.card["snapshot"] = int(snapshot)
    return model.eval().requires_grad_(False)


def list_snapshots(folder) -> list[int]:
    """Training steps for which the folder keeps a snapshot, ascending."""
    snap = Path(folder) / "snapshots"
    steps = [int(m.group(1)) for p in snap.glob("step-*.safetensors")
             if (m := re.fullmatch(r"step-(\d+)\.safetensors", p.name))]
    return sorted(steps)


# ------------------------------------------------------------------ plain PyTorch state dicts
EMBED_KEYS = ("embed", "embedding", "encoder", "emb", "word_embeddings")
RNN_KEYS = ("rnn", "lstm", "gru", "cell")
HEAD_KEYS = ("head", "decoder", "fc", "linear", "out", "proj")


def load_state_dict_checkpoint(weights_path, spec_path) -> RecurrentLM:
    """Load ``nn.Embedding`` + ``nn.RNN/GRU/LSTM(batch_first)`` + ``nn.Linear`` weights.

    The spec JSON: ``{"cell": "lstm", "n_layers": 2, "tokenizer": "char",
    "vocab": ["<pad>", "a", ...]}``; optional ``"prefixes": {"embed": "encoder",
    "rnn": "rnn", "head": "decoder"}`` when the module names are not the usual ones.
    Sizes are read from the weights and checked against the spec.
    """
    weights_path, spec_path = Path(weights_path), Path(spec_path)
    spec = read_json(spec_path)
    tensors = read_weights(weights_path)
    vocab = spec.get("vocab")
    if not isinstance(vocab, list):
        raise CheckpointError(spec_path, "the spec needs a 'vocab' list of tokens in id order")
    prefixes = spec.get("prefixes") or {}
    if not isinstance(prefixes, dict) or not all(isinstance(v, str) and v for v in prefixes.values()):
        raise CheckpointError(spec_path, "'prefixes' must map embed/rnn/head to module names, "
                              'e.g. {"embed": "encoder", "rnn": "rnn", "head": "decoder"}')

    def find(role, choices, leaf):
        names = [prefixes[role]] if role in prefixes else list(choices)
        for name in names:
            if f"{name}.{leaf}" in tensors:
                return name
        raise CheckpointError(weights_path, f"no {role} weights found (looked for "
                              f"{', '.join(n + '.' + leaf for n in names)})")

    emb, rnn, head = (find("embed", EMBED_KEYS, "weight"), find("rnn", RNN_KEYS, "weight_ih_l0"),
                      find("head", HEAD_KEYS, "weight"))
    for key in (f"{emb}.weight", f"{rnn}.weight_hh_l0", f"{head}.weight"):
        if key not in tensors or tensors[key].dim() != 2:
            shape = tuple(tensors[key].shape) if key in tensors else "missing"
            raise CheckpointError(weights_path, f"tensor {key} must be a matrix, got shape {shape}")
    n_layers = sum(1 for k in tensors if re.fullmatch(rf"{re.escape(rnn)}\.weight_ih_l\d+", k))
    d_embed = tensors[f"{emb}.weight"].shape[1]
    d_hidden = tensors[f"{rnn}.weight_hh_l0"].shape[1]
    config_data = {k: spec[k] for k in ("cell", "dropout") if k in spec}
    config_data.update(n_layers=n_layers, d_embed=int(d_embed), d_hidden=int(d_hidden),
                       tokenizer=spec.get("tokenizer", "char"), vocab_size=int(tensors[f"{emb}.weight"].shape[0]))
    for key in ("n_layers", "d_embed", "d_hidden"):
        if key in spec and spec[key] != config_data[key]:
            raise CheckpointError(spec_path, f"spec says {key}={spec[key]!r} but the weights have {config_data[key]}")
    model = _build(config_data, {"kind": config_data["tokenizer"], "tokens": vocab}, spec_path, spec_path)
    mapped = {"embed.weight": tensors[f"{emb}.weight"], "head.weight": tensors[f"{head}.weight"]}
    if f"{head}.bias" in tensors:
        mapped["head.bias"] = tensors[f"{head}.bias"]
    for i in range(n_layers):
        for leaf in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            key = f"{rnn}.{leaf}_l{i}"
            if key not in tensors:
                raise CheckpointError(weights_path, f"missing tensor {key}")
            mapped[f"layers.{i}.{leaf}_l0"] = tensors[key]
    if "head.bias" not in mapped:
        mapped["head.bias"] = torch.zeros(model.config.vocab_size)
    model = materialize(model, mapped, weights_path)
    model.card = {"source": "plain PyTorch state dict", "path": str(weights_path)}
    return model.eval().requires_grad_(False)
