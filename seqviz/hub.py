"""Hugging Face Hub downloads with a budget: sizes are asked first, one download at a time.

``resolve(path_or_repo_id)`` is a local path when one exists, then a shipped checkpoint's name; otherwise a Hub repo id is
downloaded (only configs, safetensors weights and tokenizer files; never pickles or code),
but only after ``HfApi().model_info(files_metadata=True)`` has said how large those files
are: a repository whose needed files exceed ``max_bytes`` (``$SEQVIZ_HUB_MAX_BYTES``,
default the upload limit) is refused before a byte is downloaded. One download runs per
process (a shared server); a second visitor is told to wait. ``$SEQVIZ_HUB=0`` switches
the Hub off.
"""

from __future__ import annotations

import fnmatch
import os
import re
import threading
from pathlib import Path

from seqviz.files import CheckpointError

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# Files a Hub download may fetch: configs, safetensors weights, tokenizer files. Never
# *.bin / *.pt / *.pkl (pickles) and never *.py (remote code).
HUB_FILES = ("*.json", "*.safetensors", "*.model", "*.spm", "*.txt")
_LOCK = threading.Lock()


def hub_enabled() -> bool:
    return os.environ.get("SEQVIZ_HUB", "1").strip().lower() not in ("0", "false", "no", "off")


def max_bytes() -> int:
    """The download budget: ``$SEQVIZ_HUB_MAX_BYTES`` or the upload limit."""
    from seqviz.uploads import MAX_UPLOAD_BYTES

    env = os.environ.get("SEQVIZ_HUB_MAX_BYTES", "").strip()
    return int(env) if env.isdigit() else MAX_UPLOAD_BYTES


def is_repo_id(text: str) -> bool:
    return bool(REPO_ID.match(text)) and not text.startswith((".", "/")) and ".." not in text


def needed_files(repo_id: str, patterns=HUB_FILES) -> list[tuple[str, int]]:
    """(file name, size in bytes) of each file of the repository a download would fetch."""
    from huggingface_hub import HfApi

    info = HfApi().model_info(repo_id, files_metadata=True)
    files = []
    for sibling in info.siblings or []:
        name = sibling.rfilename
        if any(fnmatch.fnmatch(name, p) for p in patterns) and "/" not in name.strip("/"):
            files.append((name, int(sibling.size or 0)))
    return files


def download(repo_id: str, patterns=HUB_FILES, limit: int | None = None, progress=None) -> Path:
    """Download the needed files of ``repo_id`` after checking their total size against ``limit``.

    ``progress(done_bytes, total_bytes)`` is called after each file. CheckpointError when the
    Hub is off, the repository is too large, another download is running, or the Hub fails.
    """
    if not hub_enabled():
        raise CheckpointError(repo_id, "the Hub source is switched off on this server (SEQVIZ_HUB=0); "
                              "use a shipped checkpoint, a local folder or an upload")
    limit = max_bytes() if limit is None else int(limit)
    if not _LOCK.acquire(blocking=False):
        raise CheckpointError(repo_id, "another Hub download is running on this server; try again when it "
                              "has finished")
    try:
        try:
            files = needed_files(repo_id, patterns)
        except Exception as e:  # noqa: BLE001 - offline, unknown repo, gated ...: one readable message
            raise CheckpointError(repo_id, "asking the Hugging Face Hub about it failed "
                                  f"({type(e).__name__}); a Hub id needs a network connection, offline "
                                  "use a local folder or an upload") from None
        if not files:
            raise CheckpointError(repo_id, "the repository holds no config.json or safetensors weights "
                                  "(pickled weights are never downloaded)")
        total = sum(size for _, size in files)
        if total > limit:
            raise CheckpointError(repo_id, f"its files take {total / 2**20:,.0f} MiB, over this server's "
                                  f"{limit / 2**20:,.0f} MiB download limit; refused before downloading")
        from huggingface_hub import hf_hub_download

        done, folder = 0, None
        try:
            for name, size in files:
                local = Path(hf_hub_download(repo_id, name))
                folder = local.parent if folder is None else folder
                done += size
                if progress is not None:
                    progress(done, total)
        except Exception as e:  # noqa: BLE001
            raise CheckpointError(repo_id, f"downloading from the Hugging Face Hub failed ({type(e).__name__})") \
                from None
        return folder
    finally:
        _LOCK.release()


def resolve(path_or_repo_id, progress=None) -> Path:
    """A local path when it exists, else a shipped checkpoint's name (``seqviz.installed``), else a Hub repo id
    downloaded within the budget. A relative path that is none of these is first said to be no folder here."""
    from seqviz.installed import shipped

    path = Path(str(path_or_repo_id)).expanduser()
    if path.exists():
        return path
    text = str(path_or_repo_id).strip()
    found = shipped(text)
    if found is not None:
        return found
    here = "no such file or folder" + ("" if path.is_absolute() else " here")  # no cwd: a visitor reads it too
    if is_repo_id(text) and not path.parent.is_dir():  # "checkpoints/typo" is a missing folder, not a Hub id
        try:
            return download(text, progress=progress)
        except CheckpointError as e:
            raise CheckpointError(text, f"{here}; as a Hugging Face Hub id: {e.problem}") from None
    raise CheckpointError(text, here)
