"""The encoder-decoders users copy, written from their tutorials' equations, with a one-sentence runner each.

PyTorch's "NLP From Scratch: Translation with a Sequence to Sequence Network and Attention" (batch first:
EncoderRNN, DecoderRNN, BahdanauAttention, AttnDecoderRNN) and bentrevett/pytorch-seq2seq notebooks 1-3
(sequence first). ``run(model, src_ids, inputs, steps, banned)`` decodes one sentence the module's own
way: teacher-forced on ``inputs`` (the gold tokens) or greedy (never choosing a ``banned`` id), and
returns (logits [T, V], attention weights [T, S] or None, chosen ids).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


# ------------------------------------------------------------------ the PyTorch tutorial (batch first)
class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)

    def forward(self, input):
        return self.gru(self.embedding(input))  # (outputs, hidden)


class DecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    def forward_step(self, input, hidden, encoder_outputs=None):
        output = F.relu(self.embedding(input))
        output, hidden = self.gru(output, hidden)
        return self.out(output), hidden, None


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        return torch.bmm(weights, keys), weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input)
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        output, hidden = self.gru(torch.cat((embedded, context), dim=2), hidden)
        return self.out(output), hidden, attn_weights


class LuongAttention(nn.Module):
    """Luong et al. 2015's scores in the tutorial's decoder: general s . (W h_j + b), or dot s . h_j."""

    def __init__(self, hidden_size, general=True):
        super().__init__()
        self.attn = nn.Linear(hidden_size, hidden_size) if general else None

    def forward(self, query, keys):
        scores = torch.bmm(query, (self.attn(keys) if self.attn is not None else keys).transpose(1, 2))
        weights = F.softmax(scores, dim=-1)
        return torch.bmm(weights, keys), weights


class Tutorial(nn.Module):
    def __init__(self, src_size, tgt_size, hidden, attention):
        super().__init__()
        self.encoder = EncoderRNN(src_size, hidden)
        self.decoder = (AttnDecoderRNN if attention else DecoderRNN)(hidden, tgt_size)

    def run(self, src_ids, inputs, steps, sos, banned=()):
        outputs, hidden = self.encoder(torch.tensor([src_ids]))
        def step(prev, state):
            return _squeeze(*self.decoder.forward_step(torch.tensor([[prev]]), state, outputs))

        return _loop(step, hidden, inputs, steps, sos, banned)


def _squeeze(logits, hidden, weights):
    return logits[0, 0], hidden, None if weights is None else weights[0, 0]


def _loop(step, state, inputs, steps, sos, banned):
    prev, rows, weights, chosen = sos, [], [], []
    for t in range(steps):
        logits, state, w = step(prev, state)
        rows.append(logits)
        if w is not None:
            weights.append(w)
        if inputs is not None:
            prev = inputs[t]
        else:
            masked = logits.clone()
            masked[list(banned)] = float("-inf")
            prev = int(masked.argmax())
        chosen.append(prev)
    return torch.stack(rows), torch.stack(weights) if weights else None, chosen


# ------------------------------------------------------------------ bentrevett/pytorch-seq2seq (sequence first)
class Encoder1(nn.Module):
    def __init__(self, input_dim, emb_dim, hid_dim, n_layers):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.LSTM(emb_dim, hid_dim, n_layers)

    def forward(self, src):
        _, (hidden, cell) = self.rnn(self.embedding(src))
        return hidden, cell


class Decoder1(nn.Module):
    def __init__(self, output_dim, emb_dim, hid_dim, n_layers):
        super().__init__()
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.LSTM(emb_dim, hid_dim, n_layers)
        self.fc_out = nn.Linear(hid_dim, output_dim)

    def forward(self, input, hidden, cell):
        embedded = self.embedding(input.unsqueeze(0))
        output, (hidden, cell) = self.rnn(embedded, (hidden, cell))
        return self.fc_out(output.squeeze(0)), hidden, cell


class Encoder2(nn.Module):
    def __init__(self, input_dim, emb_dim, hid_dim):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim, hid_dim)

    def forward(self, src):
        _, hidden = self.rnn(self.embedding(src))
        return hidden


class Decoder2(nn.Module):
    def __init__(self, output_dim, emb_dim, hid_dim):
        super().__init__()
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim + hid_dim, hid_dim)
        self.fc_out = nn.Linear(emb_dim + hid_dim * 2, output_dim)

    def forward(self, input, hidden, context):
        embedded = self.embedding(input.unsqueeze(0))
        output, hidden = self.rnn(torch.cat((embedded, context), dim=2), hidden)
        output = torch.cat((embedded.squeeze(0), hidden.squeeze(0), context.squeeze(0)), dim=1)
        return self.fc_out(output), hidden


class Encoder3(nn.Module):
    def __init__(self, input_dim, emb_dim, enc_hid_dim, dec_hid_dim):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim, enc_hid_dim, bidirectional=True)
        self.fc = nn.Linear(enc_hid_dim * 2, dec_hid_dim)

    def forward(self, src):
        outputs, hidden = self.rnn(self.embedding(src))
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
        return outputs, hidden


class Attention3(nn.Module):
    def __init__(self, enc_hid_dim, dec_hid_dim):
        super().__init__()
        self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
        self.v = nn.Linear(dec_hid_dim, 1, bias=False)

    def forward(self, hidden, encoder_outputs):
        src_len = encoder_outputs.shape[0]
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        return F.softmax(self.v(energy).squeeze(2), dim=1)


class Decoder3(nn.Module):
    def __init__(self, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, attention):
        super().__init__()
        self.attention = attention
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.GRU((enc_hid_dim * 2) + emb_dim, dec_hid_dim)
        self.fc_out = nn.Linear((enc_hid_dim * 2) + dec_hid_dim + emb_dim, output_dim)

    def forward(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input.unsqueeze(0))
        a = self.attention(hidden, encoder_outputs).unsqueeze(1)
        weighted = torch.bmm(a, encoder_outputs.permute(1, 0, 2)).permute(1, 0, 2)
        output, hidden = self.rnn(torch.cat((embedded, weighted), dim=2), hidden.unsqueeze(0))
        prediction = self.fc_out(torch.cat((output.squeeze(0), weighted.squeeze(0), embedded.squeeze(0)), dim=1))
        return prediction, hidden.squeeze(0), a.squeeze(1)


class Bentrevett(nn.Module):
    def __init__(self, notebook, src_size, tgt_size, emb=5, hid=7, layers=2):
        super().__init__()
        self.notebook = notebook
        if notebook == 1:
            self.encoder, self.decoder = Encoder1(src_size, emb, hid, layers), Decoder1(tgt_size, emb, hid, layers)
        elif notebook == 2:
            self.encoder, self.decoder = Encoder2(src_size, emb, hid), Decoder2(tgt_size, emb, hid)
        else:
            self.encoder = Encoder3(src_size, emb, hid, hid + 2)
            self.decoder = Decoder3(tgt_size, emb, hid, hid + 2, Attention3(hid, hid + 2))

    def run(self, src_ids, inputs, steps, sos, banned=()):
        src = torch.tensor(src_ids)[:, None]  # [S, 1]
        if self.notebook == 1:
            state = self.encoder(src)

            def step(prev, st):
                p, h, c = self.decoder(torch.tensor([prev]), *st)
                return p[0], (h, c), None
        elif self.notebook == 2:
            state = context = self.encoder(src)

            def step(prev, h):
                p, h2 = self.decoder(torch.tensor([prev]), h, context)
                return p[0], h2, None
        else:
            outputs, state = self.encoder(src)

            def step(prev, h):
                p, h2, a = self.decoder(torch.tensor([prev]), h, outputs)
                return p[0], h2, a[0]
        return _loop(step, state, inputs, steps, sos, banned)


def randomize(model: nn.Module, seed: int, scale: float = 0.6) -> nn.Module:
    """Weights far from PyTorch's small defaults, so attention is far from uniform."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, scale)
    return model.eval()
