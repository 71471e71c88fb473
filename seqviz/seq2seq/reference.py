"""A plain, one-sentence-at-a-time decoder: the attention formulas written out, for parity tests.

Slow on purpose. Each source sentence is encoded on its own (no padding, no reversal index)
and every score is the literal sum of Bahdanau et al. 2015, appendix A.1.2:
e_tj = v . tanh(W_s s_{t-1} + W_h h_j + b), alpha_tj = exp(e_tj) / sum_k exp(e_tk),
c_t = sum_j alpha_tj h_j. The fast batched path in ``model.py`` must agree with it.
"""

from __future__ import annotations

import math

import torch

from seqviz.seq2seq.model import Seq2Seq
from seqviz.seq2seq.vocab import BOS_ID, EOS_ID


def attention_step(s_prev, h, W_s, W_h, b, v) -> tuple[list[float], list[float], torch.Tensor]:
    """One sentence, one step: s_prev [D], h [S, A] (real positions only) -> (e, alpha, c)."""
    e = []
    for j in range(h.shape[0]):
        hidden = [math.tanh(float(W_s[a] @ s_prev + W_h[a] @ h[j] + b[a])) for a in range(W_s.shape[0])]
        e.append(sum(float(v[a]) * hidden[a] for a in range(len(hidden))))
    top = max(e)  # subtract the max before exp: same ratio, no overflow
    exps = [math.exp(x - top) for x in e]
    alpha = [x / sum(exps) for x in exps]
    c = sum(alpha[j] * h[j] for j in range(h.shape[0]))
    return e, alpha, c


@torch.no_grad()
def reference_decode(model: Seq2Seq, src: list[int], tgt: list[int]) -> dict[str, torch.Tensor]:
    """Teacher-forced run of one pair: per step scores/weights [T,S], h [T,D], logits [T,V]."""
    x = model.src_embed(torch.tensor([src]))  # [1, S, E], one unpadded sentence
    fwd = model.encoder[0](x)[0][0]  # [S, He]
    parts, finals = [fwd], [fwd[-1]]
    if len(model.encoder) == 2:
        bwd = model.encoder[1](x.flip(1))[0][0].flip(0)  # read right to left, back in source order
        parts.append(bwd)
        finals.append(bwd[0])
    h = torch.cat(parts, dim=-1)  # [S, A]
    summary = torch.cat(finals)
    s = torch.tanh(model.init.weight @ summary + model.init.bias)
    cell = torch.zeros_like(s)
    rows: dict[str, list] = {"scores": [], "weights": [], "h": [], "logits": []}
    inputs = [BOS_ID] + list(tgt)
    for t in range(len(tgt) + 1):  # the last step predicts <eos>
        emb = model.tgt_embed.weight[inputs[t]]
        if model.attn is not None:
            att = model.attn
            e, alpha, c = attention_step(s, h, att.W_s.weight, att.W_h.weight, att.W_h.bias, att.v.weight[0])
            rows["scores"].append(torch.tensor(e))
            rows["weights"].append(torch.tensor(alpha))
        else:
            c = summary
        inp = torch.cat([emb, c])[None]
        if model.config.cell == "lstm":
            s, cell = (v[0] for v in model.cell(inp, (s[None], cell[None])))
        else:
            s = model.cell(inp, s[None])[0]
        rows["h"].append(s)
        rows["logits"].append(model.out(torch.cat([s, c, emb])))
    result = {k: torch.stack(v) for k, v in rows.items() if v}
    result["targets"] = torch.tensor(list(tgt) + [EOS_ID])
    return result
