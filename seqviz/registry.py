"""One table of model families, and ``load``: open any checkpoint folder or file a user points at.

Every family follows the same protocol (Hugging Face's ``from_pretrained``/``save_pretrained``)::

    model_type                      the family's name in config.json ("recurrent_lm", "seq2seq", ...)
    config_class                    the config dataclass (``JsonConfig``) config.json round-trips through
    from_pretrained(path, snapshot=None, **options) -> model
    save_pretrained(folder, card=None) -> folder    (not transformers models: use theirs)
    trace(inputs, names=None)       a ``Trace``; ``names`` keeps only those (``None``: every name)
    trace_names()                   every name ``trace`` can return, in order

The two ``*_pretrained`` are ``seqviz.pretrained.Pretrained``'s, written once; a family overrides
only ``_from_pretrained`` / ``_save_pretrained``.

``FAMILIES`` is the only list of them. ``detect(path)`` tells, from the files alone and without
importing torch, which family opens a path; ``load(path_or_repo_id)`` opens it. Adding a family
is one entry here plus its class.

What a user's own files may be (``detect``):

* a seqviz checkpoint folder: ``config.json`` names its ``model_type``;
* a transformers encoder-decoder folder (``config.json`` of Marian, T5, BART ...);
* a transformers Mamba causal LM folder (``config.json`` with ``model_type: mamba`` or ``mamba2``, ``seqviz.hf_mamba``);
* a transformers FalconMamba folder (``model_type: falcon_mamba``, ``seqviz.hf_falcon_mamba``);
* lucidrains' minLM state dict (``mingru-pytorch``), a file or a folder holding one, told by its keys
  (``seqviz.lucid_minlm_keys.claims``: a row's ``claims``);
* a plain PyTorch language model's state dict (``nn.Embedding`` + ``nn.RNN/GRU/LSTM`` +
  ``nn.Linear``): a ``.safetensors``/``.pt``/``.pth``/``.bin``/``.npz`` file, or a folder holding one
  weight file and no ``config.json``; cell and sizes come from the weight shapes (``seqviz.plain``);
* a plain PyTorch encoder-decoder's state dict (``seqviz.seq2seq.plain``): such a file whose keys hold
  two recurrent modules, one under an "enc" name and one under a "dec" name, or ``encoder.*`` +
  ``decoder.*`` files, or a spec naming source and target vocabularies; its keys are read from the
  safetensors header, the ``.npz`` listing or the pickle's opcodes (never run), so no torch is imported;
* word vectors: a seqviz word2vec folder, or a word2vec binary/text, GloVe text or fastText
  ``.bin`` file (``seqviz.word2vec.formats``).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

from seqviz.files import PICKLE_SUFFIXES, WEIGHT_SUFFIXES, CheckpointError, read_json
from seqviz.text import N_

VECTOR_SUFFIXES = (".vec", ".txt", ".w2v", ".glove")
TORCH_ZIP_MAGIC = b"PK\x03\x04"  # torch.save's zip container (and any zip)
# model_type of common transformers encoder-decoders whose config.json lacks is_encoder_decoder
HF_SEQ2SEQ_TYPES = frozenset({"marian", "bart", "mbart", "t5", "mt5", "umt5", "longt5", "pegasus", "pegasus_x",
                              "m2m_100", "fsmt", "led", "blenderbot", "blenderbot-small", "plbart", "prophetnet",
                              "bigbird_pegasus", "nllb-moe"})


@dataclass(frozen=True)
class Family:
    """One row of the table: how a format is named and which class opens it."""

    name: str  # the format: what ``detect`` returns and ``inspect`` prints
    model_type: str  # what a page asks for: "recurrent_lm", "seq2seq" or "word2vec"
    target: str  # "module:Class", imported on first use (listing families costs no torch import)
    description: str  # an English msgid (the app shows it translated)
    shape: str = ""  # "module:function(folder) -> config" read from config.json alone, without torch
    info: str = ""  # "module:function(folder) -> (config, tokenizer)": what a page draws from before any torch
    needs_torch: bool = True  # opening it imports torch (word vectors are numpy: their pages never do)
    accepts_limit: bool = False  # a file of it can be read in part, its ``limit`` most frequent rows first
    guesses_framing: bool = False  # its source framing comes from a layout or a guess: check it on the user's pairs
    claims: str = ""  # "module:function(keys) -> bool": the plain state dicts of its own layout (keys read without torch)

    def owns(self, keys: set[str]) -> bool:
        """Whether a plain state dict with these keys is of this format's own layout (``claims``)."""
        if not self.claims:
            return False
        module, name = self.claims.split(":")
        return bool(getattr(importlib.import_module(module), name)(keys))

    @property
    def cls(self):
        module, name = self.target.split(":")
        return getattr(importlib.import_module(module), name)

    def read_shape(self, folder):
        """The config a page reads (its family, sizes), from the folder's files alone; None where the
        format has no torch-free reader (then the loaded model's config is the one)."""
        if not self.shape:
            return None
        module, name = self.shape.split(":")
        return getattr(importlib.import_module(module), name)(Path(folder))

    def opens_on(self, pages: str) -> bool:
        """Whether checkpoints of this format open on the pages of ``pages`` (one of ``MODEL_TYPES``)."""
        return self.model_type == pages

    def read_info(self, folder):
        """(config, tokenizer) from the folder's files alone, without torch; None where the format has no such
        reader (then the loaded model holds them). An encoder-decoder's tokenizer is None (it has two vocabularies)."""
        if not self.info:
            return None
        module, name = self.info.split(":")
        return getattr(importlib.import_module(module), name)(Path(folder))


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("recurrent_lm", "recurrent_lm", "seqviz.models.recurrent:RecurrentLM",
           N_("a seqviz character/word language model (RNN, GRU or LSTM)"), info="seqviz.files:read_lm_info"),
    Family("state_dict", "recurrent_lm", "seqviz.plain:StateDictLM",
           N_("a plain PyTorch language model's state dict (nn.Embedding + nn.RNN/GRU/LSTM + nn.Linear)")),
    Family("seq2seq", "seq2seq", "seqviz.seq2seq.model:Seq2Seq",
           N_("a seqviz RNN encoder-decoder (with or without Bahdanau attention)"), info="seqviz.seq2seq.config:read_info"),
    Family("plain_seq2seq", "seq2seq", "seqviz.seq2seq.plain:StateDictSeq2Seq",
           N_("a plain PyTorch encoder-decoder's state dict (the PyTorch tutorial's or bentrevett's layout, or a key map)"),
           guesses_framing=True),
    Family("transformers", "seq2seq", "seqviz.hf_seq2seq:HFSeq2Seq",
           N_("a transformers encoder-decoder (Marian, T5, BART ...), safetensors only")),
    Family("word2vec", "word2vec", "seqviz.word2vec.vectors:WordVectors",
           N_("word vectors (a seqviz word2vec folder, word2vec/GloVe text or binary, fastText .bin)"),
           needs_torch=False, accepts_limit=True),
    Family("mamba", "recurrent_lm", "seqviz.hf_mamba:MambaLM",  # a language model: on the recurrent-LM pages
           N_("a transformers Mamba or Mamba-2 language model (selective state space), safetensors only"),
           shape="seqviz.hf_mamba_text:read_shape"),
    Family("falcon_mamba", "recurrent_lm", "seqviz.hf_falcon_mamba:FalconMambaLM",
           N_("a transformers FalconMamba language model (Mamba with RMS-normalised B, C, Δ), safetensors only"),
           shape="seqviz.hf_falcon_mamba:read_shape"),
    Family("minlm", "recurrent_lm", "seqviz.lucid_minlm:MinLM",
           N_("lucidrains' minLM state dict (mingru-pytorch: minGRU or minLSTM blocks, RMSNorm, feed-forward)"),
           claims="seqviz.lucid_minlm_keys:claims"),
    Family("recurrent_gemma", "recurrent_lm", "seqviz.hf_rgemma:RecurrentGemmaLM",
           N_("a transformers RecurrentGemma language model (Griffin or Hawk: the RG-LRU), safetensors only"),
           shape="seqviz.hf_rgemma:read_shape"),
    Family("xlstm", "recurrent_lm", "seqviz.hf_xlstm:XLSTMLM",  # mLSTM blocks: seqviz.families.xlstm
           N_("a transformers xLSTM language model (mLSTM matrix memory), safetensors only"),
           shape="seqviz.hf_xlstm:read_shape"),
    Family("rwkv", "recurrent_lm", "seqviz.hf_rwkv:RwkvLM",  # RWKV-4's WKV recurrence (seqviz.families.rwkv)
           N_("a transformers RWKV-4 language model (attention as a recurrence per channel), safetensors only"),
           shape="seqviz.hf_rwkv:read_shape"),
)}
MODEL_TYPES = ("recurrent_lm", "seq2seq", "word2vec")  # what pages ask for
SHIPPED_FORMATS = frozenset(FAMILIES)  # the formats above; ``register`` adds others (a plug-in, a test's toy)


def register(row: Family) -> Family:
    """Add a format row (its config.json's ``model_type`` is ``row.name``) and return it: with its entry in
    ``seqviz.families``, all a new recurrent family needs for ``load``, ``detect`` and every page."""
    if row.name in SHIPPED_FORMATS:
        raise ValueError(f"{row.name!r} is one of seqviz's own formats")
    FAMILIES[row.name] = row
    return row


def unregister(name: str) -> None:
    """Remove a format ``register`` added."""
    if name not in SHIPPED_FORMATS:
        FAMILIES.pop(name, None)


def is_hf_seq2seq(config: dict) -> bool:
    """Whether a config.json dict describes a transformers encoder-decoder (not a seqviz model)."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type in FAMILIES:
        return False
    return config.get("is_encoder_decoder") is True or model_type in HF_SEQ2SEQ_TYPES


def model_family(config: dict) -> str:
    """The seqviz model_type a config belongs to: transformers encoder-decoders count as seq2seq."""
    if is_hf_seq2seq(config):
        return "seq2seq"
    return str(config.get("model_type", "recurrent_lm"))


def _weight_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in WEIGHT_SUFFIXES)


def _config_family(config_path: Path) -> Family:
    config = read_json(config_path)
    model_type = config.get("model_type", "recurrent_lm")  # LMs saved before model_type existed
    if not isinstance(model_type, str):
        raise CheckpointError(config_path, "model_type must be a string")
    if model_type in FAMILIES and FAMILIES[model_type].name not in ("state_dict", "transformers"):
        return FAMILIES[model_type]  # seqviz's own, and transformers' "mamba" (its model_type is the family's)
    if model_type == "mamba2":  # the same pages and trace names (seqviz.hf_mamba)
        return FAMILIES["mamba"]
    if is_hf_seq2seq(config):
        return FAMILIES["transformers"]
    # The value itself is not repeated: config.json may be a file the visitor did not write.
    raise CheckpointError(config_path, "its model_type is not one seqviz opens (seqviz's own: recurrent_lm, "
                          "seq2seq, word2vec; or a transformers encoder-decoder such as marian, t5, bart; or a "
                          "transformers mamba, mamba2 or xlstm)")


RNN_HH = re.compile(r"(?:^|\.)weight_hh_l\d+(?:_reverse)?$")
SEQ2SEQ_SPEC = ("source_vocab", "target_vocab", "source_tokenizer", "target_tokenizer", "source_eos", "source_bos",
                "decoder_input")
MAX_HEADER_BYTES = 64 << 20


def weight_keys(path: Path) -> set[str]:
    """The tensor names a weight file holds, read without torch and without running anything (empty if unknown)."""
    import json
    import pickletools
    import zipfile

    suffix = path.suffix.lower()
    try:
        if suffix == ".safetensors":
            with path.open("rb") as f:
                n = int.from_bytes(f.read(8), "little")
                header = json.loads(f.read(n)) if 0 < n <= MAX_HEADER_BYTES else {}
            return set(header) - {"__metadata__"} if isinstance(header, dict) else set()
        if not zipfile.is_zipfile(path):
            return set()
        with zipfile.ZipFile(path) as archive:
            if suffix == ".npz":
                return {n.removesuffix(".npy") for n in archive.namelist()}
            pickles = [m for m in archive.infolist() if m.filename.endswith("data.pkl")]
            if len(pickles) != 1 or pickles[0].file_size > MAX_HEADER_BYTES:
                return set()
            data = archive.read(pickles[0])
        return {arg for _op, arg, _pos in pickletools.genops(data) if isinstance(arg, str)}  # parsed, never run
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, NotImplementedError):
        return set()


def _side(key: str) -> str | None:
    first = key.split(".")[0].lower()
    return "enc" if "enc" in first and "dec" not in first else "dec" if "dec" in first and "enc" not in first else None


def is_encoder_decoder(keys: set[str]) -> bool:
    """Keys of two recurrent modules, under an encoder and a decoder name (or two nested state dicts so named)."""
    recurrent = [k for k in keys if RNN_HH.search(k)]
    if {_side(k) for k in recurrent} >= {"enc", "dec"}:
        return True
    # {"encoder": sd, "decoder": sd} saved with torch.save: its keys are unprefixed ("gru.weight_hh_l0"); a
    # pickled state dict also holds its module names ("encoder", "decoder" of word_language_model's LM) as strings
    nested = ({"encoder", "decoder"} <= keys and not any(k.startswith(("encoder.", "decoder.")) for k in keys)) \
        or {"encoder_state_dict", "decoder_state_dict"} <= keys
    return bool(recurrent) and nested


def _plain_family(weights: list[Path], spec: Path | None) -> Family:
    """A plain state dict: an encoder-decoder's (by its files, spec or keys) or a language model's."""
    data = read_json(spec) if spec is not None and spec.is_file() else {}
    if set(data) & set(SEQ2SEQ_SPEC + ("keys",)):
        keys = data.get("keys")
        if set(data) & set(SEQ2SEQ_SPEC) or (isinstance(keys, dict) and any(
                str(k).startswith(("enc_", "dec_", "attn_", "out_")) for k in keys)):
            return FAMILIES["plain_seq2seq"]
    stems = [p.stem.lower() for p in weights]
    if len(weights) == 2 and sum("encoder" in s for s in stems) == 1 and sum("decoder" in s for s in stems) == 1:
        return FAMILIES["plain_seq2seq"]
    keys = weight_keys(weights[0]) if len(weights) == 1 else set()
    if is_encoder_decoder(keys):
        return FAMILIES["plain_seq2seq"]
    return next((row for row in FAMILIES.values() if row.owns(keys)), FAMILIES["state_dict"])


def _partner(path: Path) -> Path | None:
    """decoder.pt beside encoder.pt (and the other way round)."""
    for mine, other in (("encoder", "decoder"), ("decoder", "encoder")):
        if mine in path.stem.lower():
            partner = path.with_name(path.name.replace(mine, other))
            if partner.is_file() and partner != path:
                return partner
    return None


def detect(path) -> Family:
    """The family that opens ``path`` (a folder or a file), from its files alone; CheckpointError if none."""
    path = Path(path)
    if path.is_dir():
        if (path / "config.json").is_file():
            return _config_family(path / "config.json")
        if (path / "vectors.safetensors").is_file():
            raise CheckpointError(path, "a word2vec folder needs its config.json")
        weights = _weight_files(path)
        if weights:
            spec = path / "spec.json" if (path / "spec.json").is_file() else weights[0].with_suffix(".json")
            return _plain_family(weights, spec)
        vectors = sorted(p.name for p in path.iterdir() if p.suffix.lower() in VECTOR_SUFFIXES)
        shown = ", ".join(sorted(p.name for p in path.iterdir() if not p.name.startswith("."))[:8]) or "nothing"
        hint = (f"; for word vectors give the file itself ({vectors[0]})" if vectors else "")
        raise CheckpointError(path, "not a checkpoint folder: no config.json and no weight file "
                              f"(.safetensors, .pt, .pth, .bin, .npz); it holds {shown}{hint}")
    if not path.is_file():
        raise CheckpointError(path, "no such file or folder")
    suffix = path.suffix.lower()
    if suffix == ".json":
        raise CheckpointError(path, "this is a JSON file; give the checkpoint folder, or the weight file "
                              "the JSON describes")
    spec = next((p for p in (path.with_suffix(".json"), path.parent / "spec.json") if p.is_file()), None)
    if suffix in (".safetensors", ".pt", ".pth", ".npz"):
        partner = _partner(path)
        return _plain_family([path, partner] if partner else [path], spec)
    if suffix == ".bin":
        with path.open("rb") as f:
            head = f.read(4)
        if head == TORCH_ZIP_MAGIC or spec is not None:
            return _plain_family([path], spec)  # torch.save's zip, or a spec names it a state dict
        return FAMILIES["word2vec"]  # word2vec C binary or fastText binary (formats.py sniffs which)
    if suffix in VECTOR_SUFFIXES or suffix in PICKLE_SUFFIXES:
        return FAMILIES["word2vec"]  # pickles: refused there with the export hint
    raise CheckpointError(path, f"unsupported file type {suffix or '(none)'}: seqviz opens checkpoint folders, "
                          "state dicts (.safetensors, .pt, .pth, .bin, .npz) and word vectors (.vec, .txt, .bin)")


def model_type_of(path) -> str:
    """What a page would get from ``load(path)``: "recurrent_lm", "seq2seq" or "word2vec"."""
    return detect(path).model_type


def load(path_or_repo_id, snapshot: int | None = None, **options):
    """Open any checkpoint folder or file a user points at (or a Hub repo id, online).

    On the CPU, in eval mode, with no gradients. ``snapshot``: the weights saved at that
    training step (``snapshots/step-<n>.safetensors``). ``options`` go to the family's
    ``_from_pretrained`` (word vectors: ``limit=N`` reads only the N most frequent words).
    Every failure is one ``CheckpointError`` naming the file and the problem.
    """
    from seqviz.hub import resolve

    import inspect

    path = resolve(path_or_repo_id)
    family = detect(path)
    accepted = inspect.signature(family.cls._from_pretrained).parameters
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise CheckpointError(path, f"this is {family.description}; option {', '.join(unknown)} does not apply to it")
    return family.cls.from_pretrained(path, snapshot=snapshot, **options)
