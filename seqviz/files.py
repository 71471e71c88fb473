"""Errors and JSON reading shared by every loader, without torch (the app's catalogue and
``seqviz.registry.detect`` use them before any model is built).

Every file is treated as hostile: sizes are capped before reading, and every failure is one
``CheckpointError(path, problem)`` that names the file and the problem, never the content.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

MAX_JSON_BYTES = 64 << 20
# What a file's name or first bytes say it is; shared by the registry, the loaders and the upload checks.
WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin", ".npz")  # state dicts (a .pt only as weights_only;
# a .npz only without pickled objects)
PICKLE_SUFFIXES = (".model", ".kv", ".pkl", ".pickle", ".npy", ".wv", ".ckpt")  # never opened
FASTTEXT_MAGIC = (793712314).to_bytes(4, "little")  # fastText's FASTTEXT_FILEFORMAT_MAGIC_INT32


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


def local_paths_enabled() -> bool:
    """False when the operator turned typed paths off (``SEQVIZ_LOCAL_PATHS=0``; recommended for public apps)."""
    return os.environ.get("SEQVIZ_LOCAL_PATHS", "1").strip().lower() not in ("0", "false", "no", "off")


def sha1_of(path) -> str | None:
    """SHA-1 of a file's bytes (None when there is no such file): what a result shipped beside a checkpoint
    (``exposure.json``, ``scores.json``) records of the files it was measured on."""
    import hashlib

    path = Path(path)
    return hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else None


def list_snapshots(folder) -> list[int]:
    """Training steps for which the folder keeps a snapshot, ascending."""
    snap = Path(folder) / "snapshots"
    steps = [int(m.group(1)) for p in snap.glob("step-*.safetensors")
             if (m := re.fullmatch(r"step-(\d+)\.safetensors", p.name))]
    return sorted(steps)
