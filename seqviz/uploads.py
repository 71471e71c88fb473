"""Safe unpacking of user uploads (a zipped checkpoint folder, or weights + JSON) into a temp folder.

Everything here treats the upload as hostile: names are reduced to plain file names or
checked for ``..``/absolute paths, symlinks are refused, and a zip is checked against
size, member-count and compression-ratio limits *before* extraction and again while
bytes are written (zip headers can lie about sizes). Nothing is ever unpickled; the
result is a path for ``seqviz.load``.
"""

from __future__ import annotations

import io
import re
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from seqviz.files import UPLOAD_PREFIX, WEIGHT_SUFFIXES, CheckpointError

MAX_UPLOAD_BYTES = 200 << 20  # per upload; keep in step with server.maxUploadSize (MB) in .streamlit/config.toml
MAX_UNCOMPRESSED_BYTES = 512 << 20  # a checkpoint larger than this would not fit a 1 GB app anyway
MAX_RATIO = 100  # uncompressed / compressed; float32 weights compress ~1.1x, a bomb ~1000x
RATIO_FLOOR = 1 << 20  # members under 1 MiB may compress well (JSON) without being bombs
MAX_MEMBERS = 256
SAFE_NAME = re.compile(r"^[\w][\w.\- ]{0,199}$")
IGNORED = re.compile(r"(^|/)(__MACOSX/|\.DS_Store$)")
CHUNK = 1 << 20
KEEP_UPLOADS = 16  # extracted uploads kept on disk (newest first); older ones are deleted


def prune_uploads(keep: int = KEEP_UPLOADS, root: Path | None = None) -> int:
    """Delete all but the ``keep`` newest extracted-upload folders; returns how many were deleted.

    A long-running server would otherwise fill its disk with every visitor's uploads. A
    model already loaded from a deleted folder stays in memory; loading it again later
    gives the usual "no such file or folder" message.
    """
    root = Path(root or tempfile.gettempdir())
    found = []
    for p in root.glob(f"{UPLOAD_PREFIX}*"):
        try:  # another process (a second server on this machine) may delete one meanwhile
            if p.is_dir() and not p.is_symlink():
                found.append((p.stat().st_mtime, p))
        except OSError:
            continue
    found.sort(key=lambda item: item[0], reverse=True)
    for _mtime, old in found[keep:]:
        shutil.rmtree(old, ignore_errors=True)
    return max(0, len(found) - keep)


def limit_text(limit: int | None = None) -> str:
    """The upload limit as users read it: "200 MiB" (or bytes, for limits under 1 MiB)."""
    limit = MAX_UPLOAD_BYTES if limit is None else limit
    return f"{limit >> 20} MiB" if limit >= (1 << 20) else f"{limit:,} bytes"


def _safe_name(name: str, where: str) -> str:
    """A bare file name from an upload; raise if it is not a plain, printable name."""
    base = PurePosixPath(name.replace("\\", "/")).name
    if not SAFE_NAME.match(base) or base in (".", ".."):
        raise CheckpointError(where, f"file name {name!r} is not allowed (letters, digits, '.', '-', '_' only)")
    return base


def _member_path(name: str, where: str) -> PurePosixPath:
    """The relative path of a zip member, refusing absolute paths, drive letters and '..'."""
    if "\\" in name:
        raise CheckpointError(where, f"zip member {name!r} uses backslashes; refused")
    path = PurePosixPath(name)
    if path.is_absolute() or re.match(r"^[A-Za-z]:", name):
        raise CheckpointError(where, f"zip member {name!r} has an absolute path; refused")
    if any(part == ".." for part in path.parts):
        raise CheckpointError(where, f"zip member {name!r} points outside the folder ('..'); refused")
    for part in path.parts:
        _safe_name(part, where)
    return path


def check_zip(archive: zipfile.ZipFile, where: str, compressed_size: int) -> list[zipfile.ZipInfo]:
    """The members to extract, after every limit is checked against the zip's directory."""
    members = [m for m in archive.infolist() if not IGNORED.search(m.filename)]
    if len(members) > MAX_MEMBERS:
        raise CheckpointError(where, f"zip has {len(members)} entries, over the limit of {MAX_MEMBERS}")
    total = 0
    files = []
    for m in members:
        mode = m.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise CheckpointError(where, f"zip member {m.filename!r} is a symbolic link; refused")
        _member_path(m.filename.rstrip("/"), where)
        if m.is_dir():
            continue
        if m.flag_bits & 0x1:
            raise CheckpointError(where, f"zip member {m.filename!r} is encrypted")
        if m.file_size > RATIO_FLOOR and m.file_size > MAX_RATIO * max(m.compress_size, 1):
            raise CheckpointError(where, f"zip member {m.filename!r} expands {m.file_size / max(m.compress_size, 1):.0f}x "
                                  f"(limit {MAX_RATIO}x): looks like a zip bomb; refused")
        total += m.file_size
        files.append(m)
    if total > MAX_UNCOMPRESSED_BYTES:
        raise CheckpointError(where, f"zip expands to {total / 2**20:.0f} MiB, over the "
                              f"{MAX_UNCOMPRESSED_BYTES >> 20} MiB limit")
    if total > RATIO_FLOOR and total > MAX_RATIO * max(compressed_size, 1):
        raise CheckpointError(where, f"zip expands {total / compressed_size:.0f}x (limit {MAX_RATIO}x): "
                              "looks like a zip bomb; refused")
    if not files:
        raise CheckpointError(where, "zip is empty")
    return files


def extract_zip(data: bytes, dest: Path, where: str = "upload.zip") -> None:
    """Extract ``data`` (a zip) into ``dest``, counting real bytes against the declared sizes."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as e:
        raise CheckpointError(where, f"not a valid zip file ({e})") from None
    with archive:
        written = 0
        root = dest.resolve()
        for m in check_zip(archive, where, len(data)):
            target = (dest / _member_path(m.filename, where)).resolve()
            if root not in target.parents:
                raise CheckpointError(where, f"zip member {m.filename!r} points outside the folder; refused")
            target.parent.mkdir(parents=True, exist_ok=True)
            size = 0
            try:
                with archive.open(m) as src, open(target, "wb") as out:
                    while chunk := src.read(CHUNK):
                        size += len(chunk)
                        written += len(chunk)
                        if size > m.file_size or written > MAX_UNCOMPRESSED_BYTES:
                            raise CheckpointError(where, f"zip member {m.filename!r} is larger than its "
                                                  "header says; refused")
                        out.write(chunk)
            except (zipfile.BadZipFile, RuntimeError, OSError, EOFError, NotImplementedError) as e:
                raise CheckpointError(where, f"cannot read zip member {m.filename!r} ({e})") from None


SEQ2SEQ_VOCABS = ("source_vocab.json", "target_vocab.json")  # an encoder-decoder's vocabularies, kept as named


def find_checkpoint(folder: Path, where: str) -> Path:
    """The path inside an extracted upload that ``seqviz.load`` should open."""
    configs = sorted(p for p in folder.rglob("config.json") if len(p.relative_to(folder).parts) <= 3)
    if len(configs) == 1:
        return configs[0].parent
    if len(configs) > 1:
        raise CheckpointError(where, "the upload holds several config.json files; zip one checkpoint folder")
    weights = sorted(p for p in folder.rglob("*") if p.suffix.lower() in WEIGHT_SUFFIXES)
    jsons = sorted(p for p in folder.rglob("*.json") if p.name not in SEQ2SEQ_VOCABS)  # read by those names
    stems = [p.stem.lower() for p in weights]
    pair = len(weights) == 2 and weights[0].parent == weights[1].parent and \
        sum("encoder" in s for s in stems) == 1 and sum("decoder" in s for s in stems) == 1
    if len(weights) == 1 or pair:
        # A plain state dict (seqviz/plain.py, seqviz/seq2seq/plain.py): its vocabulary and optional spec go
        # beside it under the names the loader looks for, whatever the visitor called them.
        w = weights[0]
        if len(jsons) > 2:
            raise CheckpointError(where, "upload one weight file (or encoder + decoder) with at most a vocabulary "
                                  "and a spec JSON (an encoder-decoder's: source_vocab.json, target_vocab.json)")
        for j in jsons:
            target = w.parent / ("vocab.json" if _is_vocabulary(j) else "spec.json")
            if j != target:
                if target.exists():
                    raise CheckpointError(where, "two vocabularies or two specs in one upload")
                j.rename(target)
        return w.parent if pair else w
    raise CheckpointError(where, "no checkpoint found: upload a zipped folder with config.json, "
                          "or one weight file (.safetensors/.pt) with its vocabulary (vocab.json)")


def _is_vocabulary(path: Path) -> bool:
    """A JSON list of tokens, {"tokens": ...} / {"words": ...} without a spec's "vocab", or {token: id}."""
    import json

    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, OSError):
        return False  # the loader reports it, as a spec
    if isinstance(data, list):
        return True
    if not isinstance(data, dict) or "vocab" in data or "cell" in data or "prefixes" in data:
        return False
    return "tokens" in data or "words" in data or (bool(data) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in data.values()))  # {"source_eos": true} is a spec


def extract_upload(files: list[tuple[str, bytes]], dest: Path | None = None) -> Path:
    """Unpack uploaded ``(name, bytes)`` pairs into ``dest`` (a new temp folder if None).

    Accepts one ``.zip`` of a checkpoint folder, the files of a folder (``config.json``,
    ``model.safetensors``, ``vocab.json``, ...), or one weight file + one spec JSON.
    Returns the folder or weight file to load; raises ``CheckpointError`` otherwise.
    On failure the temp folder is removed.
    """
    if not files:
        raise CheckpointError("upload", "no file was uploaded")
    names = ", ".join(n for n, _ in files)
    total = sum(len(d) for _, d in files)
    if total > MAX_UPLOAD_BYTES:
        raise CheckpointError(names, f"upload is {total:,} bytes, over the {limit_text()} limit")
    made = dest is None
    if made:
        prune_uploads(KEEP_UPLOADS - 1)  # room for this one
    dest = Path(tempfile.mkdtemp(prefix=UPLOAD_PREFIX)) if dest is None else Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        zips = [(n, d) for n, d in files if n.lower().endswith(".zip")]
        if zips:
            if len(files) != 1:
                raise CheckpointError(names, "upload either one .zip or the loose files, not both")
            extract_zip(zips[0][1], dest, zips[0][0])
        else:
            for name, data in files:
                base = _safe_name(name, name)
                if not base.lower().endswith(WEIGHT_SUFFIXES + (".json",)):
                    raise CheckpointError(name, "unsupported file type: upload .zip, .safetensors, .pt, .npz or "
                                          ".json")
                if (dest / base).exists():
                    raise CheckpointError(name, "two uploaded files have the same name")
                (dest / base).write_bytes(data)
        return find_checkpoint(dest, names)
    except BaseException:
        if made:
            shutil.rmtree(dest, ignore_errors=True)
        raise


def extract_replacing(files: list[tuple[str, bytes]], old: str | None) -> tuple[Path, Path]:
    """``extract_upload``, then the folder of the same visitor's previous upload (``old``) removed: one extracted
    upload per visitor and kind. Returns (what to load, the folder to remove next time)."""
    path = extract_upload(files)
    if old:
        shutil.rmtree(old, ignore_errors=True)
    return path, path if path.is_dir() else path.parent
