"""seqviz's own Seq2Seq written as a plain state dict in bentrevett's layout, with the spec that reopens it.

seqviz's encoder-decoder is Bahdanau et al. 2015's, and so is bentrevett/pytorch-seq2seq notebook 3
(the PyTorch tutorial's layout cannot hold it: it has no bridge, a unidirectional encoder and an output
layer on s_t alone). The tensors map one to one::

    src_embed.weight                  encoder.embedding.weight
    encoder.0.* / encoder.1.*         encoder.rnn.*_l0 / encoder.rnn.*_l0_reverse   (one bidirectional nn.GRU)
    init.weight, init.bias            encoder.fc.*       s_0 = tanh(fc([fwd_n; bwd_n]))
    attn.W_s | attn.W_h, attn.W_h.b   decoder.attention.attn.weight, .bias   attn([s; h]) = W_s s + W_h h + b
    attn.v.weight                     decoder.attention.v.weight
    tgt_embed.weight                  decoder.embedding.weight
    cell.* (GRUCell/LSTMCell)         decoder.rnn.*_l0
    out.*                             decoder.fc_out.*   on [s_t; c_t; E y_{t-1}]

Reopened with ``seqviz.load`` it traces like the original (the round trip ``--save-layout`` offers).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from seqviz.seq2seq.model import Seq2Seq

LAYOUTS = ("bentrevett",)


def plain_state_dict(model: Seq2Seq) -> dict[str, torch.Tensor]:
    """The model's tensors under bentrevett's names (notebook 3; without attention, notebook 3 minus it)."""
    sd = {k: v.detach().float().cpu().contiguous() for k, v in model.state_dict().items()}
    out = {"encoder.embedding.weight": sd["src_embed.weight"], "decoder.embedding.weight": sd["tgt_embed.weight"],
           "encoder.fc.weight": sd["init.weight"], "encoder.fc.bias": sd["init.bias"],
           "decoder.fc_out.weight": sd["out.weight"], "decoder.fc_out.bias": sd["out.bias"]}
    for direction, suffix in ((0, ""), (1, "_reverse")):
        for leaf in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            key = f"encoder.{direction}.{leaf}_l0"
            if key in sd:
                out[f"encoder.rnn.{leaf}_l0{suffix}"] = sd[key]
    for leaf in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        out[f"decoder.rnn.{leaf}_l0"] = sd[f"cell.{leaf}"]
    if model.attn is not None:
        out["decoder.attention.attn.weight"] = torch.cat([sd["attn.W_s.weight"], sd["attn.W_h.weight"]], dim=1)
        out["decoder.attention.attn.bias"] = sd["attn.W_h.bias"]
        out["decoder.attention.v.weight"] = sd["attn.v.weight"]
    return out


def save_plain_layout(model: Seq2Seq, folder, layout: str = "bentrevett") -> Path:
    """Write ``model.safetensors`` + ``spec.json`` in ``layout``; ``seqviz.load(folder)`` reopens it."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}")
    if model.src_vocab is None or model.tgt_vocab is None:
        raise ValueError("a model needs its vocabularies to be saved with a spec")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(plain_state_dict(model), str(folder / "model.safetensors"))
    kinds = {"char": "char", "unit": "word"}
    spec = {"source_vocab": model.src_vocab.tokens, "target_vocab": model.tgt_vocab.tokens,
            "source_tokenizer": kinds[model.src_vocab.kind], "target_tokenizer": kinds[model.tgt_vocab.kind],
            "pad": "<pad>", "unk": "<unk>", "bos": "<bos>", "eos": "<eos>", "source_bos": False,
            "source_eos": False, "decoder_input": "embedding", "output": ["hidden", "context", "embedding"],
            "max_target_len": model.config.max_target_len}
    (folder / "spec.json").write_text(json.dumps(spec, ensure_ascii=False, indent=1) + "\n")
    return folder
