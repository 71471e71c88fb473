"""Checkpoint folders: the model-free readers, checks and writers every family's loading is built from.

A checkpoint is a folder::

    config.json         model_type + the config dataclass (validated before use)
    model.safetensors   the weights
    vocab.json          {"kind": "char"|"word", "tokens": [...]}
    card.json           how it was trained and how well it does (shown by the app)
    snapshots/          optional: step-<n>.safetensors from earlier in training

Each family reads and writes its own files in ``_from_pretrained`` / ``_save_pretrained``
(``seqviz.pretrained``) with the helpers here; this module imports no model.

Every file is treated as hostile: sizes are capped before reading, a model is first built
on the ``meta`` device (no memory) and only allocated once the weights match its config,
and every failure is one ``CheckpointError(path, problem)``. ``check_allowed`` is the
app's rule for which local folders a visitor may open (see ``allowed_dirs``).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file


# The loaders' shared errors and readers, kept importable from here where every loader already looks:
from seqviz.files import (  # noqa: F401
    FORMAT_VERSION, MAX_JSON_BYTES, UPLOAD_PREFIX, CheckpointError, allowed_dirs, check_allowed, check_version,
    list_snapshots, local_paths_enabled, parse_config, read_config, read_json, shown, write_config)

MAX_FILE_BYTES = 1 << 30  # refuse weight files over 1 GiB outright


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """Tensors from ``.safetensors``, a weights-only ``.pt`` or a NumPy ``.npz``; nothing is executed."""
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
    elif suffix == ".npz":
        tensors = _read_npz(path)
    elif suffix in (".pt", ".pth", ".bin"):
        try:
            with warnings.catch_warnings():  # torch warns about pickle protocols; the refusal says enough
                warnings.simplefilter("ignore")
                tensors = torch.load(str(path), map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - any failure of the safe unpickler is a refusal
            raise CheckpointError(path, _pickle_refusal(e)) from None
        for key in ("state_dict", "model_state_dict", "model"):  # training scripts often wrap the weights
            if isinstance(tensors, dict) and isinstance(tensors.get(key), dict):
                tensors = tensors[key]
                break
        tensors = _two_halves(tensors)
        if not isinstance(tensors, dict) or not all(
                isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in tensors.items()):
            raise CheckpointError(path, "expected a state dict (a mapping of names to tensors)")
    else:
        raise CheckpointError(path, f"unsupported weight file type {suffix or '(none)'!r}: "
                              "use .safetensors (or a weights-only .pt, or .npz)")
    return tensors


def _two_halves(data):
    """``{"encoder": sd, "decoder": sd, ...}`` (how the PyTorch translation tutorial's two modules are often saved
    together; also ``encoder_state_dict``) flattened to ``encoder.*`` / ``decoder.*``; anything else unchanged."""
    if not isinstance(data, dict):
        return data
    halves = {}
    for side in ("encoder", "decoder"):
        for key in (side, f"{side}_state_dict"):
            if isinstance(data.get(key), dict):
                halves[side] = data[key]
    if len(halves) != 2:
        return data
    return {f"{side}.{k}": v for side, sd in halves.items() for k, v in sd.items()}


def _read_npz(path: Path) -> dict[str, torch.Tensor]:
    """Arrays of a NumPy ``.npz`` (``numpy.load(allow_pickle=False)``: object arrays are refused, nothing runs)."""
    import zipfile

    import numpy as np

    try:
        with zipfile.ZipFile(path) as archive:
            unpacked = sum(m.file_size for m in archive.infolist())
    except (zipfile.BadZipFile, OSError) as e:
        raise CheckpointError(path, f"not a valid .npz file ({_first_line(e)})") from None
    if unpacked > MAX_FILE_BYTES:  # a small zip can unpack to a huge array
        raise CheckpointError(path, f"unpacks to {unpacked / 2**20:.0f} MiB, over the 1024 MiB limit")
    try:
        with np.load(path, allow_pickle=False) as arrays:
            tensors = {k: torch.from_numpy(np.array(arrays[k])) for k in arrays.files}
    except (ValueError, OSError, TypeError, zipfile.BadZipFile) as e:
        raise CheckpointError(path, f"not a plain .npz of numeric arrays ({_first_line(e)})") from None
    return tensors


GLOBAL = re.compile(r"GLOBAL\s+'?([A-Za-z_][\w.]{0,100})")


def _pickle_refusal(e: Exception) -> str:
    """One whole sentence on what torch's weights-only loader refused, naming the Python object it would import."""
    m = GLOBAL.search(str(e))
    if m:
        return (f"refused: this pickle would import the Python object {m.group(1)} to load, and seqviz never runs "
                "code from a file; save the weights alone (model.state_dict()) with safetensors or torch.save")
    return ("refused: not a plain tensor file (it is corrupt, or loading it would need Python code); seqviz "
            "reads tensors only: save model.state_dict() with safetensors or torch.save")


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




# ------------------------------------------------------------------ weights
def save_weights(model: torch.nn.Module, path, dtype=torch.float32) -> None:
    """Weights as safetensors; snapshots use float16 to keep the repository small."""
    state = {k: v.detach().to("cpu", dtype).contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(path))


# ------------------------------------------------------------------ folders
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
