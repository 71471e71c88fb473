"""Where a plain encoder-decoder's files sit, its spec's fields, and its two vocabularies in seqviz's id order."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from seqviz.data.tokenizers import TokenizerError, read_vocab
from seqviz.files import WEIGHT_SUFFIXES, CheckpointError, read_json
from seqviz.seq2seq.conventions import USUAL, conventions
from seqviz.seq2seq.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab

SPEC_FIELDS = ("weights", "source_vocab", "target_vocab", "source_tokenizer", "target_tokenizer", "bos", "eos",
               "pad", "unk", "source_bos", "source_eos", "decoder_input", "keys", "attention", "output",
               "max_target_len")
ROLES = ("pad", "unk", "bos", "eos")  # seqviz's ids 0-3


# ------------------------------------------------------------------ files
def _pair(files: list[Path]) -> list[tuple[Path, str]] | None:
    """encoder.* + decoder.* (any suffix, any name holding "encoder"/"decoder"): the tutorial's two modules."""
    enc = [p for p in files if "encoder" in p.stem.lower()]
    dec = [p for p in files if "decoder" in p.stem.lower()]
    if len(files) == 2 and len(enc) == 1 and len(dec) == 1 and enc != dec:
        return [(enc[0], "encoder."), (dec[0], "decoder.")]
    return None


def find_files(path: Path) -> tuple[list[tuple[Path, str]], Path | None]:
    """([(weight file, key prefix)], spec JSON or None) for a weight file, an encoder/decoder pair or a folder."""
    if path.is_dir():
        spec = path / "spec.json" if (path / "spec.json").is_file() else None
        named = read_json(spec).get("weights") if spec else None
        if isinstance(named, str):
            named = {"": named}
        if isinstance(named, dict):
            files = []
            for side, name in named.items():
                target = path / Path(str(name)).name
                if side not in ("", "encoder", "decoder") or not target.is_file():
                    raise CheckpointError(spec, f'"weights" names {Path(str(name)).name}, which is not in the folder '
                                          '(give "weights": "<file>" or {"encoder": "<file>", "decoder": "<file>"})')
                files.append((target, f"{side}." if side else ""))
            return files, spec
        weights = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in WEIGHT_SUFFIXES)
        pair = _pair(weights)
        if pair:
            return pair, spec
        if len(weights) != 1:
            raise CheckpointError(path, f"{len(weights)} weight files ({', '.join(p.name for p in weights[:5])}); "
                                  "seqviz opens one file, or encoder.* + decoder.*; name them in spec.json "
                                  '({"weights": {"encoder": ..., "decoder": ...}})')
        return [(weights[0], "")], spec or _spec_beside(weights[0])
    if not path.is_file():
        raise CheckpointError(path, "no such file or folder")
    stem = path.stem.lower()
    for mine, other in (("encoder", "decoder"), ("decoder", "encoder")):
        partner = path.with_name(path.name.replace(mine, other)) if mine in stem else None
        if partner is not None and partner.is_file():
            spec = path.parent / "spec.json"
            return _pair([path, partner]), spec if spec.is_file() else None
    return [(path, "")], _spec_beside(path)


def _spec_beside(path: Path) -> Path | None:
    for spec in (path.with_suffix(".json"), path.parent / "spec.json"):
        if spec.is_file() and spec != path:
            return spec
    return None


def read_spec(spec_path: Path | None) -> dict:
    """The spec's fields (an empty spec without a file); unknown fields are refused by name (typos)."""
    if spec_path is None:
        return {}
    spec = read_json(spec_path)
    unknown = sorted(set(spec) - set(SPEC_FIELDS) - {"vocab", "tokenizer", "prefixes", "cell", "n_layers"})
    if unknown:
        raise CheckpointError(spec_path, f"unknown field {', '.join(map(repr, unknown[:3]))}; an encoder-decoder's "
                              f"spec has {', '.join(SPEC_FIELDS)}")
    for field in ("source_bos", "source_eos"):
        if spec.get(field) is not None and not isinstance(spec[field], bool):
            raise CheckpointError(spec_path, f'"{field}" must be true or false')
    return spec


# ------------------------------------------------------------------ vocabularies
class PlainVocab(Vocab):
    """A user's vocabulary in seqviz's id order: their pad, unk, start and end tokens at 0-3 (placeholders where
    they have none), then their other tokens in their order. ``user_ids[i]``: the file's id of seqviz id i."""

    def __init__(self, kind: str, tokens: list[str], user_ids: list[int | None]):
        if kind not in ("char", "word"):
            raise TokenizerError('a tokenizer is "char" or "word"')
        self.kind, self.tokens, self.user_ids = kind, list(tokens), list(user_ids)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.longest = max(len(t) for t in self.tokens)

    def split(self, text: str) -> list[tuple[str, bool]]:
        if self.kind == "char":
            return [(ch, ch in self.index) for ch in text]
        return [(w, w in self.index or w.lower() in self.index) for w in text.split()]

    def decode(self, ids) -> str:
        out = []
        for i in ids:
            if i == EOS_ID:
                break
            if i not in (PAD_ID, BOS_ID):
                out.append(self.strings([i])[0])
        return "".join(out) if self.kind == "char" else " ".join(out)

    def specials(self) -> dict:
        """Which of the user's tokens are the specials (None: the vocabulary has no such token)."""
        return {role: (self.tokens[i] if self.user_ids[i] is not None else None) for i, role in enumerate(ROLES)}


def _tokens(spec: dict, side: str, spec_path, folder: Path, size: int, key: str, shapes: str) -> list[str]:
    field = f"{side}_vocab"
    value, where = spec.get(field), spec_path or folder
    if value is None or isinstance(value, str):
        found = folder / (Path(value).name if isinstance(value, str) else f"{field}.json")
        if not found.is_file():
            raise CheckpointError(where, f"the weights say: {shapes}. seqviz also needs the {size:,} {side} tokens "
                                  f'in id order: give them in the spec as "{field}" (a list, or a file name), or put '
                                  f"{field}.json beside the weights")
        try:
            data = read_vocab(found)["tokens"]
        except TokenizerError as e:
            data = _index2word(found, e)
        value, where = data, found
    if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value):
        raise CheckpointError(where, f"the {side} vocabulary must be a list of non-empty token strings in id order")
    if len(value) != size:
        raise CheckpointError(where, f"the {side} vocabulary has {len(value):,} tokens but {key} has {size:,} rows")
    dup = [t for t, n in Counter(value).items() if n > 1]
    if dup:
        raise CheckpointError(where, f"the {side} vocabulary has duplicate tokens: {dup[:5]}")
    return value


def _index2word(path: Path, error: Exception) -> list[str]:
    """The tutorial's ``Lang.index2word`` saved as JSON: {"0": "SOS", "1": "EOS", ...}."""
    data = read_json(path)
    if data and all(k.isdigit() for k in data) and sorted(map(int, data)) == list(range(len(data))) \
            and all(isinstance(v, str) for v in data.values()):
        return [data[str(i)] for i in range(len(data))]
    raise CheckpointError(path, f"invalid vocabulary: {error}")


def _specials(tokens: list[str], spec: dict, side: str, where) -> dict[str, int | None]:
    """The file's id of each special token (None where the vocabulary has none)."""
    index = {t: i for i, t in enumerate(tokens)}
    ids = {}
    for role in ROLES:
        said = spec.get(role)
        if said is not None and not isinstance(said, str):
            raise CheckpointError(where, f'"{role}" must be a token string')
        ids[role] = index.get(said) if said is not None else next((index[t] for t in USUAL[role] if t in index), None)
    if side == "target":
        for role, what in (("bos", "start"), ("eos", "end")):
            if ids[role] is None:
                said = spec.get(role)
                raise CheckpointError(where, f"the target vocabulary has no {what} token "
                                      f"({repr(said) + ' is not in it' if said else 'none of ' + ', '.join(USUAL[role])}"
                                      f'); name it in the spec: "{role}": "..."')
    return ids


def _vocab(tokens: list[str], ids: dict, kind) -> PlainVocab:
    taken, user_ids, names = set(), [], []
    for role in ROLES:
        uid = ids[role] if ids[role] not in taken else None  # one token, one column (pad == SOS in the tutorial)
        taken.add(uid)
        user_ids.append(uid)
        name = tokens[uid] if uid is not None else f"<{role}>"
        while uid is None and name in tokens:
            name = f"<{role}:none>" if name == f"<{role}>" else name + "'"
        names.append(name)
    rest = [i for i in range(len(tokens)) if i not in taken]
    if kind is None:
        kind = "char" if all(len(tokens[i]) == 1 for i in rest if not tokens[i].startswith("<")) else "word"
    return PlainVocab(kind, names + [tokens[i] for i in rest], user_ids + rest)


def vocabularies(spec: dict, spec_path, weights: Path, info: dict, names: dict, spec_keys: int = 0) -> tuple:
    """(source PlainVocab, target PlainVocab, config flags, conventions) from the spec or the vocabulary files
    beside the weights; the layout's conventions (``conventions``) fill in what the spec does not say."""
    folder = weights.parent
    shapes = (f"a {info['cell'].upper()} encoder-decoder, {info['src_vocab_size']:,} source and "
              f"{info['tgt_vocab_size']:,} target tokens")
    where = spec_path or weights
    tokens = {side: _tokens(spec, side, spec_path, folder, size, key, shapes)
              for side, size, key in (("source", info["src_vocab_size"], names["enc_emb"]),
                                      ("target", info["tgt_vocab_size"], names["dec_emb"]))}
    found = conventions(info["layout"], spec, tokens["source"], tokens["target"], spec_keys)
    # the start/end names the spec or the layout gives; a guess is made per side (_specials' usual names)
    said = {**spec, **{role: found[role].value for role in ("bos", "eos") if found[role].origin != "guess"}}
    vocabs = []
    for side in ("source", "target"):
        kind = found[f"{side}_tokenizer"].value
        if kind not in ("char", "word"):
            raise CheckpointError(where, f'"{side}_tokenizer" must be "char" or "word"')
        ids = _specials(tokens[side], said, side, where)
        vocabs.append((_vocab(tokens[side], ids, kind), ids))
    (src, src_ids), (tgt, _) = vocabs
    flags = {"source_bos": found["source_bos"].value, "source_eos": found["source_eos"].value,
             "max_target_len": 120 if spec.get("max_target_len") is None else spec["max_target_len"]}
    for flag, role in (("source_bos", "bos"), ("source_eos", "eos")):
        if flags[flag] and src_ids[role] is None:
            raise CheckpointError(where, f'"{flag}" is true but the source vocabulary has no '
                                  f"{'start' if role == 'bos' else 'end'} token")
    return src, tgt, flags, found
