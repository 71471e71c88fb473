"""What lets a transformers Mamba stand where a recurrent LM stands: its shape, its tokenizer, its sampler.

The recurrent-LM pages and views read ``model.config`` (``n_layers``, ``d_hidden``, ``cell`` ...),
``model.tokenizer`` (``encode`` -> ids, pieces, unknown; ``tokens``; ``decode``) and ``model.trace``.
``MambaShape`` gives a Mamba's sizes under LMConfig's names (cell "mamba"); ``TextTokenizer`` wraps
a transformers tokenizer in seqviz's ``Tokenizer`` interface (pieces are the user's own text,
cut at the tokens' offsets, so they join back into it); ``sample`` continues a text one token at a
time with each block's recurrent state (its last conv inputs and s_t), the same equations as
``hf_mamba.mamba_block``'s scan, so a token costs one step, not a re-read of the prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqviz.data.tokenizers import Encoded


@dataclass(frozen=True)
class MambaShape:
    """A Mamba's sizes under the recurrent LM's config names (what the pages read of ``model.config``)."""

    n_layers: int  # blocks; layers.{i}.h is the residual stream after block i
    d_embed: int  # the embedding's width (= the residual stream's)
    d_hidden: int  # width of layers.{i}.h: the residual stream, hidden_size
    vocab_size: int  # rows of the embedding
    channels: int  # D, intermediate_size: the scan's channels (dt, z, decay per channel)
    states: int  # N, state_size: states per channel
    cell: str = "mamba"  # not one of seqviz's cells: the signal table has its own row
    tokenizer: str = "subword"  # a transformers tokenizer's pieces (neither one character nor one word)
    dropout: float = 0.0

    @classmethod
    def of(cls, hf_config) -> "MambaShape":
        return cls(hf_config.num_hidden_layers, hf_config.hidden_size, hf_config.hidden_size, hf_config.vocab_size,
                   hf_config.intermediate_size, hf_config.state_size)


class TextTokenizer:
    """A transformers tokenizer behind seqviz's ``Tokenizer`` interface (kind "subword")."""

    kind = "subword"

    def __init__(self, hf, vocab_size: int):
        self.hf, self.vocab_size = hf, int(vocab_size)
        self.unk_id = hf.unk_token_id
        self.special_ids = sorted({i for i in hf.all_special_ids if i is not None and i < self.vocab_size})
        known = hf.convert_ids_to_tokens(list(range(min(len(hf), self.vocab_size))))
        self.tokens = [t or f"<{i}>" for i, t in enumerate(known)] + \
            [f"<{i}>" for i in range(len(known), self.vocab_size)]  # ids the model has and the tokenizer not

    def __len__(self) -> int:
        return self.vocab_size

    def encode(self, text: str) -> Encoded:
        """Ids, and each token's piece of ``text`` (from its start to the next token's start), unknowns named."""
        enc = self.hf(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, starts = list(enc["input_ids"]), [s for s, _e in enc["offset_mapping"]]
        starts = [0] + starts[1:] if starts else []
        pieces = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
        kept, kept_pieces, unknown = [], [], []
        for i, piece in zip(ids, pieces):
            if i == self.unk_id or i >= self.vocab_size:
                if piece not in unknown:
                    unknown.append(piece)
                if self.unk_id is None or i >= self.vocab_size:
                    continue
            kept.append(i)
            kept_pieces.append(piece)
        return Encoded(kept, kept_pieces, unknown)

    def decode(self, ids) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=True)


def _block_step(block, h, conv, s):
    """One token through one ``MambaBlock``: h [1, H], conv [1, D, K-1] (its last inputs), s [1, D, N]."""
    import torch
    import torch.nn.functional as F

    mixer = block.mixer
    x, z = mixer.in_proj(block.norm(h)).chunk(2, dim=-1)  # [1, D] each
    window = torch.cat([conv, x[..., None]], -1)  # [1, D, K]
    u = mixer.act((window * mixer.conv1d.weight[:, 0]).sum(-1) + mixer.conv1d.bias)
    step, B, C = torch.split(mixer.x_proj(u), [mixer.time_step_rank, mixer.ssm_state_size, mixer.ssm_state_size], -1)
    dt = F.softplus(mixer.dt_proj(step))  # [1, D]
    A = -torch.exp(mixer.A_log.float())
    s = torch.exp(dt[..., None] * A) * s + dt[..., None] * B[:, None, :] * u[..., None]
    y = (s * C[:, None, :]).sum(-1) + u * mixer.D
    return h + mixer.out_proj(y * F.silu(z)), window[..., 1:], s


def sample(lm, ids: list[int], n: int, temperature: float = 1.0, seed: int | None = 0) -> list[int]:
    """``n`` tokens after ``ids`` (temperature 0: the likeliest each step), deterministic for a seed; special
    tokens are never produced. The prompt is read token by token, carrying each block's state."""
    import torch

    if not ids:
        raise ValueError("generation needs at least one prompt token")
    backbone, banned = lm.model.backbone, (lm.tokenizer.special_ids if lm.tokenizer is not None else [])
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    cfg = lm.config
    k = backbone.layers[0].mixer.conv_kernel_size
    conv = [torch.zeros(1, cfg.channels, k - 1) for _ in backbone.layers]
    state = [torch.zeros(1, cfg.channels, cfg.states) for _ in backbone.layers]
    out: list[int] = []
    with torch.no_grad():
        for t in range(len(ids) + n):
            h = backbone.embeddings(torch.tensor([ids[t] if t < len(ids) else out[-1]]))
            for i, block in enumerate(backbone.layers):
                h, conv[i], state[i] = _block_step(block, h, conv[i], state[i])
            if t < len(ids) - 1:
                continue
            last = lm.model.lm_head(backbone.norm_f(h))[0].float()
            last[banned] = -float("inf")
            if temperature <= 0:
                out.append(int(last.argmax()))
            else:
                out.append(int(torch.multinomial(torch.softmax(last / temperature, -1), 1, generator=gen)))
            if len(out) == n:
                break
    return out
