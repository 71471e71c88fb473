"""What a lucidrains minLM state dict is, read from its keys and shapes alone (no torch): its layout, its
conventions as seqviz maps them, and what the weights cannot say.

``minGRU_pytorch.minLM`` (PyPI ``mingru-pytorch``) saves, with ``{p}`` any prefix (``model.``, ``_orig_mod.``)::

    {p}token_emb.weight                            [V, dim]
    {p}layers.{i}.0.net.0.weight / .bias           [dim, 1, k], [dim]   causal depthwise conv (enable_conv=True)
    {p}layers.{i}.0.net.1.weight / .bias           [dim, dim, 1], [dim]  its 1x1 mix
    {p}layers.{i}.1.weight                         [dim]               RMSNorm before the cell
    {p}layers.{i}.2.to_hidden_and_gate.weight      [2I, dim]           minGRU: rows (hidden, gate), no bias
    {p}layers.{i}.2.to_hidden_and_f_i_gate.weight  [3I, dim]           minLSTM (use_lstm=True): (hidden, f, i)
    {p}layers.{i}.2.to_out.weight                  [dim, I]            present iff expansion != 1 (I = int(dim·e))
    {p}layers.{i}.3.weight                         [dim]               RMSNorm before the feed-forward
    {p}layers.{i}.4.0.weight / .bias, 4.2.*        [F, dim], [dim, F]  Linear → GELU → Linear (F = int(dim·ff_mult))
    {p}norm.weight, {p}to_logits.weight            [dim], [V, dim]     final RMSNorm, head without bias

seqviz's minGRU keeps rows (update, new) with z = σ(update) the share of h_(t−1) kept (PyTorch's GRU convention);
lucidrains' gate writes, h_t = lerp(h_(t−1), g(h̃_t), σ(gate)), so seqviz's update rows are −gate and its bias zero.
minLSTM's (hidden, f, i) become seqviz's (input, forget, cell) = (i, f, hidden).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from seqviz.config import JsonConfig
from seqviz.data.tokenizers import Encoded
from seqviz.files import CheckpointError, read_json

CELL_KEYS = {"to_hidden_and_gate": ("minlm", 2), "to_hidden_and_f_i_gate": ("minlm_lstm", 3)}
CELL = re.compile(r"^(?P<prefix>(?:.*\.)?)layers\.(?P<layer>\d+)\.2\.(?P<cell>to_hidden_and_gate|"
                  r"to_hidden_and_f_i_gate)\.weight$")
NOT_INFERRED = (
    "RMSNorm's epsilon is not in the weights: minLM builds RMSNorm(dim), whose epsilon is torch's default "
    "(float32 machine epsilon, 1.19e-07); a spec's \"rms_eps\" says otherwise",
    "the tokens are not in the weights: vocab.json beside them (the 256 bytes in id order as a JSON list) or a "
    "spec's \"tokenizer\": \"bytes\" (UTF-8 bytes, as minLM's enwik8 training reads them)",
    "dropout is not in the weights; it does nothing in evaluation")


@dataclass(frozen=True)
class MinLMConfig(JsonConfig):
    """A minLM's sizes under the recurrent LM's config names (what the pages read), and what its weights imply."""

    cell: str = "minlm"  # its family: "minlm" (minGRU blocks) or "minlm_lstm" (minLSTM blocks, use_lstm=True)
    n_layers: int = 2  # blocks (depth)
    d_embed: int = 64  # dim: the embedding and the residual stream (layers.{i}.stream)
    d_hidden: int = 96  # I = int(dim · expansion): the cell's state layers.{i}.h
    d_ff: int = 256  # the feed-forward's width, int(dim · ff_mult)
    conv_kernel: int = 0  # the causal depthwise conv before each block (0: enable_conv=False)
    out_proj: bool = True  # to_out maps h back to dim (minLM: whenever expansion != 1)
    rms_eps: float | None = None  # RMSNorm's epsilon (None: torch's default, the dtype's machine epsilon)
    tokenizer: str = "bytes"  # "bytes" (UTF-8, 256 ids), "char" or "word" (a vocab.json)
    vocab_size: int = 256  # rows of token_emb
    dropout: float = 0.0  # not in the weights; nothing in evaluation

    model_type = "minlm"

    @classmethod
    def of(cls, info: dict, tokenizer: str, rms_eps=None) -> "MinLMConfig":
        """The config of a ``layout`` read off a state dict."""
        return cls(info["family"], info["n_layers"], info["dim"], info["inner"], info["ff"], info["kernel"],
                   info["out_proj"], rms_eps, tokenizer, info["vocab_size"])

    @classmethod
    def read(cls, path) -> "MinLMConfig":
        """From a config.json ``save_pretrained`` wrote; CheckpointError naming it otherwise."""
        from seqviz.config import ConfigError
        from seqviz.files import check_version

        data = read_json(path)
        check_version(data, path)
        try:
            return cls.from_dict({k: v for k, v in data.items() if k != "format_version"})
        except (ConfigError, TypeError) as e:
            raise CheckpointError(path, f"not a minLM config ({e})") from None


class ByteTokenizer:
    """UTF-8 bytes as tokens (ids 0..255), as minLM's training reads enwik8; each character's piece is its first
    byte's (the others' are empty), so the pieces join back into the text."""

    kind = "bytes"
    unk_id = None
    special_ids: list[int] = []
    tokens = [chr(i) if 32 < i < 127 else f"<0x{i:02X}>" for i in range(256)]

    def __len__(self) -> int:
        return 256

    def encode(self, text: str) -> Encoded:
        ids, pieces = [], []
        for char in text:
            raw = char.encode("utf-8")
            ids += list(raw)
            pieces += [char] + [""] * (len(raw) - 1)
        return Encoded(ids, pieces, [])

    def decode(self, ids) -> str:
        return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", errors="replace")

    def to_dict(self) -> dict:
        return {"kind": "bytes"}


def read_tokenizer(folder, spec: dict, spec_path, size: int, shapes: str, weights=None):
    """The tokens of a minLM: a spec's "tokenizer": "bytes", a vocab.json saying so, or a vocabulary of ``size``
    tokens in id order (``plain._vocab``'s rules: the spec's "vocab", <weights>.vocab.json or vocab.json)."""
    from seqviz.data.tokenizers import Tokenizer, TokenizerError

    found = folder / "vocab.json"
    saved = None
    if found.is_file() and spec.get("vocab") is None:
        try:
            saved = read_json(found)  # seqviz's {"kind": ...}; a plain list is read by ``plain._vocab`` below
        except CheckpointError:
            pass
    if spec.get("tokenizer") == "bytes" or (isinstance(saved, dict) and saved.get("kind") == "bytes"):
        if size != 256:
            raise CheckpointError(spec_path or found, f"UTF-8 bytes are 256 tokens, but token_emb has {size} rows")
        return ByteTokenizer()
    if weights is None:  # a folder seqviz wrote: its vocab.json
        tokens = saved
    else:
        from seqviz.plain import _vocab

        try:
            tokens = _vocab(weights, spec, spec_path, size, shapes)
        except CheckpointError as e:
            raise CheckpointError(e.path, e.problem + ', or "tokenizer": "bytes" in a spec when it read UTF-8 bytes '
                                  "(spec.json beside the weights)") from None
    try:
        tokenizer = Tokenizer.from_dict(tokens) if spec.get("tokenizer") is None else \
            Tokenizer(spec["tokenizer"], list(tokens))
    except TokenizerError as e:
        raise CheckpointError(spec_path or found, str(e)) from None
    if len(tokenizer) != size:
        raise CheckpointError(found, f"{len(tokenizer)} tokens, but token_emb has {size} rows")
    return tokenizer


def claims(keys) -> bool:
    """Whether a state dict's keys are a minLM's: a token embedding and a minGRU/minLSTM block."""
    keys = set(keys)
    return any(CELL.match(k) for k in keys) and any(k.endswith("token_emb.weight") for k in keys)


def layout(shapes: dict[str, tuple], where) -> dict:
    """The minLM in ``shapes`` ({key: shape}): its sizes, the user's prefix and conventions; CheckpointError naming
    the key that does not fit."""
    found = [m for m in map(CELL.match, shapes) if m]
    if not found:
        raise CheckpointError(where, "no minLM block found: expected keys such as layers.0.2.to_hidden_and_gate.weight")
    prefix, kind = found[0].group("prefix"), found[0].group("cell")
    family, rows = CELL_KEYS[kind]
    layers = sorted(int(m.group("layer")) for m in found if m.group("prefix") == prefix)
    if layers != list(range(len(layers))) or any(m.group("cell") != kind for m in found):
        raise CheckpointError(where, f"minLM blocks {layers} under {prefix or '(no prefix)'}: expected blocks 0.."
                              f"{len(layers) - 1}, all minGRU or all minLSTM")

    def shape(key, want=None):
        got = shapes.get(prefix + key)
        if got is None:
            raise CheckpointError(where, f"missing tensor {prefix}{key}")
        if want is not None and tuple(got) != tuple(want):
            raise CheckpointError(where, f"{prefix}{key} has shape {tuple(got)}, expected {tuple(want)}")
        return tuple(got)

    vocab, dim = shape("token_emb.weight")
    proj = shape(f"layers.0.2.{kind}.weight")
    if proj[1] != dim or proj[0] % rows:
        raise CheckpointError(where, f"{prefix}layers.0.2.{kind}.weight has shape {proj}: not [{rows}·I, {dim}]")
    inner, ff = proj[0] // rows, shape("layers.0.4.0.weight")[0]
    out_proj = prefix + "layers.0.2.to_out.weight" in shapes
    conv = shapes.get(prefix + "layers.0.0.net.0.weight")
    kernel = int(conv[-1]) if conv is not None else 0
    if not out_proj and inner != dim:
        raise CheckpointError(where, f"no {prefix}layers.0.2.to_out.weight, but the cell is {inner} wide and the "
                              f"stream {dim}: minLM projects back whenever expansion != 1")
    for i in range(len(layers)):
        p = f"layers.{i}."
        shape(p + f"2.{kind}.weight", (rows * inner, dim))
        if out_proj:
            shape(p + "2.to_out.weight", (dim, inner))
        for norm in ("1.weight", "3.weight"):
            shape(p + norm, (dim,))
        shape(p + "4.0.weight", (ff, dim)), shape(p + "4.2.weight", (dim, ff))
        if kernel:
            shape(p + "0.net.0.weight", (dim, 1, kernel)), shape(p + "0.net.1.weight", (dim, dim, 1))
    shape("norm.weight", (dim,)), shape("to_logits.weight", (vocab, dim))
    return {"family": family, "prefix": prefix, "kind": kind, "n_layers": len(layers), "dim": dim, "inner": inner,
            "ff": ff, "kernel": kernel, "out_proj": out_proj, "vocab_size": vocab}


def conventions(info: dict) -> list[str]:
    """What seqviz read off the keys and shapes, one sentence each (``seqviz inspect`` prints them)."""
    p, dim, inner = info["prefix"], info["dim"], info["inner"]
    said = [f"{info['n_layers']} blocks of {'minGRU' if info['family'] == 'minlm' else 'minLSTM'} "
            f"({p}layers.{{i}}.2.{info['kind']}.weight), stream {dim} wide, state {inner} wide "
            f"(expansion {inner / dim:g}{', projected back by to_out' if info['out_proj'] else ', no to_out'})"]
    if info["family"] == "minlm":
        said.append("minGRU's gate writes (h_t = lerp(h_(t−1), g(h̃_t), σ(gate))): seqviz's update gate z = σ(−gate) "
                    "keeps; rows (hidden, gate) read as seqviz's (update, new) = (−gate, hidden)")
    else:
        said.append("minLSTM's rows (hidden, f, i) read as seqviz's (input, forget, cell) = (i, f, hidden), "
                    "f′ = f/(f + i) and i′ = i/(f + i) as on seqviz's minLSTM")
    said += ["no bias in the cell's projection (seqviz's bias: zero)",
             f"a causal depthwise conv of kernel {info['kernel']} before each block" if info["kernel"]
             else "no conv before the blocks (enable_conv=False)",
             f"feed-forward Linear → GELU → Linear, {info['ff']} wide (ff_mult {info['ff'] / dim:g}), RMSNorm with a "
             "learned weight before the cell, the feed-forward and the head",
             f"to_logits without bias and not tied to token_emb; {info['vocab_size']} tokens"]
    return said


def to_seqviz(tensors: dict, info: dict) -> dict:
    """The user's tensors under ``lucid_minlm.MinLM``'s names, the cell's rows in seqviz's convention."""
    import torch

    p, inner = info["prefix"], info["inner"]
    out = {"embed.weight": tensors[p + "token_emb.weight"], "norm.weight": tensors[p + "norm.weight"],
           "head.weight": tensors[p + "to_logits.weight"]}
    for i in range(info["n_layers"]):
        src, dst = f"{p}layers.{i}.", f"blocks.{i}."
        rows = tensors[f"{src}2.{info['kind']}.weight"].split(inner)
        out[dst + "cell.proj.weight"] = torch.cat([-rows[1], rows[0]]) if info["family"] == "minlm" else \
            torch.cat([rows[2], rows[1], rows[0]])
        out[dst + "cell.proj.bias"] = torch.zeros(len(rows) * inner)
        moved = {"1.weight": "norm.weight", "3.weight": "ff_norm.weight", "4.0.weight": "ff.0.weight",
                 "4.0.bias": "ff.0.bias", "4.2.weight": "ff.2.weight", "4.2.bias": "ff.2.bias"}
        if info["out_proj"]:
            moved["2.to_out.weight"] = "to_out.weight"
        if info["kernel"]:
            moved.update({f"0.net.{j}.{w}": f"conv.{j}.{w}" for j in (0, 1) for w in ("weight", "bias")})
        out.update({dst + b: tensors[src + a] for a, b in moved.items() if src + a in tensors})
    return out
