"""Train a recurrent language model: truncated BPTT over parallel streams, with callbacks.

The loop follows pytorch/examples' word_language_model: the token stream is cut into
``batch_size`` parallel streams and the hidden state is carried (detached) from one
window to the next, so a window of 128 tokens still sees context from before it.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

from seqviz.checkpoints import read_json, save_pretrained, save_weights
from seqviz.config import LMConfig
from seqviz.data.corpus import Corpus
from seqviz.data.tokenizers import Tokenizer
from seqviz.models.recurrent import RecurrentLM


@dataclass
class TrainConfig:
    """How to train (the model's own shape lives in LMConfig)."""

    steps: int = 2000  # optimizer steps the learning-rate schedule spans
    batch_size: int = 32  # parallel streams
    seq_len: int = 128  # truncated-BPTT window
    lr: float = 3e-3  # peak Adam learning rate (cosine decay to 10% after a short warm-up)
    clip: float = 1.0  # global gradient-norm clipping threshold
    eval_every: int = 200  # steps between validation estimates
    eval_tokens: int = 100_000  # validation tokens per intermediate estimate (final: all)
    snapshot_steps: tuple = ()  # steps at which to keep a snapshot of the weights
    max_minutes: float | None = None  # wall-clock budget; training stops cleanly when spent
    seed: int = 0
    device: str = "auto"  # "auto" = CUDA (bf16 autocast) when available, else CPU


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def streams(ids: torch.Tensor, batch_size: int) -> torch.Tensor:
    """[N] -> [batch_size, N // batch_size]: contiguous parallel streams."""
    n = ids.numel() // batch_size
    return ids[: n * batch_size].view(batch_size, n)


def detach(state):
    if isinstance(state, tuple):
        return tuple(s.detach() for s in state)
    if isinstance(state, list):
        return [detach(s) for s in state]
    return state.detach()


@torch.no_grad()
def evaluate(model: RecurrentLM, ids: torch.Tensor, device, max_tokens: int | None = None,
             seq_len: int = 256, batch_size: int = 16) -> float:
    """Mean next-token NLL (nats/token) over ``ids``, state carried across windows."""
    was_training = model.training
    model.eval()
    if max_tokens is not None:
        ids = ids[:max_tokens]
    data = streams(ids, batch_size).to(device)
    total, count, state = 0.0, 0, None
    for s in range(0, data.shape[1] - 1, seq_len):
        x = data[:, s: s + seq_len]
        y = data[:, s + 1: s + 1 + seq_len]
        x = x[:, : y.shape[1]]
        if x.numel() == 0:
            break
        with _autocast(device):
            logits, state = model(x, state)
        total += F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1),
                                 reduction="sum").item()
        count += y.numel()
    model.train(was_training)
    return total / max(count, 1)


def _autocast(device):
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


def lr_at(step: int, cfg: TrainConfig) -> float:
    warm = max(1, min(100, cfg.steps // 20))
    if step < warm:
        return cfg.lr * (step + 1) / warm
    progress = min(1.0, (step - warm) / max(1, cfg.steps - warm))
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train_lm(model_cfg: LMConfig, train_cfg: TrainConfig, corpus: Corpus, out: str | Path,
             tokenizer: Tokenizer | None = None, resume: bool = False,
             callback: Callable[[str, dict], None] | None = None) -> RecurrentLM:
    """Train, evaluate, snapshot and write a checkpoint folder to ``out``.

    ``callback(event, info)`` gets ("step", {...}) after each step, ("eval", {...})
    after each validation estimate and ("snapshot", {...}); the CLI turns them into a
    progress bar, tests pass nothing.
    """
    out = Path(out)
    cb = callback or (lambda event, info: None)
    torch.manual_seed(train_cfg.seed)
    device = pick_device(train_cfg.device)
    if tokenizer is None:
        tokenizer = Tokenizer.train(model_cfg.tokenizer, corpus.train)
    model_cfg = LMConfig(**{**asdict(model_cfg), "vocab_size": len(tokenizer)})
    model = RecurrentLM(model_cfg, tokenizer).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=train_cfg.lr)
    train_ids = torch.tensor(tokenizer.encode(corpus.train).ids, dtype=torch.long)
    val_ids = torch.tensor(tokenizer.encode(corpus.validation).ids, dtype=torch.long)
    data = streams(train_ids, train_cfg.batch_size).to(device)
    step, pos, elapsed, snapshots, history = 0, 0, 0.0, [], []
    if resume and (out / "train_state.json").exists():
        step, pos, elapsed, snapshots, history = _restore(model, opt, out)
    model.train()
    state, t0, tokens_done = None, time.perf_counter() - elapsed, 0
    while step < train_cfg.steps:
        if train_cfg.max_minutes is not None and time.perf_counter() - t0 > 60 * train_cfg.max_minutes:
            break
        if pos + train_cfg.seq_len + 1 > data.shape[1]:
            pos, state = 0, None  # next epoch
        x = data[:, pos: pos + train_cfg.seq_len]
        y = data[:, pos + 1: pos + 1 + train_cfg.seq_len]
        pos += train_cfg.seq_len
        for group in opt.param_groups:
            group["lr"] = lr_at(step, train_cfg)
        with _autocast(device):
            logits, state = model(x, None if state is None else detach(state))
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.clip)
        opt.step()
        step += 1
        tokens_done += y.numel()
        now = time.perf_counter() - t0
        cb("step", {"step": step, "loss": loss.item(), "grad_norm": float(grad_norm),
                    "tokens_per_s": tokens_done / max(now - elapsed, 1e-9), "elapsed_s": now})
        # Snapshot before saving progress, so a resumed run's card still lists it.
        if step in train_cfg.snapshot_steps:
            (out / "snapshots").mkdir(parents=True, exist_ok=True)
            save_weights(model, out / "snapshots" / f"step-{step}.safetensors", torch.float16)
            val = evaluate(model, val_ids, device, train_cfg.eval_tokens)
            snapshots.append({"step": step, "val_loss": round(val, 4)})
            cb("snapshot", snapshots[-1])
        if step % train_cfg.eval_every == 0 or step == train_cfg.steps:
            val = evaluate(model, val_ids, device, train_cfg.eval_tokens)
            history.append({"step": step, "train_loss": round(loss.item(), 4), "val_loss": round(val, 4),
                            "elapsed_s": round(now, 1)})
            cb("eval", history[-1])
            _checkpoint_progress(model, opt, out, step, pos, now, snapshots, history)
    wall = time.perf_counter() - t0
    val_loss = evaluate(model, val_ids, device)  # all validation tokens
    card = {
        "name": out.name,
        "architecture": f"{model_cfg.n_layers}-layer {model_cfg.cell.upper()}, hidden {model_cfg.d_hidden}, "
                        f"embedding {model_cfg.d_embed}, {model_cfg.tokenizer}-level",
        "corpus": corpus.name,
        "split": corpus.split,
        "tokenizer": f"{model_cfg.tokenizer}, {len(tokenizer)} tokens",
        "parameters": model.num_parameters(),
        "train_tokens": int(train_ids.numel()),
        "validation_tokens": int(val_ids.numel()),
        "training_steps": step,
        "tokens_seen": step * train_cfg.batch_size * train_cfg.seq_len,
        "device": _device_name(device),
        "wall_time_s": round(wall, 1),
        "val_loss": round(val_loss, 4),
        "val_perplexity": round(math.exp(val_loss), 3),
        "train_config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(train_cfg).items()},
        "history": history,
        "snapshots": snapshots,
    }
    model.cpu().eval()
    model.card = card
    save_pretrained(model, out, card)
    for leftover in ("train_state.json", "optimizer.safetensors"):
        (out / leftover).unlink(missing_ok=True)
    cb("done", card)
    return model


def _device_name(device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)}, bf16 autocast)"
    n = torch.get_num_threads()
    return f"cpu ({n} thread{'' if n == 1 else 's'})"


def _checkpoint_progress(model, opt, out: Path, step, pos, elapsed, snapshots, history) -> None:
    """Everything needed to resume, without pickles: weights, Adam moments, JSON progress."""
    out.mkdir(parents=True, exist_ok=True)
    save_weights(model, out / "model.safetensors")
    from safetensors.torch import save_file

    moments = {}
    for i, p in enumerate(model.parameters()):
        st = opt.state.get(p, {})
        for key in ("exp_avg", "exp_avg_sq", "step"):
            if key in st:
                moments[f"{i}.{key}"] = torch.as_tensor(st[key]).detach().cpu().float().reshape(-1) \
                    if key == "step" else st[key].detach().cpu().contiguous()
    save_file(moments, str(out / "optimizer.safetensors"))
    (out / "train_state.json").write_text(json.dumps(
        {"step": step, "pos": pos, "elapsed_s": elapsed, "snapshots": snapshots, "history": history}))


def _restore(model, opt, out: Path):
    from safetensors.torch import load_file

    progress = read_json(out / "train_state.json")
    weights = load_file(str(out / "model.safetensors"))
    model.load_state_dict(weights)
    moments = load_file(str(out / "optimizer.safetensors"))
    device = next(model.parameters()).device
    for i, p in enumerate(model.parameters()):
        if f"{i}.exp_avg" in moments:
            opt.state[p] = {"step": torch.tensor(float(moments[f"{i}.step"][0])),
                            "exp_avg": moments[f"{i}.exp_avg"].to(device),
                            "exp_avg_sq": moments[f"{i}.exp_avg_sq"].to(device)}
    return (progress["step"], progress["pos"], progress["elapsed_s"], progress["snapshots"],
            progress["history"])
