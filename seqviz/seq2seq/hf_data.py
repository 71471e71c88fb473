"""Any parallel corpus through `datasets` (a Hub name when online, or a local copy) as seqviz Pairs and Splits.

Two layouts are read: the common ``{"translation": {"zh": ..., "en": ...}}`` column, or one
column per language (``zh``, ``en``). Text is cut into the units a ``Vocab`` holds:
``"char"`` (one token per character; whitespace runs become one " ") for languages written
without spaces (Chinese, Japanese, Thai ...), ``"word"`` (words and punctuation marks, a
``"unit"`` vocabulary) for the rest. Real corpora carry no word alignments, so every
``Pair.align`` is -1 and the card has no alignment hit rate.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from seqviz.seq2seq.data import Pair, Splits

# languages written without spaces between words: character units by default
NO_SPACES = {"zh", "ja", "th", "lo", "km", "my", "bo", "yue", "wuu", "lzh", "cmn"}
VOCAB_KIND = {"char": "char", "word": "unit"}  # tokenization -> seqviz.seq2seq.vocab kind
WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)  # a run of letters/digits, or one punctuation mark
HELD_OUT_NAMES = {"valid": ("validation", "valid", "dev"), "test": ("test",)}


def default_tokens(lang: str) -> str:
    """'char' for languages written without spaces (zh, ja, zh-TW, zh_cn ...), else 'word'."""
    return "char" if re.split(r"[-_]", lang.lower())[0] in NO_SPACES else "word"


def tokenize(text: str, kind: str) -> tuple[str, ...]:
    if kind == "char":
        return tuple(" ".join(text.split()))
    if kind == "word":
        return tuple(WORD.findall(text))
    raise ValueError(f"tokens must be 'char' or 'word', got {kind!r}")


def read_dataset(name_or_path: str, config: str | None = None) -> dict:
    """split name -> ``datasets.Dataset``, from a saved folder, a data file or folder, or the Hub."""
    import datasets

    path = Path(name_or_path).expanduser()
    if not path.exists() and str(name_or_path).startswith(("/", ".", "~")):
        raise ValueError(f"{name_or_path}: no such file or folder")
    try:
        if path.is_dir() and any((path / f).is_file() for f in ("state.json", "dataset_dict.json")):
            ds = datasets.load_from_disk(str(path))  # written by Dataset(Dict).save_to_disk
        elif path.is_file():
            builder = {".jsonl": "json", ".tsv": "csv"}.get(path.suffix, path.suffix.lstrip("."))
            ds = datasets.load_dataset(builder, data_files=str(path),
                                       **({"delimiter": "\t"} if path.suffix == ".tsv" else {}))
        else:
            ds = datasets.load_dataset(str(name_or_path), config)
    except Exception as e:  # noqa: BLE001 - offline, unknown name, missing config ...: one message
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise ValueError(f"could not load the dataset {name_or_path!r} ({first}). A Hub name needs a network "
                         "connection (and sometimes --dataset-config, e.g. 'zh-en'); offline, give a folder "
                         "written by save_to_disk or a .json/.jsonl/.csv/.tsv/.parquet file") from None
    return dict(ds) if isinstance(ds, datasets.DatasetDict) else {"train": ds}


def pairs_from(ds, source_lang: str, target_lang: str, source_tokens: str = "char", target_tokens: str = "word",
               max_tokens: int = 100, rows=None) -> list[Pair]:
    """Pairs from one split (``rows``: the row indices to read, default all); empty or long pairs dropped."""
    columns = list(ds.column_names)
    if "translation" in columns:
        sample = ds[0]["translation"] if len(ds) else {}
        missing = [lang for lang in (source_lang, target_lang) if lang not in sample]
        if missing:
            raise ValueError(f"the 'translation' column has languages {sorted(sample)}, not {missing}; "
                             "choose --source-lang/--target-lang among them")
        texts = ((r["translation"][source_lang], r["translation"][target_lang]) for r in _rows(ds, rows))
    elif source_lang in columns and target_lang in columns:
        texts = ((r[source_lang], r[target_lang]) for r in _rows(ds, rows))
    else:
        raise ValueError(f"expected a 'translation' column or columns {source_lang!r} and {target_lang!r}; "
                         f"the dataset has columns {columns}")
    pairs = []
    for src, tgt in texts:
        if not isinstance(src, str) or not isinstance(tgt, str):
            continue
        s, t = tokenize(src.strip(), source_tokens), tokenize(tgt.strip(), target_tokens)
        if s and t and len(s) <= max_tokens and len(t) <= max_tokens:
            pairs.append(Pair(s, t, (-1,) * len(t)))
    return pairs


def _rows(ds, rows):
    return ds if rows is None else ds.select(rows)


def dataset_splits(name_or_path: str, source_lang: str, target_lang: str, n_train: int, n_valid: int,
                   n_test: int, seed: int = 0, config: str | None = None, source_tokens: str | None = None,
                   target_tokens: str | None = None, max_tokens: int = 100) -> Splits:
    """Train / validation / test pairs from a parallel dataset, for ``train_seq2seq(..., splits=...)``.

    The dataset's validation and test splits are used when it has them, else pairs are
    held out of train (seeded). Train pairs whose source is held out are dropped, so held-out
    sources never occur in training. Each split is a seeded sample of at most n pairs.
    """
    src_kind, tgt_kind = source_tokens or default_tokens(source_lang), target_tokens or default_tokens(target_lang)
    for kind in (src_kind, tgt_kind):
        tokenize("", kind)  # validates the name
    parts = read_dataset(name_or_path, config)
    rng = random.Random(f"{name_or_path}:{seed}")

    def sample(split: str, n: int, margin: float = 1.25) -> list[Pair]:
        """About n pairs of a split (a quarter more, for the ones dropped as empty, long or seen)."""
        ds = parts[split]
        rows = sorted(rng.sample(range(len(ds)), min(len(ds), int(n * margin) + 10)))
        return pairs_from(ds, source_lang, target_lang, src_kind, tgt_kind, max_tokens, rows)

    train_name = "train" if "train" in parts else next(iter(parts))
    held = {}
    for role, n in (("valid", n_valid), ("test", n_test)):
        name = next((s for s in HELD_OUT_NAMES[role] if s in parts and s != train_name), None)
        held[role] = sample(name, n)[:n] if name else None
    carve = sum(n for role, n in (("valid", n_valid), ("test", n_test)) if held[role] is None)
    train = sample(train_name, n_train + carve)
    rng.shuffle(train)
    for role, n in (("valid", n_valid), ("test", n_test)):
        if held[role] is None:
            held[role], train = train[:n], train[n:]
    unseen = {p.src for p in held["valid"] + held["test"]}
    train = [p for p in train if p.src not in unseen][:n_train]
    if not train or not held["valid"] or not held["test"]:
        raise ValueError(f"{name_or_path}: too few usable pairs ({len(train)} train, {len(held['valid'])} "
                         f"validation, {len(held['test'])} test) after dropping empty ones and those over "
                         f"{max_tokens} tokens")
    label = Path(name_or_path).name if Path(name_or_path).expanduser().exists() else name_or_path
    task = f"{label}{'/' + config if config else ''} {source_lang}-{target_lang}"
    return Splits(task, train, held["valid"], held["test"], seed,
                  kinds=(VOCAB_KIND[src_kind], VOCAB_KIND[tgt_kind]),
                  origin=f"dataset {name_or_path!r}{f' ({config})' if config else ''}, "
                         f"{source_lang} ({src_kind}s) -> {target_lang} ({tgt_kind}s)")
