"""What every transformers causal LM of a recurrent family shares: the folder check, loading, the tokenizer, the inputs.

A family's own module (``seqviz.hf_mamba``, and each recurrence that follows it) subclasses ``HFCausalLM`` and
writes only its equations: ``classes`` (transformers' config and causal-LM classes of its ``model_type``s),
``shape_of`` (its sizes under LMConfig's names, what the recurrent-LM pages read of ``model.config``),
``architecture`` (the card's line), ``trace`` and ``sample``. Loading treats every folder as hostile (the Mamba's
rules, written once): safetensors only, ``trust_remote_code=False``, ``local_files_only=True``, the config's
tensors checked against the safetensors headers on the meta device before any weight is read, at most
``MAX_PARAMETERS``. The tokenizer is transformers' own (tokenizer files in the folder, wrapped by
``hf_mamba_text.TextTokenizer``) or seqviz's ``vocab.json`` (a folder ``seqviz train lm`` wrote).
torch and transformers are imported inside the functions: importing this module costs neither.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from seqviz.files import CheckpointError, read_json
from seqviz.pretrained import Pretrained, quiet_loading

MAX_PARAMETERS = 200_000_000  # what a CPU page can trace at all (mamba-130m is 130 M)
PICKLED = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def _stored_shapes(weights: list[Path]) -> dict[str, tuple]:
    """Every tensor's shape in the safetensors files, from their headers (nothing is read or run)."""
    from safetensors import safe_open

    stored: dict[str, tuple] = {}
    for f in weights:
        try:
            with safe_open(str(f), "pt") as h:
                stored.update({k: tuple(h.get_slice(k).get_shape()) for k in h.keys()})
        except Exception as e:  # noqa: BLE001 - a truncated or lying header
            raise CheckpointError(f, f"not a valid safetensors file ({str(e)[:120]})") from None
    return stored


def check_folder(folder: Path, lm) -> dict:
    """config.json of a folder ``lm`` (an ``HFCausalLM`` subclass) opens, with safetensors weights covering it
    exactly; otherwise one CheckpointError naming the file and the problem."""
    import torch

    config = read_json(folder / "config.json")
    kind = config.get("model_type")
    if kind not in lm.kinds:
        raise CheckpointError(folder / "config.json", f"not a transformers {lm.title} config (model_type must be "
                              f"{' or '.join(lm.kinds)})")
    config_class, lm_class = lm.classes(kind)
    weights = sorted(folder.glob("*.safetensors"))
    if not weights:
        pickled = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLED)
        hint = f"only pickled weights ({', '.join(pickled)}); seqviz never unpickles" if pickled else \
            "no model.safetensors (or sharded *.safetensors) in the folder"
        raise CheckpointError(folder, hint)
    try:
        cfg = config_class.from_pretrained(folder, local_files_only=True)
    except Exception as e:  # noqa: BLE001 - one line for the user
        raise CheckpointError(folder / "config.json", f"not a valid {kind} config ({type(e).__name__})") from None
    with torch.device("meta"):
        skeleton = lm_class(cfg)
    if sum(p.numel() for p in skeleton.parameters()) > MAX_PARAMETERS:
        raise CheckpointError(folder / "config.json", f"the config asks for more than {MAX_PARAMETERS:,} parameters")
    stored = _stored_shapes(weights)
    wanted = {k: tuple(v.shape) for k, v in skeleton.state_dict().items()}
    tied = "lm_head.weight" if getattr(cfg, "tie_word_embeddings", False) else None
    missing = [k for k in wanted if k not in stored and k != tied]
    wrong = [k for k in wanted if k in stored and stored[k] != wanted[k]]
    if missing or wrong:
        bad = (missing + wrong)[:3]
        raise CheckpointError(folder, f"the weights do not match config.json ({len(missing)} missing, {len(wrong)} "
                              f"of another shape, e.g. {', '.join(bad)}); refused rather than filled at random")
    return config


def seqviz_vocab(path: Path, vocab_size: int):
    """seqviz's tokenizer from a vocab.json, which must give the model's vocabulary exactly."""
    from seqviz.data.tokenizers import Tokenizer, TokenizerError

    try:
        tokenizer = Tokenizer.from_dict(read_json(path))
    except TokenizerError as e:
        raise CheckpointError(path, str(e)) from None
    if len(tokenizer) != vocab_size:
        raise CheckpointError(path, f"{len(tokenizer)} tokens, but config.json's vocab_size is {vocab_size}")
    return tokenizer


def with_tokenizer(tokenizer, vocab_size: int, shape):
    """(tokenizer behind seqviz's interface, ``shape`` saying its kind): seqviz's own is kept as it is (its kind:
    char or word), transformers' wrapped (kind subword), None stays None."""
    from seqviz.data.tokenizers import Tokenizer
    from seqviz.hf_mamba_text import TextTokenizer

    if isinstance(tokenizer, Tokenizer):
        return tokenizer, dataclasses.replace(shape, tokenizer=tokenizer.kind)
    return (None if tokenizer is None else TextTokenizer(tokenizer, vocab_size)), shape


class HFCausalLM(Pretrained):
    """A transformers causal LM of a recurrent family and its tokenizer, answering with traces. A subclass sets
    ``kinds`` and ``title`` and writes ``classes``, ``shape_of``, ``architecture``, ``trace`` and ``sample``."""

    model_type = "recurrent_lm"  # what a page asks for: the recurrent-LM pages open it
    folder_only = "a transformers checkpoint is a folder (config.json, model.safetensors, tokenizer files)"
    no_snapshots = "a transformers checkpoint keeps no seqviz training snapshots"
    kinds: tuple[str, ...] = ()  # the config.json model_types it opens
    title = ""  # how a refusal names it: "Mamba", "RWKV" ...

    def __init__(self, model, tokenizer=None, card: dict | None = None):
        """``tokenizer``: transformers' own, seqviz's own (its vocab.json), or None (ids only)."""
        self.model, self.card = model, dict(card or {})
        self.tokenizer, self.config = with_tokenizer(tokenizer, model.config.vocab_size, self.shape_of(model.config))

    @classmethod
    def classes(cls, kind: str):
        """transformers' (config class, causal-LM class) of a config's ``model_type``."""
        raise NotImplementedError

    @classmethod
    def shape_of(cls, hf_config):
        """The model's sizes under LMConfig's names (``n_layers``, ``d_hidden``, ``cell``, ``family`` ...)."""
        raise NotImplementedError

    @classmethod
    def architecture(cls, hf_config, shape) -> str:
        """The card's architecture line, after transformers' class name."""
        return f"{hf_config.num_hidden_layers} layers, hidden {hf_config.hidden_size}"

    @classmethod
    def _from_pretrained(cls, path: Path, snapshot: int | None = None) -> "HFCausalLM":
        kind = check_folder(path, cls)["model_type"]
        _config_class, lm_class = cls.classes(kind)
        try:
            from transformers import AutoTokenizer

            kwargs = {"local_files_only": True, "trust_remote_code": False}
            with quiet_loading():
                model = lm_class.from_pretrained(path, use_safetensors=True, **kwargs)
            has_tokenizer = any((path / f).is_file() for f in TOKENIZER_FILES)
            tokenizer = AutoTokenizer.from_pretrained(path, **kwargs) if has_tokenizer else None
        except Exception as e:  # noqa: BLE001 - transformers raises many kinds; the user needs one line
            raise CheckpointError(path, f"could not load it as a transformers {cls.title} ({type(e).__name__})") \
                from None
        if tokenizer is None and (path / "vocab.json").is_file():  # seqviz's own vocabulary (seqviz train lm)
            tokenizer = seqviz_vocab(path / "vocab.json", model.config.vocab_size)
        cfg = model.config
        card = {"name": path.name, "task": f"hf:{kind}", "path": str(path),
                "architecture": f"transformers {lm_class.__name__}, {cls.architecture(cfg, cls.shape_of(cfg))}",
                "parameters": sum(p.numel() for p in model.parameters())}
        if (path / "card.json").is_file():  # the trainer's card: corpus, validation loss, history
            card = {**card, **read_json(path / "card.json"), "path": str(path)}
        return cls(model.eval().requires_grad_(False), tokenizer, card)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def describe(self) -> dict:
        """What ``seqviz inspect`` prints: the family, sizes under LMConfig's names and the trace names."""
        cfg = self.config
        sizes = {k: v for k, v in dataclasses.asdict(cfg).items() if isinstance(v, int) and v and k not in
                 ("n_layers", "d_hidden", "d_embed", "vocab_size")}
        return {"model_type": self.model_type, "family": f"transformers {self.model.config.model_type}",
                "architecture": self.card.get("architecture"), "cell": cfg.cell, "layers": cfg.n_layers,
                "hidden": cfg.d_hidden, **sizes, "parameters": self.num_parameters(), "vocab_size": cfg.vocab_size,
                "trace_names": self.trace_names()}

    def _ids(self, inputs):
        """(ids [B, T], mask [B, T], pieces or None) of a text, texts, id lists or an id tensor (``read_inputs``)."""
        from seqviz.data.tokenizers import read_inputs

        return read_inputs(self.tokenizer, inputs, self.title)
    def inputs(self, inputs, mask=None):
        """(ids [B, T], mask [B, T] bool, pieces or None), checked: ids within the vocabulary, at least one."""
        ids, auto_mask, pieces = self._ids(inputs)
        mask = auto_mask if mask is None else mask.bool().reshape(ids.shape)
        if ids.numel() == 0:
            raise ValueError("nothing to trace: the input has no tokens")
        if int(ids.max()) >= self.config.vocab_size or int(ids.min()) < 0:
            raise ValueError(f"token ids must lie in [0, {self.config.vocab_size})")
        return ids, mask, pieces

    def banned(self) -> list[int]:
        """Token ids sampling never produces: the tokenizer's special tokens."""
        return list(self.tokenizer.special_ids) if self.tokenizer is not None else []
