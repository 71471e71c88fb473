"""transformers Mamba causal LMs (Gu & Dao 2023): safe loading and a trace of the selective scan.

A Mamba checkpoint is a transformers folder (``config.json`` with ``model_type: mamba``,
``model.safetensors``, optionally tokenizer files); it loads through ``MambaForCausalLM`` with
``use_safetensors=True``, ``trust_remote_code=False`` and ``local_files_only=True``, after the
config's tensors are checked against the safetensors header on the meta device. Pickled weights
are refused.

The trace re-runs each block from its own weights with transformers' reference equations (Mamba
section 3; ``MambaMixer``'s sequential path), one named tensor per quantity (D channels, N states)::

    layers.{i}.h      [B, T, H]     the residual stream after block i (= transformers' hidden_states[i])
    layers.{i}.x      [B, T, D]     u_t, the scan's input (in_proj, causal conv, SiLU)
    layers.{i}.dt     [B, T, D]     Δ_t = softplus(W_Δ x_proj(u_t) + b_Δ), the step per channel
    layers.{i}.B      [B, T, N]     B_t (input-dependent: the selection)
    layers.{i}.C      [B, T, N]     C_t
    layers.{i}.z      [B, T, D]     the gate's input: y_t is multiplied by SiLU(z_t)
    layers.{i}.gates.decay     [B, T, D]  exp(Δ_t A) of each channel's slowest state (its longest memory)
    layers.{i}.gates.output_z  [B, T, D]  SiLU(z_t), the output gate
    layers.{i}.s      [B, T, D]     s_t of each channel's slowest state: what that decay keeps
    layers.{i}.decay  [B, T, D, N]  exp(Δ_t A), what the state keeps per channel and state (only when asked)
    layers.{i}.state  [B, T, D, N]  s_t = exp(Δ_t A) s_{t-1} + Δ_t B_t u_t (only when asked)

A = −exp(A_log) [D, N] is the same at every step; the decay is Mamba's forget gate. Since A < 0 is
fixed, each channel's slowest state (A nearest 0) decays least at every step, so its decay is a
per-token gate whose product is that channel's memory, as ∏ f is an LSTM unit's (the gates pages). The scan is
``recurrent.cell_scan`` over the D·N lanes (products and sums, as the sequential loop).
torch and transformers are imported inside the functions: importing this module costs neither.
"""

from __future__ import annotations

from pathlib import Path

from seqviz.files import CheckpointError, read_json
from seqviz.pretrained import Pretrained, quiet_loading

MAX_PARAMETERS = 200_000_000  # what a CPU page can trace at all (mamba-130m is 130 M)
LAYER_LEAVES = ("h", "x", "dt", "B", "C", "z", "gates.decay", "gates.output_z", "s", "decay", "state")
ON_REQUEST = ("decay", "state")  # T x D x N each: in a full trace only when named


def mamba_trace_names(n_layers: int) -> list[str]:
    """Every name a Mamba trace can hold, in order (``names=None`` leaves out ``ON_REQUEST``)."""
    names = ["tokens", "mask", "embed"]
    for i in range(n_layers):
        names += [f"layers.{i}.{leaf}" for leaf in LAYER_LEAVES]
    return names + ["logits", "loss", "loss_mask"]


def check_mamba_folder(folder: Path) -> dict:
    """config.json of a transformers Mamba and safetensors weights covering it, or one CheckpointError."""
    import torch
    from safetensors import safe_open
    from transformers import MambaConfig, MambaForCausalLM

    config = read_json(folder / "config.json")
    if config.get("model_type") != "mamba":
        raise CheckpointError(folder / "config.json", "not a transformers Mamba config (model_type must be mamba)")
    weights = sorted(folder.glob("*.safetensors"))
    if not weights:
        pickled = sorted(p.name for p in folder.iterdir() if p.suffix in (".bin", ".pt", ".pth", ".ckpt", ".pkl"))
        hint = f"only pickled weights ({', '.join(pickled)}); seqviz never unpickles" if pickled else \
            "no model.safetensors (or sharded *.safetensors) in the folder"
        raise CheckpointError(folder, hint)
    try:
        cfg = MambaConfig.from_pretrained(folder, local_files_only=True)
    except Exception as e:  # noqa: BLE001 - one line for the user
        raise CheckpointError(folder / "config.json", f"not a valid Mamba config ({type(e).__name__})") from None
    with torch.device("meta"):
        skeleton = MambaForCausalLM(cfg)
    if sum(p.numel() for p in skeleton.parameters()) > MAX_PARAMETERS:
        raise CheckpointError(folder / "config.json", f"the config asks for more than {MAX_PARAMETERS:,} parameters")
    stored: dict[str, tuple] = {}
    for f in weights:
        try:
            with safe_open(str(f), "pt") as h:
                stored.update({k: tuple(h.get_slice(k).get_shape()) for k in h.keys()})
        except Exception as e:  # noqa: BLE001 - a truncated or lying header
            raise CheckpointError(f, f"not a valid safetensors file ({str(e)[:120]})") from None
    wanted = {k: tuple(v.shape) for k, v in skeleton.state_dict().items()}
    tied = "lm_head.weight" if cfg.tie_word_embeddings else None
    missing = [k for k in wanted if k not in stored and k != tied]
    wrong = [k for k in wanted if k in stored and stored[k] != wanted[k]]
    if missing or wrong:
        bad = (missing + wrong)[:3]
        raise CheckpointError(folder, f"the weights do not match config.json ({len(missing)} missing, {len(wrong)} "
                              f"of another shape, e.g. {', '.join(bad)}); refused rather than filled at random")
    return config


class MambaLM(Pretrained):
    """A transformers ``MambaForCausalLM`` and its tokenizer (if the folder has one), answering with traces."""

    model_type = "recurrent_lm"  # what a page asks for: the recurrent-LM pages open it (its family is "mamba")
    folder_only = "a transformers checkpoint is a folder (config.json, model.safetensors, tokenizer files)"
    no_snapshots = "a transformers checkpoint keeps no seqviz training snapshots"

    def __init__(self, model, tokenizer=None, card: dict | None = None):
        """``tokenizer``: transformers' own (wrapped in seqviz's interface here), seqviz's own (a folder
        ``seqviz train lm --cell mamba`` wrote: its vocab.json), or None."""
        import dataclasses

        from seqviz.data.tokenizers import Tokenizer
        from seqviz.hf_mamba_text import MambaShape, TextTokenizer

        self.model, self.card = model, dict(card or {})
        self.config = MambaShape.of(model.config)  # LMConfig's names: what the recurrent-LM pages read
        if isinstance(tokenizer, Tokenizer):
            self.tokenizer, self.config = tokenizer, dataclasses.replace(self.config, tokenizer=tokenizer.kind)
        else:
            self.tokenizer = None if tokenizer is None else TextTokenizer(tokenizer, model.config.vocab_size)

    @classmethod
    def _from_pretrained(cls, path: Path, snapshot: int | None = None) -> "MambaLM":
        check_mamba_folder(path)
        try:
            from transformers import AutoTokenizer, MambaForCausalLM

            kwargs = {"local_files_only": True, "trust_remote_code": False}
            with quiet_loading():
                model = MambaForCausalLM.from_pretrained(path, use_safetensors=True, **kwargs)
            has_tokenizer = any((path / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json"))
            tokenizer = AutoTokenizer.from_pretrained(path, **kwargs) if has_tokenizer else None
        except Exception as e:  # noqa: BLE001 - transformers raises many kinds; the user needs one line
            raise CheckpointError(path, f"could not load it as a transformers Mamba ({type(e).__name__})") from None
        if tokenizer is None and (path / "vocab.json").is_file():  # seqviz's own vocabulary (seqviz train lm)
            tokenizer = _seqviz_vocab(path / "vocab.json", model.config.vocab_size)
        cfg = model.config
        card = {"name": path.name, "task": "hf:mamba", "path": str(path),
                "architecture": f"transformers MambaForCausalLM, {cfg.num_hidden_layers} layers, hidden "
                                f"{cfg.hidden_size}, {cfg.intermediate_size} channels x {cfg.state_size} states",
                "parameters": sum(p.numel() for p in model.parameters())}
        if (path / "card.json").is_file():  # the trainer's card: corpus, validation loss, history
            card = {**card, **read_json(path / "card.json"), "path": str(path)}
        return cls(model.eval().requires_grad_(False), tokenizer, card)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def trace_names(self) -> list[str]:
        return mamba_trace_names(self.config.n_layers)

    def describe(self) -> dict:
        cfg = self.config
        return {"model_type": self.model_type, "family": "transformers mamba",
                "architecture": self.card.get("architecture"), "cell": "mamba",
                "layers": cfg.n_layers, "hidden": cfg.d_hidden, "channels": cfg.channels, "states": cfg.states,
                "parameters": self.num_parameters(), "vocab_size": cfg.vocab_size, "trace_names": self.trace_names()}

    def sample(self, ids: list[int], n: int, temperature: float = 1.0, seed: int | None = 0) -> list[int]:
        """``n`` token ids after ``ids``, step by step with each block's state (``hf_mamba_text.sample``)."""
        from seqviz.hf_mamba_text import sample

        return sample(self, ids, n, temperature, seed)

    def _ids(self, inputs):
        """(ids [B, T], mask [B, T], pieces or None) of a text, texts, id lists (right-padded) or an id tensor."""
        import torch

        from seqviz.data.tokenizers import pad_batch

        if isinstance(inputs, torch.Tensor):
            ids = inputs.long().reshape(-1, inputs.shape[-1])
            return ids, torch.ones_like(ids, dtype=torch.bool), None
        inputs = [inputs] if isinstance(inputs, str) else list(inputs)
        if not inputs:
            raise ValueError("nothing to trace: the input is empty")
        pieces = None
        if all(isinstance(x, str) for x in inputs):
            if self.tokenizer is None:
                raise ValueError("this Mamba folder has no tokenizer; pass token ids instead of text")
            encoded = [self.tokenizer.encode(x) for x in inputs]
            seqs, pieces = [e.ids for e in encoded], [e.pieces for e in encoded]
        else:
            seqs = [list(map(int, s)) for s in inputs]
            if self.tokenizer is not None:
                pieces = [[self.tokenizer.tokens[i] if 0 <= i < len(self.tokenizer.tokens) else "?" for i in s]
                          for s in seqs]
        if any(len(s) == 0 for s in seqs):
            raise ValueError("nothing to trace: the input has no tokens")
        ids, mask = pad_batch(seqs)  # right padding: a causal model's real positions never see it
        return ids, mask, pieces

    def trace(self, inputs, names=None, mask=None, edits=None):
        """Run the model block by block and return the named tensors (``names=None``: all but decay and state).

        ``inputs`` as a recurrent LM's: a text, texts or id lists (right-padded), or an id tensor with an
        optional ``mask``. ``edits``: ``[(name, fn(state, t) -> state), ...]`` (``seqviz.models.edits``) on
        ``layers.{i}.h`` (the block's output, [B, H]: the blocks above read the edited one), ``layers.{i}.s``
        (each channel's slowest state, [B, D]) or ``layers.{i}.state`` ([B, D, N]), applied right after step
        t computes the state, before step t + 1 reads it: a block with a state edited scans step by step."""
        import torch

        from seqviz.models.edits import by_layer
        from seqviz.trace import Trace, check_names, loss_mask

        available = self.trace_names()
        wanted = [n for n in available if n.split(".", 2)[-1] not in ON_REQUEST] if names is None \
            else check_names(names, available)
        edits = by_layer(edits, "mamba", self.config.n_layers)
        ids, auto_mask, pieces = self._ids(inputs)
        mask = auto_mask if mask is None else mask.bool().reshape(ids.shape)
        if ids.numel() == 0:
            raise ValueError("nothing to trace: the input has no tokens")
        if int(ids.max()) >= self.config.vocab_size or int(ids.min()) < 0:
            raise ValueError(f"token ids must lie in [0, {self.config.vocab_size})")
        from seqviz.models.recurrent import next_token_loss

        backbone = self.model.backbone
        out = {"tokens": ids, "mask": mask}
        with torch.no_grad():
            h = out["embed"] = backbone.embeddings(ids)
            for i, block in enumerate(backbone.layers):
                leaves = {n.split(".", 2)[2] for n in wanted if n.startswith(f"layers.{i}.")}
                h, parts = mamba_block(block, h, leaves, edits=edits.get(i))
                out.update({f"layers.{i}.{k}": v for k, v in parts.items()})
            logits = self.model.lm_head(backbone.norm_f(h))
            out.update(logits=logits, loss=next_token_loss(logits, ids, mask), loss_mask=loss_mask(mask))
        return Trace({k: out[k] for k in wanted}, pieces)


def _seqviz_vocab(path: Path, vocab_size: int):
    """seqviz's tokenizer from a vocab.json, which must give the model's vocabulary exactly."""
    from seqviz.data.tokenizers import Tokenizer, TokenizerError

    try:
        tokenizer = Tokenizer.from_dict(read_json(path))
    except TokenizerError as e:
        raise CheckpointError(path, str(e)) from None
    if len(tokenizer) != vocab_size:
        raise CheckpointError(path, f"{len(tokenizer)} tokens, but config.json's vocab_size is {vocab_size}")
    return tokenizer


def mamba_block(block, h, leaves=frozenset(LAYER_LEAVES), scan=None, edits=None):
    """One ``MambaBlock`` from its weights: (the residual stream after it, {leaf: tensor} for ``leaves``).

    ``scan(f, u)`` runs c_t = f_t c_(t-1) + u_t over dim 1: ``recurrent.cell_scan`` (fast, writes in
    place: no autograd) unless given (``introspect.mamba_gradients`` passes a loop autograd can follow).
    ``edits``: leaf ("h", "s", "state") -> [fn(state, t) -> state] (``MambaLM.trace``)."""
    import torch
    import torch.nn.functional as F

    from seqviz.models.recurrent import cell_scan

    scan = scan or cell_scan

    mixer = block.mixer
    T = h.shape[1]
    x, z = mixer.in_proj(block.norm(h)).chunk(2, dim=-1)  # [B, T, D] each
    conv = F.conv1d(x.transpose(1, 2), mixer.conv1d.weight, mixer.conv1d.bias, padding=mixer.conv_kernel_size - 1,
                    groups=mixer.intermediate_size)[..., :T]  # causal: the left padding only
    u = mixer.act(conv).transpose(1, 2)  # [B, T, D]
    step, B, C = torch.split(mixer.x_proj(u), [mixer.time_step_rank, mixer.ssm_state_size, mixer.ssm_state_size], -1)
    dt = F.softplus(mixer.dt_proj(step))  # [B, T, D]
    A = -torch.exp(mixer.A_log.float())  # [D, N]
    decay = torch.exp(dt[..., None] * A)  # [B, T, D, N]
    drive = dt[..., None] * B[:, :, None, :] * u[..., None]  # Δ_t B_t u_t
    batch, _, D, N = decay.shape
    channel, slow = torch.arange(D), A.argmax(-1)  # [D]: each channel's slowest state (A < 0 nearest 0)
    edits = edits or {}
    if edits.get("s") or edits.get("state"):
        state = _edited_scan(decay, drive, edits.get("state", ()), edits.get("s", ()), channel, slow)
    else:
        state = scan(decay.reshape(batch, T, D * N), drive.reshape(batch, T, D * N)).view(batch, T, D, N)
    y = (state * C[:, :, None, :]).sum(-1) + u * mixer.D  # C_t s_t + D u_t
    gate = F.silu(z)
    h = h + mixer.out_proj(y * gate)
    if edits.get("h"):
        from seqviz.models.edits import _edited

        steps = []
        for t in range(T):  # a block's output feeds only the blocks above: editing it after the block is exact
            h_t = h[:, t]
            for fn in edits["h"]:
                h_t = _edited(fn, h_t, t, "h")
            steps.append(h_t)
        h = torch.stack(steps, dim=1)
    parts = {"h": h, "x": u, "dt": dt, "B": B, "C": C, "z": z, "decay": decay, "state": state, "gates.output_z": gate,
             "gates.decay": decay[..., channel, slow], "s": state[..., channel, slow]}
    return h, {k: v for k, v in parts.items() if k in leaves}


def _edited_scan(decay, drive, on_state, on_s, channel, slow):
    """s_t = exp(Δ_t A) s_(t-1) + Δ_t B_t u_t one step at a time ([B, T, D, N]), each edit of the whole state
    ([B, D, N]) and then of each channel's slowest state ([B, D]) applied right after step t."""
    import torch

    from seqviz.models.edits import _edited

    state, steps = torch.zeros_like(drive[:, 0]), []
    for t in range(decay.shape[1]):
        state = decay[:, t] * state + drive[:, t]
        for fn in on_state:
            state = _edited(fn, state, t, "state")
        if on_s:
            s = state[:, channel, slow]
            for fn in on_s:
                s = _edited(fn, s, t, "s")
            state = state.clone()
            state[:, channel, slow] = s
        steps.append(state)
    return torch.stack(steps, dim=1)
