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

from seqviz.config import ConfigError

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


# ------------------------------------------------------------------ config.json
FORMAT_VERSION = 2  # 2: one vocab.json shape for every family ({"kind", "tokens"[, "counts"]})


def write_config(folder: Path, config) -> None:
    """config.json: the config dataclass, its model_type and the folder format version."""
    data = {**config.to_dict(), "format_version": FORMAT_VERSION}
    (Path(folder) / "config.json").write_text(json.dumps(data, indent=2) + "\n")


def check_version(config: dict, path) -> None:
    """Refuse a folder written in a newer format than this seqviz reads (no format_version: format 1)."""
    version = config.get("format_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT_VERSION:
        raise CheckpointError(path, f"written by a newer seqviz (folder format above {FORMAT_VERSION}); upgrade seqviz")


def read_config(path: Path, config_class):
    """The config dataclass of a config.json (format_version checked, then dropped); CheckpointError if invalid."""
    return parse_config(read_json(path), config_class, path)


def parse_config(data: dict, config_class, path):
    """``read_config`` for a config.json already read (a family that looks at its model_type first)."""
    data = dict(data)
    check_version(data, path)
    data.pop("format_version", None)
    try:
        return config_class.from_dict(data)
    except (ConfigError, TypeError) as e:
        raise CheckpointError(path, f"invalid config: {_no_values(e)}") from None


def _no_values(e: Exception) -> str:
    """A config error without the values it quotes (config.json may be a file the visitor did not write)."""
    if isinstance(e, TypeError):
        return "unexpected or missing fields"
    return str(e).split(", got ")[0]


# ------------------------------------------------------------------ which local paths the app may open
def allowed_dirs(extra=()) -> list[Path]:
    """Folders under which a typed local path may be opened, resolved (symbolic links followed).

    ``extra`` (the app's checkpoint folders) always; then ``$SEQVIZ_ALLOWED_DIRS`` (folders separated
    by ``os.pathsep``) when set, else the working folder. The home folder is never a default: it
    holds ``~/.netrc``, ``~/.streamlit/secrets.toml`` and the Hugging Face token.
    """
    env = os.environ.get("SEQVIZ_ALLOWED_DIRS")
    dirs = [Path(p) for p in env.split(os.pathsep) if p.strip()] if env is not None else [Path.cwd()]
    return [d.expanduser().resolve() for d in [*map(Path, extra), *dirs]]


def check_allowed(path, extra=()) -> Path:
    """``path`` resolved, or CheckpointError if typed paths are off, it lies outside ``allowed_dirs(extra)``,
    or it passes through a hidden file or folder (``.streamlit``, ``.git``, ``.netrc`` ...) below its root."""
    if not local_paths_enabled():
        raise CheckpointError(path, "typed paths are switched off on this server (SEQVIZ_LOCAL_PATHS=0); use a "
                              "shipped checkpoint or an upload")
    target = Path(path).expanduser().resolve()
    for root in allowed_dirs(extra):
        if target == root or root in target.parents:
            if any(part.startswith(".") for part in target.relative_to(root).parts):
                raise CheckpointError(path, "is a hidden file or folder (its name starts with a dot); refused")
            return target
    raise CheckpointError(path, "is outside the folders this app may open (its checkpoint folders and its working "
                          "folder; the server's SEQVIZ_ALLOWED_DIRS adds others); refused")


def read_lm_info(folder: Path):
    """(LMConfig, Tokenizer) of a seqviz language-model folder from config.json and vocab.json, without torch."""
    from seqviz.config import LMConfig
    from seqviz.data.tokenizers import Tokenizer, read_vocab

    config = {k: v for k, v in read_json(folder / "config.json").items() if k != "format_version"}
    return LMConfig.from_dict(config), Tokenizer.from_dict(read_vocab(folder / "vocab.json"))
