"""A plain PyTorch language model's state dict, opened with cell and sizes read from the weight shapes.

The layout is PyTorch's own word_language_model example (and most hand-written char-RNNs)::

    <embed>.weight                 [V, E]      nn.Embedding
    <rnn>.weight_ih_l{i}           [G*H, In]   nn.RNN / nn.GRU / nn.LSTM, any number of layers
    <rnn>.weight_hh_l{i}           [G*H, H]    G = 1 (RNN), 3 (GRU), 4 (LSTM)
    <rnn>.bias_ih_l{i}, bias_hh_l{i}           (optional: bias=False layers load with zero biases)
    <head>.weight, <head>.bias     [V, H], [V] nn.Linear (absent: tied to the embedding when E = H)

Any module prefix works (``rnn.``, ``lstm.``, ``encoder.``, ``model.rnn.`` ...): the recurrent
layers are found by their ``weight_ih_l0``/``weight_hh_l0`` names, the cell by the ratio of
rows to columns of ``weight_hh_l0``, the embedding and the head by their shapes. ``batch_first``
does not change the weights, so it never needs saying.

Where the files sit (one rule): the weights are a ``.safetensors``/``.pt``/``.pth``/``.bin`` file
(a ``.pt`` must load with ``torch.load(weights_only=True)``); the optional spec JSON is
``spec.json`` in the same folder or ``<weights stem>.json`` beside it; the vocabulary is the
spec's ``"vocab"`` (a list, or a file name), else ``vocab.json`` in the same folder. A vocabulary
file may be a JSON list of tokens in id order, seqviz's own ``{"kind": ..., "tokens": [...]}``, or a
``{"token": id}`` mapping. The spec is needed only for what shapes cannot say::

    {"vocab": [...] | "file.json", "tokenizer": "char" | "word",
     "cell": "lstm", "n_layers": 2,                       # optional: checked against the shapes
     "prefixes": {"embed": "encoder", "rnn": "rnn", "head": "decoder"}}   # optional
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from seqviz.checkpoints import CheckpointError, materialize, read_json, read_weights
from seqviz.config import CELLS, ConfigError, LMConfig
from seqviz.data.tokenizers import Tokenizer, TokenizerError, read_vocab
from seqviz.files import WEIGHT_SUFFIXES
from seqviz.models.recurrent import RecurrentLM

GATES = {1: "rnn", 3: "gru", 4: "lstm"}  # rows of weight_hh / hidden size -> cell
ROWS = {cell: g for g, cell in GATES.items()}
RNN_KEY = re.compile(r"^(?P<prefix>(?:.*\.)?)weight_hh_l(?P<layer>\d+)(?P<reverse>_reverse)?$")
EMBED_HINTS = ("embed", "emb", "encoder", "wte", "word")
HEAD_HINTS = ("head", "decoder", "fc", "linear", "out", "proj", "lm_head")


def find_files(path: Path) -> tuple[Path, Path | None]:
    """(weight file, spec JSON or None) for a weight file or a folder holding one."""
    if path.is_dir():
        spec = path / "spec.json"
        named = None
        if spec.is_file():
            named = read_json(spec).get("weights")
        weights = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in WEIGHT_SUFFIXES)
        if isinstance(named, str):
            target = path / Path(named).name
            if not target.is_file():
                raise CheckpointError(spec, f"names weights {Path(named).name}, which is not in the folder")
            return target, spec
        if not weights:
            raise CheckpointError(path, "no weight file (.safetensors, .pt, .pth, .bin) in the folder")
        if len(weights) > 1:
            raise CheckpointError(path, f"{len(weights)} weight files ({', '.join(p.name for p in weights[:5])}); "
                                  'open one of them, or name it in spec.json ({"weights": "<file>"})')
        if spec.is_file():
            return weights[0], spec
        return find_files(weights[0])
    for spec in (path.with_suffix(".json"), path.parent / "spec.json"):
        if spec.is_file() and spec != path:
            return path, spec
    misnamed = path.parent / f"{path.name}.json"
    if misnamed.is_file():  # a spec that would be silently ignored: say where it belongs instead
        raise CheckpointError(misnamed, f"a spec is read from {path.with_suffix('.json').name} beside the weights "
                              "or spec.json in the folder; rename this file to one of those")
    return path, None


def _vocab(weights: Path, spec: dict, spec_path: Path | None, size: int, shapes: str) -> list[str]:
    """The tokens in id order, from the spec or vocab.json beside the weights."""
    where = spec_path or weights
    value = spec.get("vocab")
    candidates = []
    if isinstance(value, str):
        candidates.append(weights.parent / Path(value).name)
    elif value is None:
        candidates += [weights.parent / f"{weights.stem}.vocab.json", weights.parent / "vocab.json"]
    if value is not None and not isinstance(value, str):
        tokens = value
    else:
        found = next((p for p in candidates if p.is_file()), None)
        if found is None:
            raise CheckpointError(where, f"the weights say: {shapes}. seqviz also needs the {size:,} tokens in id "
                                  "order: put them in vocab.json beside the weights (a JSON list), or in the spec "
                                  'as "vocab"')
        try:
            tokens = read_vocab(found)["tokens"]
        except TokenizerError as e:
            raise CheckpointError(found, f"invalid vocabulary: {e}") from None
        where = found
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise CheckpointError(where, "the vocabulary must be a list of token strings in id order")
    if len(tokens) != size:
        raise CheckpointError(where, f"the vocabulary has {len(tokens):,} tokens but the embedding has {size:,} rows "
                              f"({shapes})")
    return tokens


def infer(tensors: dict[str, torch.Tensor], spec: dict, where) -> dict:
    """Cell, layers, sizes and the user's key names, read from the weight shapes (and checked against the spec)."""
    prefixes = spec.get("prefixes") or {}
    if not isinstance(prefixes, dict) or not all(isinstance(v, str) and v for v in prefixes.values()):
        raise CheckpointError(where, "'prefixes' must map embed/rnn/head to module names, "
                              'e.g. {"embed": "encoder", "rnn": "rnn", "head": "decoder"}')
    layers: dict[str, set[int]] = {}
    for key in tensors:
        m = RNN_KEY.match(key)
        if m and m.group("reverse"):
            raise CheckpointError(where, f"{key}: a bidirectional recurrent layer; a language model reads left to "
                                  "right only")
        if m:
            layers.setdefault(m.group("prefix"), set()).add(int(m.group("layer")))
    if "rnn" in prefixes:
        want = re.escape(prefixes["rnn"])
        layers = {p: v for p, v in layers.items() if re.fullmatch(rf"{want}\.(\d+\.)?", p)}
    if not layers:
        raise CheckpointError(where, "no recurrent layer found: expected nn.RNN/GRU/LSTM keys such as "
                              f"rnn.weight_hh_l0 (found {', '.join(sorted(tensors)[:6])})")
    stacked = _stacked(layers)
    if stacked is not None:  # nn.ModuleList of single-layer cells (seqviz's own layout): layers.{i}.*_l0
        keys = [(f"{stacked}.{i}.", 0) for i in range(len(layers))]
    else:
        if len(layers) > 1:
            names = ", ".join(repr(p.rstrip(".")) for p in sorted(layers))
            raise CheckpointError(where, f"recurrent layers under several modules ({names}): that looks like an "
                                  'encoder-decoder; for a language model name one in the spec: {"prefixes": '
                                  '{"rnn": ...}}; for an encoder-decoder give a spec with "source_vocab", '
                                  '"target_vocab" and "keys" naming your modules (seqviz/seq2seq/plain.py)')
        prefix, found = next(iter(layers.items()))
        if found != set(range(len(found))):
            raise CheckpointError(where, f"recurrent layers {sorted(found)} under {prefix or '(no prefix)'}: "
                                  f"expected layers 0..{len(found) - 1}")
        keys = [(prefix, i) for i in range(len(found))]
    n_layers = len(keys)
    prefix = keys[0][0]
    if f"{prefix}weight_hr_l0" in tensors:
        raise CheckpointError(where, f"{prefix}weight_hr_l0: an LSTM with proj_size; seqviz reads LSTMs without "
                              "projections")
    hh = tensors[f"{prefix}weight_hh_l{keys[0][1]}"]
    if hh.dim() != 2 or hh.shape[1] == 0 or hh.shape[0] % hh.shape[1]:
        raise CheckpointError(where, f"{prefix}weight_hh_l0 has shape {tuple(hh.shape)}: not [gates x H, H]")
    hidden, gates = int(hh.shape[1]), int(hh.shape[0] // hh.shape[1])
    cell = GATES.get(gates)
    if cell is None:
        raise CheckpointError(where, f"{prefix}weight_hh_l0 has shape {tuple(hh.shape)}: {gates} x H rows; nn.RNN has "
                              "H, nn.GRU 3H and nn.LSTM 4H")
    said = spec.get("cell")
    if said is not None and said != cell:
        said_text = said if said in CELLS else "another cell"
        raise CheckpointError(where, f"the spec says {said_text}, but {prefix}weight_hh_l0 has shape "
                              f"{tuple(hh.shape)} = {gates} x {hidden} rows, which is an {cell.upper()} "
                              f"(nn.RNN: H rows, nn.GRU: 3H, nn.LSTM: 4H)")
    if spec.get("n_layers") not in (None, n_layers):
        raise CheckpointError(where, f"the spec says n_layers={spec.get('n_layers')} but the weights have "
                              f"{n_layers} recurrent layers")
    d_embed = None
    for i, (p, li) in enumerate(keys):
        ih, hh_i = tensors.get(f"{p}weight_ih_l{li}"), tensors[f"{p}weight_hh_l{li}"]
        if ih is None:
            raise CheckpointError(where, f"missing tensor {p}weight_ih_l{li}")
        want_in = d_embed if i == 0 else hidden
        if ih.dim() != 2 or ih.shape[0] != gates * hidden or (i > 0 and ih.shape[1] != hidden):
            raise CheckpointError(where, f"{p}weight_ih_l{li} has shape {tuple(ih.shape)}; a {n_layers}-layer "
                                  f"{cell.upper()} with hidden size {hidden} needs ({gates * hidden}, "
                                  f"{want_in if want_in else 'embedding size'})")
        if tuple(hh_i.shape) != (gates * hidden, hidden):
            raise CheckpointError(where, f"{p}weight_hh_l{li} has shape {tuple(hh_i.shape)}, expected "
                                  f"({gates * hidden}, {hidden}) like layer 0")
        if i == 0:
            d_embed = int(ih.shape[1])
    recurrent = {f"{p}{leaf}_l{li}" for p, li in keys for leaf in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    rest = {k: v for k, v in tensors.items() if k not in recurrent}

    def pick(role, hints, cols):
        if role in prefixes:
            key = prefixes[role] + ".weight"
            if key not in tensors:
                raise CheckpointError(where, f"the spec names {role} module {prefixes[role]!r} but there is no {key}")
            return key
        options = [k for k, v in rest.items() if k.endswith("weight") and v.dim() == 2 and v.shape[1] == cols]
        options.sort(key=lambda k: (not any(h in k.lower() for h in hints), k))
        return options[0] if options else None

    embed = pick("embed", EMBED_HINTS, d_embed)
    if embed is None:
        raise CheckpointError(where, f"no embedding found: expected a [vocabulary, {d_embed}] matrix (e.g. "
                              f"encoder.weight) for {prefix}weight_ih_l0's {d_embed} inputs")
    vocab_size = int(tensors[embed].shape[0])
    rest.pop(embed)
    head = pick("head", HEAD_HINTS, hidden)
    if head is not None and tensors[head].shape[0] != vocab_size:
        raise CheckpointError(where, f"{head} has shape {tuple(tensors[head].shape)}; the output layer must map "
                              f"{hidden} hidden units to the {vocab_size} tokens of {embed}")
    if head is None and d_embed != hidden:
        raise CheckpointError(where, f"no output layer found: expected a [{vocab_size}, {hidden}] matrix (e.g. "
                              "decoder.weight)")
    rnn_name = (stacked + ".{i}") if stacked is not None else prefix.rstrip(".") or "(no prefix)"
    return {"cell": cell, "n_layers": n_layers, "d_embed": d_embed, "d_hidden": hidden, "vocab_size": vocab_size,
            "keys": {"embed": embed, "rnn": rnn_name, "head": head or f"{embed} (tied)"},
            "head": head, "layer_keys": keys}


def _stacked(layers: dict[str, set[int]]) -> str | None:
    """``base`` when the layers are ``base.0.``, ``base.1.`` ... each holding one layer (l0), else None."""
    if len(layers) < 2 or any(v != {0} for v in layers.values()):
        return None
    found = [re.fullmatch(r"(.*)\.(\d+)\.", p) for p in layers]
    if not all(found) or len({m.group(1) for m in found}) != 1:
        return None
    if sorted(int(m.group(2)) for m in found) != list(range(len(found))):
        return None
    return found[0].group(1)


def shapes_text(info: dict) -> str:
    return (f"{info['n_layers']}-layer {info['cell'].upper()}, hidden {info['d_hidden']}, embedding "
            f"{info['d_embed']}, {info['vocab_size']:,} tokens")


class StateDictLM(RecurrentLM):
    """A ``RecurrentLM`` opened from a plain state dict; ``save_pretrained`` writes a seqviz folder."""

    folder_only = None  # a weight file, or a folder holding one
    no_snapshots = "a plain state dict keeps no training snapshots"

    @classmethod
    def _from_pretrained(cls, path: Path, snapshot: int | None = None) -> RecurrentLM:
        weights, spec_path = find_files(path)
        spec = read_json(spec_path) if spec_path is not None else {}
        tensors = read_weights(weights)
        info = infer(tensors, spec, spec_path or weights)
        tokens = _vocab(weights, spec, spec_path, info["vocab_size"], shapes_text(info))
        kind = spec.get("tokenizer")
        if kind is None:
            kind = "char" if all(len(t) == 1 or (t.startswith("<") and t.endswith(">")) for t in tokens) else "word"
        try:
            config = LMConfig(cell=info["cell"], n_layers=info["n_layers"], d_embed=info["d_embed"],
                              d_hidden=info["d_hidden"], tokenizer=kind, vocab_size=info["vocab_size"])
            tokenizer = Tokenizer(kind, tokens)
        except (ConfigError, TokenizerError) as e:
            raise CheckpointError(spec_path or weights, str(e)) from None
        with torch.device("meta"):
            model = cls(config, tokenizer)
        embed = info["keys"]["embed"]
        head = info["head"] or embed
        mapped = {"embed.weight": tensors[embed], "head.weight": tensors[head]}
        head_bias = head[: -len("weight")] + "bias"
        mapped["head.bias"] = tensors.get(head_bias, torch.zeros(info["vocab_size"])) if info["head"] else \
            torch.zeros(info["vocab_size"])
        H, G = info["d_hidden"], ROWS[info["cell"]]
        for i, (p, li) in enumerate(info["layer_keys"]):
            for leaf in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                value = tensors.get(f"{p}{leaf}_l{li}")
                if value is None and leaf.startswith("bias"):
                    value = torch.zeros(G * H)  # bias=False layers
                mapped[f"layers.{i}.{leaf}_l0"] = value
        model = materialize(model, mapped, weights)
        model.card = {"source": "plain PyTorch state dict", "path": str(weights), "inferred": shapes_text(info),
                      "keys": info["keys"]}
        return model.eval().requires_grad_(False)
