"""An RNN encoder-decoder with Bahdanau attention (or a fixed context), whose runs return traces.

Bahdanau, Cho & Bengio 2015 ("Neural machine translation by jointly learning to align
and translate"), with a linear output layer instead of their maxout:

    annotations   h_j = [fwd_j ; bwd_j]                       (bidirectional encoder)
    score         e_tj = v^T tanh(W_s s_{t-1} + W_h h_j + b)  (appendix A.1.2)
    weights       alpha_tj = exp(e_tj) / sum_k exp(e_tk)      over real source positions only
    context       c_t = sum_j alpha_tj h_j
    state         s_t = cell(s_{t-1}, [E y_{t-1} ; c_t])
    output        p(y_t | y_<t, x) = softmax(W_o [s_t ; c_t ; E y_{t-1}] + b_o)

With ``attention=False`` every c_t is the same vector, the encoder's final state (the
RNNencdec baseline of Bahdanau fig. 2, after Cho et al. 2014 / Sutskever et al. 2014):
the whole sentence must pass through one fixed-size vector. In both, s_0 = tanh(W_init c).

Shapes: B batch, S source positions, T target steps, A = annotation size, D = decoder size.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from seqviz.checkpoints import fill_from_folder, save_weights
from seqviz.models.recurrent import embedding
from seqviz.pretrained import Pretrained
from seqviz.seq2seq.checkpoints import read_parts, write_vocabs
from seqviz.seq2seq.config import Seq2SeqConfig
from seqviz.seq2seq.vocab import BOS_ID, EOS_ID, NEVER_EMITTED, PAD_ID, Vocab  # noqa: F401 - NEVER_EMITTED re-exported
from seqviz.trace import Trace, check_names



def seq2seq_trace_names(cell: str, attention: bool) -> list[str]:
    """Every name a seq2seq trace holds, in order (pinned by a golden test)."""
    names = ["source.tokens", "source.mask", "target.inputs", "target.tokens", "target.mask",
             "encoder.h", "decoder.h"]
    if cell == "lstm":
        names.append("decoder.c")
    names.append("decoder.context")
    if attention:
        names += ["decoder.attn.scores", "decoder.attn.weights"]
    return names + ["logits", "loss"]


class Seq2SeqTrace(Trace):
    """A Trace of one encoder-decoder run, with the token strings of both sides.

    ``decoder.attn.scores`` is -inf at padded source positions (softmax gives them
    exactly 0); rows of padded target steps (``target.mask`` False) are NaN in the
    scores and the weights (nothing was attended there) and 0 in the loss, so
    ``loss[target.mask].mean()`` (``mean_loss()``) is the mean over real target tokens.
    """

    def __init__(self, tensors, source_strings, target_strings, teacher_forced: bool):
        super().__init__(tensors, target_strings)
        self.source_strings = source_strings
        self.target_strings = target_strings
        self.teacher_forced = teacher_forced

    def lengths(self) -> torch.Tensor:
        return self["target.mask"].sum(dim=1)

    def source_lengths(self) -> torch.Tensor:
        return self["source.mask"].sum(dim=1)


@dataclass
class EncoderOutput:
    """The encoder's output for a batch; ``select`` reorders or repeats rows (beams)."""

    h: torch.Tensor  # [B, S, A] annotations h_j
    mask: torch.Tensor  # [B, S] True at real source positions
    keys: torch.Tensor | None  # [B, S, d_attention] W_h h_j + b, computed once per sentence
    summary: torch.Tensor  # [B, A] final encoder state: the fixed context without attention

    def select(self, rows: torch.Tensor) -> "EncoderOutput":
        keys = None if self.keys is None else self.keys[rows]
        return EncoderOutput(self.h[rows], self.mask[rows], keys, self.summary[rows])


@dataclass
class Step:
    """One decoder step: new state, the pieces of the output layer, and the attention."""

    state: object  # s_t (GRU) or (s_t, cell_t) (LSTM)
    s: torch.Tensor  # [B, D]
    context: torch.Tensor  # [B, A] c_t
    embed: torch.Tensor  # [B, E] E y_{t-1}
    scores: torch.Tensor | None  # [B, S] e_t., -inf on padding
    weights: torch.Tensor | None  # [B, S] alpha_t.
    c: torch.Tensor | None = None  # [B, D] the LSTM's memory cell (None for a GRU)


def reverse_within(mask: torch.Tensor) -> torch.Tensor:
    """[B, S] index that reverses the first len_b positions of each row and keeps the padding."""
    S = mask.shape[1]
    pos = torch.arange(S, device=mask.device).expand_as(mask)
    lengths = mask.sum(1, keepdim=True)
    return torch.where(pos < lengths, lengths - 1 - pos, pos)


class BahdanauAttention(nn.Module):
    """e_tj = v^T tanh(W_s s_{t-1} + W_h h_j + b); the W_h h_j + b half is precomputed."""

    def __init__(self, d_decoder: int, d_annotation: int, d_attention: int):
        super().__init__()
        self.W_s = nn.Linear(d_decoder, d_attention, bias=False)
        self.W_h = nn.Linear(d_annotation, d_attention)
        self.v = nn.Linear(d_attention, 1, bias=False)

    def keys(self, h: torch.Tensor) -> torch.Tensor:
        return self.W_h(h)  # [B, S, d_attention]

    def forward(self, s_prev, keys, h, mask):
        """-> (scores [B,S], weights [B,S], context [B,A]) for decoder state s_prev [B,D]."""
        e = self.v(torch.tanh(self.W_s(s_prev)[:, None, :] + keys)).squeeze(-1)  # [B, S]
        e = e.masked_fill(~mask, float("-inf"))  # padding gets exactly zero weight
        alpha = torch.softmax(e, dim=-1)
        context = torch.bmm(alpha[:, None, :], h).squeeze(1)  # [B, A]
        return e, alpha, context


class Seq2Seq(nn.Module, Pretrained):
    """Encoder (fused GRU/LSTM, optionally bidirectional) + step-by-step attentive decoder."""

    def __init__(self, config: Seq2SeqConfig, src_vocab: Vocab | None = None, tgt_vocab: Vocab | None = None):
        super().__init__()
        self.config, self.src_vocab, self.tgt_vocab = config, src_vocab, tgt_vocab
        self.card: dict = {}
        c, A = config, config.d_annotation
        rnn = nn.GRU if c.cell == "gru" else nn.LSTM
        cell = nn.GRUCell if c.cell == "gru" else nn.LSTMCell
        self.src_embed = embedding(c.src_vocab_size, c.d_embed, padding_idx=PAD_ID)
        # One fused single-direction RNN per direction (encoder.0 reads left to right, encoder.1
        # right to left): each sentence is reversed within its own length, so padding always
        # trails and never enters a real state, without packed sequences (whose CPU backward
        # zero-fills a [tokens, gates] buffer at every step).
        self.encoder = nn.ModuleList(rnn(c.d_embed, c.d_encoder, batch_first=True)
                                     for _ in range(2 if c.bidirectional else 1))
        self.tgt_embed = embedding(c.tgt_vocab_size, c.d_embed, padding_idx=PAD_ID)
        self.init = nn.Linear(A, c.d_decoder)  # s_0 = tanh(W_init c)
        self.attn = BahdanauAttention(c.d_decoder, A, c.d_attention) if c.attention else None
        self.cell = cell(c.d_embed + A, c.d_decoder)
        self.drop = nn.Dropout(c.dropout)
        self.out = nn.Linear(c.d_decoder + A + c.d_embed, c.tgt_vocab_size)

    model_type = "seq2seq"
    config_class = Seq2SeqConfig

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # ------------------------------------------------------------ the protocol (seqviz.registry)
    folder_only = ("a seq2seq checkpoint is a folder (config.json, model.safetensors, src_vocab.json, "
                   "tgt_vocab.json)")

    @classmethod
    def _from_pretrained(cls, path: Path, snapshot: int | None = None) -> "Seq2Seq":
        """config.json and both vocabularies, then the weights (or a snapshot's) checked against them."""
        config, src, tgt = read_parts(path)
        with torch.device("meta"):  # no memory until the weights are known to fit the config
            model = cls(config, src, tgt)
        return fill_from_folder(model, path, snapshot)

    def _save_pretrained(self, folder: Path) -> Seq2SeqConfig:
        """src_vocab.json, tgt_vocab.json and model.safetensors."""
        write_vocabs(folder, self.src_vocab, self.tgt_vocab)
        save_weights(self, folder / "model.safetensors")
        return self.config

    def trace_names(self) -> list[str]:
        return seq2seq_trace_names(self.config.cell, self.attn is not None)

    def describe(self) -> dict:
        c = self.config
        return {"model_type": self.model_type, "cell": c.cell, "architecture": c.describe(),
                "attention": c.attention, "parameters": self.num_parameters(),
                "source_vocab_size": c.src_vocab_size, "target_vocab_size": c.tgt_vocab_size,
                "vocab_sample": {"source": self.src_vocab.tokens[4:24] if self.src_vocab else [],
                                 "target": self.tgt_vocab.tokens[4:24] if self.tgt_vocab else []},
                "trace_names": self.trace_names()}

    # ------------------------------------------------------------ the two halves
    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> EncoderOutput:
        """src [B,S] ids, src_mask [B,S] -> annotations; padding never enters the recurrence."""
        lengths = src_mask.sum(1)
        if int(lengths.min()) < 1:
            raise ValueError("every source sentence needs at least one token")
        x = self.drop(self.src_embed(src))  # [B, S, E]
        last_pos = (lengths - 1).clamp(min=0)
        rows = torch.arange(src.shape[0], device=src.device)
        fwd, _ = self.encoder[0](x)  # [B, S, He]; trailing padding cannot reach real positions
        h, finals = [fwd], [fwd[rows, last_pos]]  # forward state after the last real token
        if len(self.encoder) == 2:
            rev = reverse_within(src_mask)  # index that reverses each row's real part
            bwd, _ = self.encoder[1](x.gather(1, rev[..., None].expand_as(x)))
            h.append(bwd.gather(1, rev[..., None].expand_as(bwd)))  # back to source order
            finals.append(bwd[rows, last_pos])  # backward state after reading x_1
        h = torch.cat(h, dim=-1) * src_mask[..., None]  # [B, S, A], zeros on padding
        summary = torch.cat(finals, dim=-1)  # [B, A]: the sentence in one vector
        keys = self.attn.keys(h) if self.attn is not None else None
        return EncoderOutput(h, src_mask, keys, summary)

    def initial_state(self, enc: EncoderOutput):
        s0 = torch.tanh(self.init(enc.summary))  # [B, D]
        return (s0, torch.zeros_like(s0)) if self.config.cell == "lstm" else s0

    def step(self, enc: EncoderOutput, state, prev: torch.Tensor) -> Step:
        """Feed y_{t-1} (prev [B] ids) with state s_{t-1}; attention is read from s_{t-1}."""
        s_prev = state[0] if isinstance(state, tuple) else state
        emb = self.drop(self.tgt_embed(prev))  # [B, E]
        if self.attn is not None:
            scores, weights, context = self.attn(s_prev, enc.keys, enc.h, enc.mask)
        else:
            scores = weights = None
            context = enc.summary  # the bottleneck: the same vector at every step
        state = self.cell(torch.cat([emb, context], dim=-1), state)
        s, c = state if isinstance(state, tuple) else (state, None)
        return Step(state, s, context, emb, scores, weights, c)

    def logits(self, s, context, emb) -> torch.Tensor:
        """Output layer on [s_t ; c_t ; E y_{t-1}] (any leading shape)."""
        return self.out(self.drop(torch.cat([s, context, emb], dim=-1)))

    # ------------------------------------------------------------ training
    def forward(self, src, src_mask, tgt_in, sample_prob: float = 0.0, generator=None) -> torch.Tensor:
        """Logits [B,T,V] for decoder inputs tgt_in [B,T] (<bos> y_1 ... y_{T-1}).

        Teacher forcing feeds the gold previous token. With ``sample_prob`` > 0 each
        input after the first is, with that probability, replaced by a token sampled from
        the model's own previous prediction (scheduled sampling, Bengio et al. 2015); no
        gradient flows through the sample, as in the paper.
        """
        enc = self.encode(src, src_mask)
        state, steps, prev = self.initial_state(enc), [], tgt_in[:, 0]
        out = []
        for t in range(tgt_in.shape[1]):
            if t and sample_prob > 0:
                probs = torch.softmax(out[-1].detach().float(), dim=-1)
                sampled = torch.multinomial(probs, 1, generator=generator).squeeze(1)
                coin = torch.rand(prev.shape, generator=generator, device=prev.device) < sample_prob
                prev = torch.where(coin, sampled, tgt_in[:, t])
            elif t:
                prev = tgt_in[:, t]
            st = self.step(enc, state, prev)
            state = st.state
            if sample_prob > 0:
                out.append(self.logits(st.s, st.context, st.embed))
            else:
                steps.append(st)
        if sample_prob > 0:
            return torch.stack(out, dim=1)
        stack = lambda name: torch.stack([getattr(s, name) for s in steps], dim=1)  # noqa: E731
        return self.logits(stack("s"), stack("context"), stack("embed"))  # one matmul for all steps

    # ------------------------------------------------------------ tracing and decoding
    def _batch(self, inputs, vocab: Vocab, side: str):
        """Text / texts / token lists / id lists / id tensor -> (ids [B,L], mask, pieces)."""
        from seqviz.data.tokenizers import pad_batch

        if isinstance(inputs, torch.Tensor):
            seqs = [list(map(int, row)) for row in inputs.reshape(-1, inputs.shape[-1])]
        else:
            inputs = [inputs] if isinstance(inputs, str) else list(inputs)
            if inputs and all(isinstance(i, int) for i in inputs):
                inputs = [inputs]  # one id list
            if not inputs:
                raise ValueError(f"nothing to translate: the {side} is empty")
            if vocab is None and not all(isinstance(x, (list, tuple)) and all(isinstance(i, int) for i in x)
                                         for x in inputs):
                raise ValueError("this model has no vocabulary; pass token ids")
            seqs = [list(x) if isinstance(x, (list, tuple)) and all(isinstance(i, int) for i in x)
                    else vocab.encode(x).ids for x in inputs]
        size = self.config.src_vocab_size if side == "source" else self.config.tgt_vocab_size
        if any(not s for s in seqs) and side == "source":
            raise ValueError("nothing to translate: a source sentence has no tokens")
        if any(i < 0 or i >= size for s in seqs for i in s):
            raise ValueError(f"{side} token ids must lie in [0, {size})")
        ids, mask = pad_batch([s or [PAD_ID] for s in seqs])
        mask &= torch.tensor([bool(s) for s in seqs])[:, None]
        pieces = [vocab.strings(s) for s in seqs] if vocab is not None else None
        return ids, mask, pieces

    @torch.no_grad()
    def trace(self, src, tgt=None, *, names=None, src_mask=None, prefix=None,
              max_len: int | None = None) -> Seq2SeqTrace:
        """Run the model and keep its named tensors (``seq2seq_trace_names``; ``names``: only those).

        ``src`` / ``tgt``: a text, a list of texts, a list of token lists (strings), id
        lists, or an id tensor [B, L]; a list of strings is a batch of texts, not tokens.

        ``tgt`` given: teacher-forced on it (the targets are tgt + <eos>). ``tgt`` None:
        free-running greedy decoding; ``prefix`` (one token list per row) forces the
        first emitted tokens, then the model continues on its own.
        """
        wanted = check_names(names, self.trace_names())
        ids, mask, src_pieces = self._batch(src, self.src_vocab, "source")
        if src_mask is not None:
            mask = src_mask.bool().reshape(ids.shape)
        dev = self.out.weight.device
        enc = self.encode(ids.to(dev), mask.to(dev))
        B = ids.shape[0]
        if tgt is not None:
            gold, gmask, _ = self._batch(tgt, self.tgt_vocab, "target")
            if gold.shape[0] != B:
                raise ValueError(f"{B} source sentences but {gold.shape[0]} targets")
            n = gmask.sum(1)
            gold = torch.cat([gold, torch.full((B, 1), PAD_ID)], dim=1)
            gold[torch.arange(B), n] = EOS_ID  # targets y_1 .. y_n <eos>
            forced, limit = gold.to(dev), gold.shape[1]
        else:
            forced, limit = None, max_len or self.config.max_target_len
        pre = None
        if prefix is not None:
            pre, pmask, _ = self._batch(prefix, self.tgt_vocab, "target")
            pre, pmask = pre.to(dev), pmask.to(dev)
        state, prev = self.initial_state(enc), torch.full((B,), BOS_ID, device=dev)
        done = torch.zeros(B, dtype=torch.bool, device=dev)
        rec: dict[str, list] = {}
        for t in range(limit):
            st = self.step(enc, state, prev)
            logits = self.logits(st.s, st.context, st.embed)
            if forced is not None:
                token = forced[:, t]
            else:
                masked = logits.clone()
                masked[:, list(NEVER_EMITTED)] = float("-inf")
                token = masked.argmax(-1)
                if pre is not None and t < pre.shape[1]:
                    token = torch.where(pmask[:, t], pre[:, t], token)
            valid = ~done
            for name, value in (("target.inputs", prev), ("target.tokens", token), ("target.mask", valid),
                                ("decoder.h", st.s), ("decoder.context", st.context), ("logits", logits)):
                rec.setdefault(name, []).append(value)
            if st.c is not None:
                rec.setdefault("decoder.c", []).append(st.c)
            if st.weights is not None:
                rec.setdefault("decoder.attn.scores", []).append(st.scores)
                rec.setdefault("decoder.attn.weights", []).append(st.weights)
            done = done | (token == EOS_ID) | (token == PAD_ID)
            state, prev = st.state, token
            if forced is None and bool(done.all()):
                break
        out = {k: torch.stack(v, dim=1) for k, v in rec.items()}
        tmask = out["target.mask"]
        logp = torch.log_softmax(out["logits"].float(), dim=-1)
        loss = -logp.gather(-1, out["target.tokens"].clamp(min=0)[..., None]).squeeze(-1)
        out["loss"] = loss.masked_fill(~tmask, 0.0)  # 0 past a row's end: .mean() stays finite (see target.mask)
        for name in ("decoder.attn.scores", "decoder.attn.weights"):
            if name in out:
                out[name] = out[name].masked_fill(~tmask[..., None], float("nan"))
        out.update({"source.tokens": ids, "source.mask": mask, "encoder.h": enc.h})
        ordered = {k: out[k] for k in wanted}
        tgt_pieces = None
        if self.tgt_vocab is not None:
            rows = out["target.tokens"].tolist()
            tgt_pieces = [self.tgt_vocab.strings(r[: int(m)]) for r, m in zip(rows, tmask.sum(1).tolist())]
        return Seq2SeqTrace(ordered, src_pieces, tgt_pieces, teacher_forced=forced is not None)

    def translate(self, src, max_len: int | None = None, prefix=None) -> tuple[list[list[int]], Seq2SeqTrace]:
        """Greedy decoding: (emitted ids per row without <eos>, the trace of the run)."""
        tr = self.trace(src, prefix=prefix, max_len=max_len)
        rows = []
        for toks, m in zip(tr["target.tokens"].tolist(), tr["target.mask"].tolist()):
            row = [t for t, v in zip(toks, m) if v]
            rows.append(row[:-1] if row and row[-1] == EOS_ID else row)
        return rows, tr
