"""A recurrent language model (RNN / GRU / LSTM, and minGRU / minLSTM) whose run returns a full trace.

The fast path runs PyTorch's fused kernels one layer at a time, then rebuilds every
gate from the layer's weights, its input and its own outputs in a few batched matrix
products. Only the LSTM cell state needs a pass over time. ``reference.py`` holds a
plain formula-by-formula cell that the tests hold this path to. The minimal cells
(``minimal.py``, Feng et al. 2024) are layers of the same model: their gates read only x_t, so
they come straight from the layer's input and its log-space scan gives h.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from seqviz.checkpoints import CheckpointError, check_version, fill_from_folder, parse_config, read_json, save_weights
from seqviz.config import LMConfig
from seqviz.data.tokenizers import Tokenizer, TokenizerError, pad_batch
from seqviz.models.edits import by_layer, stepped_layer
from seqviz.models.lstm_gates import AGREE, fused_with_gates
from seqviz.models.minimal import MINIMAL, MinimalCell
from seqviz.pretrained import Pretrained
from seqviz.trace import Trace, check_names, loss_mask, trace_names

FUSED = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM, **MINIMAL}  # each answers (x, state) -> (h, state)


def embedding(num: int, dim: int, padding_idx: int | None = None) -> nn.Embedding:
    """``nn.Embedding(num, dim, padding_idx)`` initialised as PyTorch does (N(0, 1), the padding row 0, the
    same random draws), except on the meta device (checkpoint loading), where it is left empty: ``normal_``
    on a meta tensor imports ``torch._dynamo``, 2-5 s of CPU on the first checkpoint a process loads."""
    weight = torch.empty(num, dim)
    if not weight.is_meta:
        with torch.no_grad():
            nn.init.normal_(weight)
            if padding_idx is not None:
                weight[padding_idx].zero_()
    return nn.Embedding(num, dim, padding_idx=padding_idx, _weight=weight)


class RecurrentLM(nn.Module, Pretrained):
    """embedding -> n_layers single-layer fused cells -> linear head over the vocabulary.

    Layers are kept as separate single-layer modules so each layer's output is
    available to the trace; ``layers.{i}`` in the state dict mirrors ``layers.{i}.*``
    in the trace.
    """

    def __init__(self, config: LMConfig, tokenizer: Tokenizer | None = None):
        super().__init__()
        self.config = config
        self.tokenizer = tokenizer
        self.card: dict = {}
        cls = FUSED[config.cell]
        self.embed = embedding(config.vocab_size, config.d_embed)
        self.layers = nn.ModuleList(
            cls(config.d_embed if i == 0 else config.d_hidden, config.d_hidden, batch_first=True)
            for i in range(config.n_layers)
        )
        self.drop = nn.Dropout(config.dropout)
        self.head = nn.Linear(config.d_hidden, config.vocab_size)

    model_type = "recurrent_lm"
    config_class = LMConfig

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # ----------------------------------------------------------------- the protocol (seqviz.registry)
    folder_only = "a checkpoint is a folder (config.json, model.safetensors, vocab.json)"

    @classmethod
    def _from_pretrained(cls, path: Path, snapshot: int | None = None) -> "RecurrentLM":
        """config.json, vocab.json, then model.safetensors (or a snapshot's weights) checked against them."""
        config_path, vocab_path = path / "config.json", path / "vocab.json"
        data = read_json(config_path)
        if data.get("model_type", LMConfig.model_type) != LMConfig.model_type:
            raise CheckpointError(config_path, "its model_type is not recurrent_lm")
        check_version(data, config_path)
        vocab_data = read_json(vocab_path)
        config = parse_config(data, LMConfig, config_path)
        try:
            tokenizer = Tokenizer.from_dict(vocab_data)
        except TokenizerError as e:
            raise CheckpointError(vocab_path, f"invalid vocabulary: {e}") from None
        if len(tokenizer) != config.vocab_size:
            raise CheckpointError(vocab_path, f"vocabulary has {len(tokenizer)} tokens but the config "
                                  f"says vocab_size={config.vocab_size}")
        if tokenizer.kind != config.tokenizer:
            raise CheckpointError(vocab_path, f"vocabulary is {tokenizer.kind}-level but the config "
                                  f"says tokenizer={config.tokenizer}")
        with torch.device("meta"):  # no memory until the weights are known to fit (checkpoints.materialize)
            model = cls(config, tokenizer)
        return fill_from_folder(model, path, snapshot)

    def _save_pretrained(self, folder: Path) -> LMConfig:
        """vocab.json and model.safetensors."""
        if self.tokenizer is None:
            raise ValueError("a model needs its tokenizer to be saved")
        (folder / "vocab.json").write_text(json.dumps(self.tokenizer.to_dict(), ensure_ascii=False) + "\n")
        save_weights(self, folder / "model.safetensors")
        return self.config

    def trace_names(self) -> list[str]:
        return trace_names(self.config.cell, self.config.n_layers)

    def describe(self) -> dict:
        """Type, sizes, parameters, vocabulary and trace names (what ``python -m seqviz inspect`` prints)."""
        cfg = self.config
        vocab = self.tokenizer.tokens if self.tokenizer is not None else []
        return {"model_type": self.model_type, "cell": cfg.cell, "layers": cfg.n_layers, "embedding": cfg.d_embed,
                "hidden": cfg.d_hidden, "parameters": self.num_parameters(), "tokenizer": cfg.tokenizer,
                "vocab_size": cfg.vocab_size, "vocab_sample": vocab[:20], "trace_names": self.trace_names()}

    def forward(self, ids: torch.Tensor, state: list | None = None):
        """ids [B, T] -> (logits [B, T, V], per-layer final states). Used for training."""
        x = self.drop(self.embed(ids))
        new_state = []
        for i, rnn in enumerate(self.layers):
            x, s = rnn(x, None if state is None else state[i])
            new_state.append(s)
            x = self.drop(x)
        return self.head(x), new_state

    # ----------------------------------------------------------------- tracing
    def encode_batch(self, inputs) -> tuple[torch.Tensor, torch.Tensor, list[list[str]] | None]:
        """Text, list of texts, id lists or an id tensor -> (ids [B,T], mask [B,T], pieces)."""
        if isinstance(inputs, str):
            inputs = [inputs]
        if isinstance(inputs, torch.Tensor):
            ids = inputs.long().reshape(-1, inputs.shape[-1]) if inputs.dim() else inputs.view(1, 1)
            return ids, torch.ones_like(ids, dtype=torch.bool), self._pieces(ids.tolist())
        inputs = list(inputs)
        if not inputs:
            raise ValueError("nothing to trace: the input is empty")
        if all(isinstance(x, str) for x in inputs):
            if self.tokenizer is None:
                raise ValueError("this model has no tokenizer; pass token ids instead of text")
            encoded = [self.tokenizer.encode(x) for x in inputs]
            seqs, pieces = [e.ids for e in encoded], [e.pieces for e in encoded]
        else:
            seqs = [list(map(int, s)) for s in inputs]
            pieces = self._pieces(seqs)
        if any(len(s) == 0 for s in seqs):
            raise ValueError("nothing to trace: an input has no tokens")
        ids, mask = pad_batch(seqs)
        return ids, mask, pieces

    def _pieces(self, seqs):
        if self.tokenizer is None:
            return None
        return [[self.tokenizer.tokens[i] for i in s] for s in seqs]

    def trace(self, inputs, names=None, mask: torch.Tensor | None = None, edits=None) -> Trace:
        """Run the model and return its named internal tensors (see ``trace_names``).

        ``inputs``: a text, a list of texts (right-padded into a batch), id lists, or an id tensor ``[B, T]`` with
        an optional boolean ``mask [B, T]``. ``names``: keep only these (``None``: every name). ``edits``:
        ``[(state name, fn(state, t) -> state)]`` (``seqviz.models.edits``); an edited layer runs step by step
        through the plain cell, the others (and every unedited run) through the fused kernels.
        """
        ids, mask, pieces, wanted, edited = self._prepared(inputs, names, mask, edits)
        out: dict[str, torch.Tensor] = {}
        for part in self._parts(ids, mask, wanted, edited):
            out.update(part)
        return Trace({k: out[k] for k in wanted}, pieces)

    def walk(self, inputs, names=None, mask: torch.Tensor | None = None, edits=None):
        """The trace one layer at a time (``seqviz.trace.walk``): a ``Trace`` per layer that has a name asked for
        (tokens, mask and that layer's names; the first with the embedding, the last with the head's)."""
        ids, mask, pieces, wanted, edited = self._prepared(inputs, names, mask, edits)
        for part in self._parts(ids, mask, wanted, edited):
            yield Trace({k: part[k] for k in wanted if k in part} | {"tokens": ids, "mask": mask}, pieces)

    def _prepared(self, inputs, names, mask, edits):
        """(ids, mask, pieces, the names asked for in order, edits by layer), every input checked."""
        wanted = check_names(names, self.trace_names())
        edited = by_layer(edits, self.config.cell, self.config.n_layers)
        ids, auto_mask, pieces = self.encode_batch(inputs)
        if self.config.vocab_size <= int(ids.max()) or int(ids.min()) < 0:
            raise ValueError(f"token ids must lie in [0, {self.config.vocab_size})")
        mask = auto_mask if mask is None else mask.bool().reshape(ids.shape)
        return ids, mask, pieces, wanted, edited

    @torch.no_grad()  # on a generator: grad mode is set around each step of it, not while the caller runs
    def _parts(self, ids, mask, wanted, edited):
        """Yield {name: tensor} layer by layer up to the last layer named (the first with tokens, mask and the
        embedding), then the head's names if any is asked. Only what was asked is computed (TransformerLens's
        names_filter): no gates for a layer whose h alone is wanted, no cell-state scan without "c", no layers
        above the last needed."""
        device = self.embed.weight.device
        ids_d = ids.to(device)
        x = self.embed(ids_d)  # [B, T, E]
        out: dict[str, torch.Tensor] = {"tokens": ids, "mask": mask, "embed": x}
        head = bool({"logits", "loss", "loss_mask"} & set(wanted))
        deepest = max((int(n.split(".")[1]) for n in wanted if n.startswith("layers.")), default=-1)
        for i, rnn in enumerate(self.layers[: len(self.layers) if head else deepest + 1]):
            prefix = f"layers.{i}"
            leaves = {n[len(prefix) + 1:] for n in wanted if n.startswith(prefix + ".")}
            out.update(self._layer(i, rnn, x, leaves, edited.get(i)))
            x = out[f"{prefix}.h"]
            if leaves or i == deepest:
                yield out
                out = {}
        if head:
            logits = self.head(x)  # [B, T, V]
            out.update(logits=logits, loss=next_token_loss(logits, ids_d, mask.to(device)), loss_mask=loss_mask(mask))
        if out:
            yield out

    def _layer(self, i: int, rnn: nn.Module, x: torch.Tensor, leaves: set, edits: dict | None) -> dict:
        """Layer ``i``'s h and the ``leaves`` asked of it, from its input x [B, T, In]."""
        prefix, cell = f"layers.{i}", self.config.cell
        gates = None
        if edits:  # [B, T, H]; c of an LSTM, as edited (None for the other cells)
            h, c = stepped_layer(layer_step(cell, rnn), x, rnn.hidden_size, edits, lstm=cell == "lstm")
        elif cell == "lstm" and (fused := fused_with_gates(rnn, x)) is not None:
            # the kernel's own gates (checked in _rebuild_lstm); its h whether or not they are asked, so a layer's
            # values never depend on the names asked of the layers below it
            (h, gates), c = fused, None
        else:
            h, c = _layer_output(rnn, x), None
        out = {}
        if leaves - {"h"}:  # the gates read x_t and the (edited) h_{t-1}: rebuilt as for a fused run
            out.update(_rebuild_layer(cell, rnn, x, h, prefix, cell_state="c" in leaves and c is None, gates=gates))
            if c is not None:
                out[f"{prefix}.c"] = c
        out[f"{prefix}.h"] = h
        return out


def _layer_output(rnn: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """h [B, T, H] of one layer from its input: the fused kernel, or for a minimal cell its recurrence
    h_t = a_t h_{t-1} + b_t by ``cell_scan`` (products and sums: the loop's float32 error at any T, where the
    log-space scan training uses drifts by ~1e-4 over 1,000 tokens)."""
    if isinstance(rnn, MinimalCell):
        log_a, log_b = rnn.coefficients(x)
        return cell_scan(log_a.exp(), log_b.exp())
    return rnn(x)[0]


def _rebuild_layer(cell: str, rnn: nn.Module, x: torch.Tensor, h: torch.Tensor, prefix: str,
                   cell_state: bool = True, gates: torch.Tensor | None = None) -> dict:
    """Gates of one layer from its weights, its input x [B,T,In] and outputs h [B,T,H] (LSTM: c too if asked; its
    ``gates`` [B, T, 4H] as the fused kernel kept them, where it did: ``lstm_gates``)."""
    if isinstance(rnn, MinimalCell):  # gates of x_t alone
        return {f"{prefix}.h": h, **rnn.signals(x, prefix)}
    if cell == "lstm":
        return _rebuild_lstm(rnn, x, h, prefix, cell_state, gates)
    h_prev = torch.cat([h.new_zeros(h.shape[0], 1, h.shape[2]), h[:, :-1]], dim=1)  # h_{t-1}
    gi = F.linear(x, rnn.weight_ih_l0, rnn.bias_ih_l0)  # W_i* x_t + b_i*
    gh = F.linear(h_prev, rnn.weight_hh_l0, rnn.bias_hh_l0)  # W_h* h_{t-1} + b_h*
    if cell == "rnn":
        return {f"{prefix}.h": h, f"{prefix}.preact": gi + gh}
    # PyTorch stacks GRU gates as r, z, n; the reset gate scales (W_hn h + b_hn).
    i_r, i_z, i_n = gi.chunk(3, dim=-1)
    h_r, h_z, h_n = gh.chunk(3, dim=-1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return {f"{prefix}.h": h, f"{prefix}.gates.reset": r, f"{prefix}.gates.update": z,
            f"{prefix}.gates.new": n}


def _rebuild_lstm(rnn: nn.Module, x: torch.Tensor, h: torch.Tensor, prefix: str, cell_state: bool,
                  gates: torch.Tensor | None = None) -> dict:
    """The LSTM's gates (PyTorch stacks them as i, f, g, o) and, if asked, its cell state c_t = f_t c_(t−1) + i_t g_t.

    ``gates``: the activated gates [B, T, 4H] the fused kernel kept (``lstm_gates.fused_with_gates``), used only if
    o_t tanh(c_t) is its output h_t at every step (``lstm_gates.AGREE``). Else rebuilt: W_i* x_t + b_i* + W_h* h_{t-1}
    + b_h*, the input product written into one buffer and the recurrent product accumulated into it by the same
    BLAS call (h_{-1} = 0, so step 0 keeps the biases only); the four activations one sigmoid over the whole buffer,
    in place, with tanh(a) = 2 sigmoid(2a) - 1 for the candidate (|error| <= 2.4e-7). The gates are views
    [B, T, H] of that buffer (not contiguous)."""
    width = h.shape[2]
    if gates is not None:
        i, f, g, o = (gates[..., k * width:(k + 1) * width] for k in range(4))
        c = cell_scan(f, i * g)
        if float((o * torch.tanh(c) - h).abs().max()) <= AGREE:
            kept = {f"{prefix}.c": c} if cell_state else {}
            return {f"{prefix}.h": h, f"{prefix}.gates.input": i, f"{prefix}.gates.forget": f,
                    f"{prefix}.gates.cell": g, f"{prefix}.gates.output": o, **kept}
    pre = _lstm_preactivations(rnn, x, h)
    pre[..., 2 * width:3 * width].mul_(2)
    torch.sigmoid_(pre)
    i, f, g, o = (pre[..., k * width:(k + 1) * width] for k in range(4))
    g.mul_(2).sub_(1)  # tanh of the candidate's pre-activation
    out = {f"{prefix}.h": h, f"{prefix}.gates.input": i, f"{prefix}.gates.forget": f, f"{prefix}.gates.cell": g,
           f"{prefix}.gates.output": o}
    if cell_state:
        out[f"{prefix}.c"] = cell_scan(f, i * g)
    return out


def _lstm_preactivations(rnn: nn.Module, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """[B, T, 4H]: W_i* x_t + b_i* + W_h* h_{t-1} + b_h* (h_{-1} = 0), in one buffer."""
    batch, steps, width = h.shape
    pre = torch.addmm(rnn.bias_ih_l0 + rnn.bias_hh_l0, x.reshape(batch * steps, -1), rnn.weight_ih_l0.T)
    pre = pre.view(batch, steps, 4 * width)
    for b in range(batch):  # pre[b, 1:] += h[b, :-1] W_hh^T, in place (no [T, 4H] temporary)
        pre[b, 1:].addmm_(h[b, :-1], rnn.weight_hh_l0.T)
    return pre


def cell_scan(f: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """c_t = f_t * c_{t-1} + u_t with c_{-1} = 0, over dim 1 (the one sequential pass), for f, u [B, T, H].

    A chunked scan: the T steps are cut into chunks of L ~ sqrt(T); (1) within every chunk at once, L
    steps give the chunk's own recurrence from a zero start and the running product A of its f; (2) the
    T / L chunk ends are chained in order, which gives each chunk's incoming state; (3) one pass adds
    A * incoming. About 3 sqrt(T) batched operations instead of T small ones, and only products and sums
    (no division, so a forget gate near 0 cannot blow up). On T = 2,000, H = 256: 2.1 ms against 3.8 ms
    for a log2(T)-step Hillis-Steele scan and 16 ms for the loop over time (the 2-core CPU).
    """
    batch, steps, width = u.shape
    c = torch.empty(batch, steps, width, dtype=u.dtype, device=u.device)
    size = max(1, math.isqrt(steps))  # L
    chunks = steps // size
    whole = chunks * size  # the steps in whole chunks; the rest (fewer than L) run one by one
    if chunks > 1:
        fc = f[:, :whole].reshape(batch, chunks, size, width)
        uc = u[:, :whole].reshape(batch, chunks, size, width)
        own, kept = torch.empty_like(uc), torch.empty_like(fc)
        own[:, :, 0], kept[:, :, 0] = uc[:, :, 0], fc[:, :, 0]
        for j in range(1, size):  # (1) every chunk from a zero state
            torch.addcmul(uc[:, :, j], fc[:, :, j], own[:, :, j - 1], out=own[:, :, j])
            torch.mul(kept[:, :, j - 1], fc[:, :, j], out=kept[:, :, j])
        incoming = torch.zeros(batch, chunks, width, dtype=u.dtype, device=u.device)
        for k in range(1, chunks):  # (2) the state entering chunk k
            torch.addcmul(own[:, k - 1, -1], kept[:, k - 1, -1], incoming[:, k - 1], out=incoming[:, k])
        torch.addcmul(own, kept, incoming[:, :, None], out=c[:, :whole].view(batch, chunks, size, width))  # (3)
    else:
        whole = 0
    prev = c[:, whole - 1] if whole else torch.zeros_like(u[:, 0])
    for t in range(whole, steps):
        prev = torch.addcmul(u[:, t], f[:, t], prev, out=c[:, t])
    return c


LOSS_CHUNK = 1 << 22  # logits read at once by next_token_loss (16 MB: a 50k vocabulary's 80 tokens)


def next_token_loss(logits: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """loss[b, t] = -log p(ids[b, t+1] | ids[b, :t+1]) in nats, shape [B, T-1]; 0 where row b is padded.

    One value per prediction, so for one text ``loss.mean()`` is its mean next-token loss; in a
    padded batch, average over ``loss_mask(mask)`` (``Trace.mean_loss``).
    """
    if ids.shape[1] < 2:
        return logits.new_zeros(ids.shape[0], 0)
    batch, steps, vocab = logits.shape[0], ids.shape[1] - 1, logits.shape[-1]
    nll = torch.empty(batch, steps, dtype=torch.float32, device=logits.device)
    rows = max(1, LOSS_CHUNK // max(1, batch * vocab))  # -log softmax in chunks of time: no [B, T, V] temporary
    for lo in range(0, steps, rows):
        hi = min(steps, lo + rows)
        part = logits[:, lo:hi].float()
        nll[:, lo:hi] = torch.logsumexp(part, dim=-1) - part.gather(-1, ids[:, lo + 1:hi + 1, None]).squeeze(-1)
    valid = (mask[:, 1:] & mask[:, :-1]).to(nll.device)
    return torch.where(valid, nll, torch.zeros_like(nll)).to(logits.dtype)


# The same equations as the fused layers, as per-step functional kernels (no nn.Module overhead).
CELL_STEP = {"rnn": torch.rnn_tanh_cell, "gru": torch.gru_cell, "lstm": torch.lstm_cell}


def layer_step(cell: str, rnn: nn.Module):
    """One layer's step function (x [1, In], state) -> state, with the layer's own weights."""
    if isinstance(rnn, MinimalCell):
        return rnn.step
    step, weights = CELL_STEP[cell], (rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0)
    return lambda x, hx: step(x, hx, *weights)


def generate(model: RecurrentLM, ids: list[int], n: int, temperature: float = 1.0,
             seed: int | None = 0) -> list[int]:
    """Continue ``ids`` by ``n`` tokens; temperature 0 is greedy. Deterministic for a seed.

    Special tokens (<pad>, <unk>) are never produced. The prompt runs through the fused
    layers once; each new token then steps through ``CELL_STEP`` kernels with the same
    weights (about 4x faster per token than calling the fused modules on one token).
    """
    if not ids:
        raise ValueError("generation needs at least one prompt token")
    if hasattr(model, "sample"):  # a family that steps itself (a transformers Mamba: seqviz.hf_mamba_text.sample)
        return model.sample(ids, n, temperature=temperature, seed=seed)
    banned = model.tokenizer.special_ids if model.tokenizer is not None else []
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    steps = [layer_step(model.config.cell, rnn) for rnn in model.layers]
    device = model.embed.weight.device
    with torch.no_grad():
        logits, states = model(torch.tensor([ids], device=device))
        # nn.LSTM state is (h, c), each [1, 1, H]; GRU/RNN state is h [1, 1, H] -> cells take [1, H].
        hx = [(s[0][0], s[1][0]) if isinstance(s, tuple) else s[0] for s in states]
        last = logits[0, -1].float()
        out = []
        for _ in range(n):
            last[banned] = -float("inf")
            if temperature <= 0:
                nxt = int(last.argmax())
            else:
                probs = torch.softmax(last / temperature, dim=-1).cpu()
                nxt = int(torch.multinomial(probs, 1, generator=gen))
            out.append(nxt)
            x = model.embed.weight[nxt].unsqueeze(0)  # [1, E]
            for i, step in enumerate(steps):
                hx[i] = step(x, hx[i])
                x = hx[i][0] if isinstance(hx[i], tuple) else hx[i]  # [1, H]
            last = model.head(x)[0].float()
    return out
