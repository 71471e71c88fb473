"""A plain PyTorch encoder-decoder's state dict (the PyTorch tutorial's, bentrevett's ...) run as a seqviz Seq2Seq.

The layouts read without a spec (``plain_layout`` names the keys, ``plain_shapes`` reads the sizes)::

    pytorch-tutorial            EncoderRNN (embedding, gru) + DecoderRNN: s_t = GRU(relu(E y_{t-1}), s_{t-1}),
                                logits = out(s_t); s_0 = the encoder's final state
    pytorch-tutorial-attention  + AttnDecoderRNN: e_tj = Va tanh(Wa s_{t-1} + Ua h_j),
                                s_t = GRU([E y_{t-1}; c_t], s_{t-1}), logits = out(s_t)
    bentrevett-1                LSTM/GRU, any depth: the decoder starts from all the encoder's final states
    bentrevett-2                the encoder's final state z at every step: s_t = GRU([E y; z], s_{t-1}),
                                logits = fc_out([E y; s_t; z])
    bentrevett-3                bidirectional encoder, s_0 = tanh(fc([fwd_n; bwd_n])),
                                e_tj = v tanh(attn([s_{t-1}; h_j])), logits = fc_out([s_t; c_t; E y])

One file (``.safetensors``, weights-only ``.pt``/``.pth``/``.bin``, ``.npz``; the tutorial's two modules
saved together as ``{"encoder": ..., "decoder": ...}`` too) or two (``encoder.pt`` + ``decoder.pt``).
The spec (``spec.json`` in the folder or ``<weights stem>.json``) says what shapes cannot::

    {"source_vocab": [...] | "file.json", "target_vocab": [...] | "file.json",   # tokens in id order
     "source_tokenizer": "char" | "word", "target_tokenizer": "char" | "word",
     "bos": "<s>", "eos": "</s>", "pad": "<pad>", "unk": "<unk>",               # default: usual names
     "source_bos": false, "source_eos": true,       # put around every source sentence
     "decoder_input": "embedding" | "relu(embedding)",
     "keys": {"enc_emb": "...", ...},   # seqviz's names -> yours, or yours -> seqviz's (plain_layout's table)
     "attention": "dot", "output": ["hidden", "context", "embedding"], "max_target_len": 120,
     "weights": "model.pt" | {"encoder": "enc.pt", "decoder": "dec.pt"}}

What the spec leaves out, a recognised layout's conventions fill in (``conventions.py``: bentrevett's
<sos> … <eos> around the source, the tutorial's EOS after it, words split on spaces, the tutorial
DecoderRNN's relu), else a guess; ``inspect`` prints each with its origin (docs/loading-seq2seq.md).

seqviz puts the four special tokens at ids 0-3 (pad, unk, start, end) as its own models do, so every
page, beam search and sampling work unchanged: embedding and output rows are reordered at load, and a
special the vocabulary lacks gets a zero embedding and a logit of -1e9 (probability 0), so the
softmax over the user's own tokens is unchanged. ``user_ids`` maps seqviz ids back to the file's.
Padded source positions are never attended (the tutorials attend their padding; on unpadded input the
two agree to float rounding, which the tests check).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqviz.checkpoints import CheckpointError, materialize, read_weights
from seqviz.config import ConfigError
from seqviz.seq2seq.config import PlainSeq2SeqConfig
from seqviz.seq2seq.conventions import summary, tokenizer_hint
from seqviz.seq2seq.model import EncoderOutput, Seq2Seq, Step
from seqviz.seq2seq.plain_files import find_files, read_spec, vocabularies
from seqviz.seq2seq.plain_layout import find_names, spec_names
from seqviz.seq2seq.plain_shapes import infer
from seqviz.seq2seq.vocab import BOS_ID, EOS_ID, UNK_ID

NEVER = -1e9  # the logit of a special token the user's vocabulary does not have: exp(-1e9) == 0


@dataclass
class PlainEncoderOutput(EncoderOutput):
    final: object = None  # the encoder's final states, batch first: [B, layers x dirs, H] (LSTM: (h, c))

    def select(self, rows: torch.Tensor) -> PlainEncoderOutput:
        base = super().select(rows)
        final = tuple(f[rows] for f in self.final) if isinstance(self.final, tuple) else self.final[rows]
        return PlainEncoderOutput(base.h, base.mask, base.keys, base.summary, final)


class PlainAttention(nn.Module):
    """Additive (Bahdanau: e_tj = Va tanh(Wa s + Ua h_j)) or Luong (general: s . (W h_j + b); dot: s . h_j)."""

    def __init__(self, score: str, d_decoder: int, d_annotation: int, d_attention: int):
        super().__init__()
        self.score = score
        if score == "additive":
            self.W, self.U, self.v = nn.Linear(d_decoder, d_attention), nn.Linear(d_annotation, d_attention), \
                nn.Linear(d_attention, 1)
        elif score == "general":
            self.U = nn.Linear(d_annotation, d_decoder)

    def keys(self, h: torch.Tensor) -> torch.Tensor:
        return h if self.score == "dot" else self.U(h)  # [B, S, N]: once per sentence

    def forward(self, s_prev, keys, h, mask):
        """-> (scores [B,S], weights [B,S], context [B,A]) for the query s_prev [B,D]."""
        if self.score == "additive":
            e = self.v(torch.tanh(self.W(s_prev)[:, None, :] + keys)).squeeze(-1)
        else:
            e = torch.bmm(keys, s_prev[:, :, None]).squeeze(-1)
        e = e.masked_fill(~mask, float("-inf"))
        alpha = torch.softmax(e, dim=-1)
        return e, alpha, torch.bmm(alpha[:, None, :], h).squeeze(1)


class StateDictSeq2Seq(Seq2Seq):
    """Seq2Seq's protocol (trace, translate, encode/initial_state/step/logits) on a plain state dict's layout."""

    config_class = PlainSeq2SeqConfig

    def __init__(self, config: PlainSeq2SeqConfig, src_vocab=None, tgt_vocab=None):
        nn.Module.__init__(self)
        self.config, self.src_vocab, self.tgt_vocab, self.card = config, src_vocab, tgt_vocab, {}
        self.conventions = {}  # field -> conventions.Convention, set by the loader
        c, A, D = config, config.d_annotation, config.d_decoder
        rnn = nn.GRU if c.cell == "gru" else nn.LSTM
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_src_embed)
        self.enc_rnn = rnn(c.d_src_embed, c.d_encoder, c.enc_layers, batch_first=True, bidirectional=c.bidirectional)
        self.bridge = nn.Linear(A, D) if c.bridge else None
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.d_tgt_embed)
        self.dec_rnn = rnn(c.d_tgt_embed + (A if c.feed_context else 0), D, c.dec_layers, batch_first=True)
        self.attn = PlainAttention(c.score, D, A, c.d_attention) if c.score else None
        sizes = {"hidden": D, "context": A, "embedding": c.d_tgt_embed}
        self.out = nn.Linear(sum(sizes[p] for p in c.output), c.tgt_vocab_size)

    folder_only = None  # one weight file, two (encoder + decoder), or a folder holding them
    no_snapshots = "a plain state dict keeps no training snapshots"

    @classmethod
    def _from_pretrained(cls, path, snapshot: int | None = None) -> StateDictSeq2Seq:
        return load_plain_seq2seq(path, snapshot)

    def _save_pretrained(self, folder, **options):
        raise NotImplementedError("a plain state dict is the user's own file; seqviz reads it and does not rewrite it")

    def describe(self) -> dict:
        c = self.config
        return {**super().describe(), "layout": c.layout, "attention": c.score or "none",
                "sizes": {"source_embedding": c.d_src_embed, "target_embedding": c.d_tgt_embed,
                          "encoder": f"{c.enc_layers} x {c.d_encoder}{' x 2 directions' if c.bidirectional else ''}",
                          "decoder": f"{c.dec_layers} x {c.d_decoder}", "attention": c.d_attention or None},
                "specials": {"source": self.src_vocab.specials(), "target": self.tgt_vocab.specials()},
                "conventions": self.card.get("conventions", {})}

    # ------------------------------------------------------------ the user's equations
    def _batch(self, inputs, vocab, side: str):
        """Seq2Seq's batching, then the source's start/end tokens as the spec says (ids are given without them)."""
        ids, mask, pieces = super()._batch(inputs, vocab, side)
        if vocab is not None and vocab.user_ids[UNK_ID] is None and bool((ids[mask] == UNK_ID).any()):
            texts = [inputs] if isinstance(inputs, str) else inputs if isinstance(inputs, (list, tuple)) else []
            unknown = dict.fromkeys(u for x in texts if isinstance(x, (str, list, tuple))
                                    and not (x and isinstance(x[0], int)) for u in vocab.encode(x).unknown)
            raise ValueError(f"not in the {side} vocabulary, which has no unknown token: "
                             f"{', '.join(map(repr, list(unknown)[:5])) or 'the unknown-token id'}"
                             f"{tokenizer_hint(vocab.kind, side)}")
        if side != "source" or not (self.config.source_bos or self.config.source_eos):
            return ids, mask, pieces
        from seqviz.data.tokenizers import pad_batch

        pre, post = [BOS_ID] * self.config.source_bos, [EOS_ID] * self.config.source_eos
        seqs = [pre + row[: int(n)] + post for row, n in zip(ids.tolist(), mask.sum(1).tolist())]
        ids, mask = pad_batch(seqs)
        pieces = [vocab.strings(s) for s in seqs] if vocab is not None else None
        return ids, mask, pieces

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> PlainEncoderOutput:
        """src [B,S] ids -> annotations [B,S,A]; packed, so each row's final states are at its own last token."""
        lengths = src_mask.sum(1)
        if int(lengths.min()) < 1:
            raise ValueError("every source sentence needs at least one token")
        packed = pack_padded_sequence(self.src_embed(src), lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, final = self.enc_rnn(packed)
        h, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])  # zeros on padding
        hn = final[0] if isinstance(final, tuple) else final  # [layers x dirs, B, H], top layer last
        summary = torch.cat([hn[-2], hn[-1]], -1) if self.config.bidirectional else hn[-1]  # [B, A]
        batch_first = tuple(f.transpose(0, 1) for f in final) if isinstance(final, tuple) else final.transpose(0, 1)
        keys = self.attn.keys(h) if self.attn is not None else None
        return PlainEncoderOutput(h, src_mask, keys, summary, batch_first)

    def initial_state(self, enc: PlainEncoderOutput):
        """[B, layers, D] (LSTM: (h, c)): the bridge's tanh(W [fwd_n; bwd_n] + b), or the encoder's final states."""
        if self.bridge is None:
            return enc.final
        s0 = torch.tanh(self.bridge(enc.summary))[:, None, :]
        return (s0, torch.zeros_like(s0)) if self.config.cell == "lstm" else s0

    def step(self, enc: PlainEncoderOutput, state, prev: torch.Tensor) -> Step:
        """Feed y_{t-1} (prev [B]); attention's query is the previous top-layer state s_{t-1}."""
        lstm = isinstance(state, tuple)
        s_prev = (state[0] if lstm else state)[:, -1]  # [B, D]
        emb = self.tgt_embed(prev)  # [B, E]
        x = torch.relu(emb) if self.config.decoder_input == "relu(embedding)" else emb
        if self.attn is not None:
            scores, weights, context = self.attn(s_prev, enc.keys, enc.h, enc.mask)
        else:
            scores = weights = None
            context = enc.summary  # bentrevett 2's fixed context; what the others started from
        if self.config.feed_context:
            x = torch.cat([x, context], dim=-1)
        hx = tuple(t.transpose(0, 1).contiguous() for t in state) if lstm else state.transpose(0, 1).contiguous()
        out, new = self.dec_rnn(x[:, None, :], hx)
        state = tuple(t.transpose(0, 1) for t in new) if lstm else new.transpose(0, 1)
        return Step(state, out[:, 0], context, emb, scores, weights, state[1][:, -1] if lstm else None)

    def logits(self, s, context, emb) -> torch.Tensor:
        """The output layer on the layout's pieces, in its order (any leading shape)."""
        pieces = {"hidden": s, "context": context, "embedding": emb}
        return self.out(torch.cat([pieces[p] for p in self.config.output], dim=-1))


# ------------------------------------------------------------------ loading
def _tensor_map(model: StateDictSeq2Seq, tensors: dict, names: dict) -> dict:
    """The model's state dict from the user's tensors: canonical names placed, specials moved to ids 0-3."""
    c = model.config
    def get(n, like=None):
        return tensors[names[n]].float() if n in names else torch.zeros(like.shape)

    mapped = {}
    for side, module in (("enc", model.enc_rnn), ("dec", model.dec_rnn)):
        prefix = "enc_rnn" if side == "enc" else "dec_rnn"
        for name, param in module.state_dict().items():  # weight_ih_l0[_reverse] ...
            leaf, _, rest = name.partition("_l")
            mapped[f"{prefix}.{name}"] = get(f"{side}_{leaf[0]}_{leaf.split('_')[1]}_l{rest}", param)
    def rows(t: torch.Tensor, ids: list) -> torch.Tensor:  # row i = the user's row ids[i] (zeros where None)
        picked = t[torch.tensor([0 if i is None else i for i in ids])]
        picked[[k for k, i in enumerate(ids) if i is None]] = 0.0
        return picked

    src_ids, tgt_ids = model.src_vocab.user_ids, model.tgt_vocab.user_ids
    mapped["src_embed.weight"] = rows(get("enc_emb"), src_ids)
    mapped["tgt_embed.weight"] = rows(get("dec_emb"), tgt_ids)
    out_w = get("out_w")
    mapped["out.weight"] = rows(out_w, tgt_ids)
    mapped["out.bias"] = rows(get("out_b", out_w[:, 0]), tgt_ids)
    mapped["out.bias"][[i for i, u in enumerate(tgt_ids) if u is None]] = NEVER
    if model.bridge is not None:
        w = get("enc_fc_w")
        mapped.update({"bridge.weight": w, "bridge.bias": get("enc_fc_b", w[:, 0])})
    if c.score == "additive":
        if "attn_w" in names:  # bentrevett: attn([s; h]) = W_s s + W_h h + b; v has no bias
            w, D = get("attn_w"), c.d_decoder
            parts = {"W.weight": w[:, :D], "W.bias": torch.zeros(w.shape[0]), "U.weight": w[:, D:],
                     "U.bias": get("attn_b", w[:, 0]), "v.weight": get("attn_v_w").reshape(1, -1),
                     "v.bias": get("attn_v_b", torch.zeros(1))}
        else:
            parts = {f"{m}.{leaf}": get(f"attn_{n}_{leaf[0]}", model.attn.state_dict()[f"{m}.{leaf}"])
                     for m, n in (("W", "wa"), ("U", "ua"), ("v", "va")) for leaf in ("weight", "bias")}
        mapped.update({f"attn.{k}": v for k, v in parts.items()})
    elif c.score == "general":
        w = get("attn_w")
        mapped.update({"attn.U.weight": w, "attn.U.bias": get("attn_b", w[:, 0])})
    return mapped


def _check_values(tensors: dict, names: dict, where) -> None:
    for key in names.values():
        t = tensors[key]
        if not t.is_floating_point():
            raise CheckpointError(where, f"{key} has dtype {t.dtype}, expected floating point")
        if not torch.isfinite(t).all():
            raise CheckpointError(where, f"{key} contains NaN or Inf values; refused")


def load_plain_seq2seq(path, snapshot: int | None = None) -> StateDictSeq2Seq:
    """A plain encoder-decoder state dict on the CPU, eval mode, no gradients; CheckpointError for every refusal."""
    path = Path(path)
    if snapshot is not None:
        raise CheckpointError(path, "a plain state dict keeps no training snapshots")
    files, spec_path = find_files(path)
    where = spec_path or files[0][0]
    spec = read_spec(spec_path)
    tensors = {}
    for file, prefix in files:
        tensors.update({prefix + k: v for k, v in read_weights(file).items()})
    taken = spec_names(spec.get("keys"), tensors, where)
    names = find_names(tensors, taken, where)
    info = infer(tensors, names, spec, where)
    _check_values(tensors, names, where)
    src_vocab, tgt_vocab, flags, found = vocabularies(spec, spec_path, files[0][0], info, names, len(taken))
    try:
        sizes = {"src_vocab_size": len(src_vocab), "tgt_vocab_size": len(tgt_vocab)}  # with placeholder specials
        config = PlainSeq2SeqConfig(**{**info, **sizes, "decoder_input": found["decoder_input"].value}, **flags)
    except (ConfigError, TypeError) as e:
        raise CheckpointError(where, str(e)) from None
    with torch.device("meta"):
        model = StateDictSeq2Seq(config, src_vocab, tgt_vocab)
    model = materialize(model, _tensor_map(model, tensors, names), files[0][0])
    model.conventions = found  # field -> Convention (value, origin): framing.check_framing says which to change
    model.card = {"source": "plain PyTorch encoder-decoder state dict", "path": str(path),
                  "files": [str(f) for f, _ in files], "layout": config.layout, "inferred": config.describe(),
                  "keys": names, "spec": str(spec_path) if spec_path else None, "conventions": summary(found)}
    return model.eval().requires_grad_(False)
