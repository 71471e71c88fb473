"""Train a recurrent language model: truncated BPTT over parallel streams, with callbacks.

The loop follows pytorch/examples' word_language_model: the token stream is cut into
``batch_size`` parallel streams and the hidden state is carried (detached) from one
window to the next, so a window of 128 tokens still sees context from before it.

Under ``torchrun`` (``seqviz.train.distributed``) the same loop runs on every rank with
DistributedDataParallel: the ``batch_size`` streams are split into equal contiguous shards,
one per rank, so N processes take the same optimizer steps one process would on the same
global batch (gradients averaged by DDP, per-rank losses over equal token counts). Rank 0
writes the checkpoint folder; validation is sharded the same way and summed.
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

from seqviz.checkpoints import read_json, save_weights
from seqviz.config import LMConfig
from seqviz.families import get as family
from seqviz.data.corpus import Corpus
from seqviz.data.fetch import DataError
from seqviz.data.tokenizers import Tokenizer
from seqviz.models.recurrent import RecurrentLM
from seqviz.train.distributed import World, all_reduce, broadcast_json, broadcast_tensor, current, device_for


@dataclass
class TrainConfig:
    """How to train (the model's own shape lives in LMConfig)."""

    steps: int = 2000  # optimizer steps the learning-rate schedule spans
    batch_size: int = 32  # parallel streams (global: split evenly across torchrun processes)
    seq_len: int = 128  # truncated-BPTT window
    lr: float = 3e-3  # peak Adam learning rate (cosine decay to 10% after a short warm-up)
    clip: float = 1.0  # global gradient-norm clipping threshold
    eval_every: int = 200  # steps between validation estimates
    eval_tokens: int = 100_000  # validation tokens per intermediate estimate (final: all)
    snapshot_steps: tuple = ()  # steps at which to keep a snapshot of the weights
    max_minutes: float | None = None  # wall-clock budget; training stops cleanly when spent
    seed: int = 0
    device: str = "auto"  # "auto" = CUDA (bf16 autocast where supported) when available, else CPU


def pick_device(name: str) -> torch.device:
    """``auto`` = CUDA when available, else CPU; a torchrun rank gets ``cuda:LOCAL_RANK``."""
    return device_for(name, current())


def fit_to_corpus(cfg: TrainConfig, n_tokens: int, world: World = World()) -> tuple[TrainConfig, str | None]:
    """Settings the training text can fill: every stream needs ``seq_len + 1`` tokens.

    Too short: shorten the window (down to 16), then use fewer streams (a multiple of the
    number of processes), and say so; hopeless (< 3 tokens a stream): ``DataError``.
    """
    b, length = cfg.batch_size, cfg.seq_len
    if n_tokens // b >= length + 1:
        return cfg, None
    while b > world.size and n_tokens // b < min(length, 16) + 1:
        b -= world.size
    length = min(length, n_tokens // b - 1)
    if length < 2:
        raise DataError(f"the training text has {n_tokens:,} tokens, too few to train on "
                        f"({world.size} process{'es' if world.size > 1 else ''} need at least "
                        f"{3 * world.size}); pass a longer --corpus")
    note = (f"the training text ({n_tokens:,} tokens) is shorter than --batch-size {cfg.batch_size} x "
            f"(--seq-len {cfg.seq_len} + 1): training with --batch-size {b} --seq-len {length}")
    return TrainConfig(**{**asdict(cfg), "batch_size": b, "seq_len": length}), note


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
             seq_len: int = 256, batch_size: int = 16, world: World = World()) -> float:
    """Mean next-token NLL (nats/token) over ``ids``, state carried across windows.

    Under DDP each rank scores its share of the streams and the sums are added up, so
    every rank returns the number one process would.
    """
    was_training = model.training
    model.eval()
    if max_tokens is not None:
        ids = ids[:max_tokens]
    batch_size = max(1, min(batch_size, ids.numel() // 2))  # a short text: fewer, still 2-token streams
    data = streams(ids, batch_size)[world.rank:: world.size].to(device)
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
    total, count = all_reduce([total, count], world)
    return total / max(count, 1)


def bf16_ok(device) -> bool:
    """bf16 autocast on GPUs that support it (Ampere and later); anything else runs in float32."""
    return device.type == "cuda" and torch.cuda.is_bf16_supported()


def _autocast(device):
    if bf16_ok(device):
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast(device.type, enabled=False)


def lr_at(step: int, cfg: TrainConfig) -> float:
    warm = max(1, min(100, cfg.steps // 20))
    if step < warm:
        return cfg.lr * (step + 1) / warm
    progress = min(1.0, (step - warm) / max(1, cfg.steps - warm))
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train_lm(model_cfg: LMConfig, train_cfg: TrainConfig, corpus: Corpus, out: str | Path,
             tokenizer: Tokenizer | None = None, resume: bool = False,
             callback: Callable[[str, dict], None] | None = None, make_model=None) -> RecurrentLM:
    """Train, evaluate, snapshot and write a checkpoint folder to ``out``.

    ``callback(event, info)`` gets ("notice", {"message"}) when the settings had to be
    shrunk to fit the corpus, ("step", {...}) after each step, ("eval", {...}) after each
    validation estimate, ("snapshot", {...}) and ("done", card); the CLI turns them into a
    progress bar, tests pass nothing. Inside a joined torchrun process group
    (``seqviz.train.distributed.setup``) every rank calls this; only rank 0 calls back
    and writes ``out``. ``make_model(tokenizer)``: another model for the same loop (``train.mamba``), in place
    of ``RecurrentLM(model_cfg)``.
    """
    from torch.nn.parallel import DistributedDataParallel

    out = Path(out)
    world = current()
    cb = (callback if world.main else None) or (lambda event, info: None)
    if train_cfg.batch_size % world.size:
        raise ValueError(f"--batch-size {train_cfg.batch_size} must be a multiple of the {world.size} processes")
    torch.manual_seed(train_cfg.seed)
    device = pick_device(train_cfg.device)
    if tokenizer is None:
        tokenizer = Tokenizer.train(model_cfg.tokenizer, corpus.train)
    model_cfg = LMConfig(**{**asdict(model_cfg), "vocab_size": len(tokenizer)})
    model = (RecurrentLM(model_cfg, tokenizer) if make_model is None else make_model(tokenizer)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=train_cfg.lr)
    train_ids = torch.tensor(tokenizer.encode(corpus.train).ids, dtype=torch.long)
    val_ids = torch.tensor(tokenizer.encode(corpus.validation).ids, dtype=torch.long)
    if val_ids.numel() < 2:
        raise DataError(f"{corpus.name}: the validation text has {val_ids.numel()} tokens; "
                        "pass a longer --corpus (or other --validation-files)")
    train_cfg, notice = fit_to_corpus(train_cfg, train_ids.numel(), world)
    if notice:
        cb("notice", {"message": notice})
    # This rank's contiguous share of the parallel streams: [batch_size / world, N / batch_size].
    share = train_cfg.batch_size // world.size
    data = streams(train_ids, train_cfg.batch_size)[world.rank * share: (world.rank + 1) * share].to(device)
    step, pos, elapsed, snapshots, history = 0, 0, 0.0, [], []
    if resume:
        restored = _restore(model, opt, out, world)
        if restored is not None:
            step, pos, elapsed, snapshots, history = restored
    # DDP copies rank 0's weights to every rank here, then averages gradients in backward().
    net = (DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
           if world.distributed else model)
    model.train()
    state, t0, tokens_done, train_s = None, time.perf_counter() - elapsed, 0, 0.0
    while step < train_cfg.steps:
        if train_cfg.max_minutes is not None:
            spent = float(time.perf_counter() - t0 > 60 * train_cfg.max_minutes)
            if all_reduce([spent], world, "max")[0]:  # every rank stops at the same step
                break
        if pos + train_cfg.seq_len + 1 > data.shape[1]:
            pos, state = 0, None  # next epoch
        t_step = time.perf_counter()
        x = data[:, pos: pos + train_cfg.seq_len]
        y = data[:, pos + 1: pos + 1 + train_cfg.seq_len]
        pos += train_cfg.seq_len
        for group in opt.param_groups:
            group["lr"] = lr_at(step, train_cfg)
        with _autocast(device):
            logits, state = net(x, None if state is None else detach(state))
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.clip)
        opt.step()
        step += 1
        # Equal token counts per rank: the mean of the ranks' losses is the global batch's loss.
        loss_value = all_reduce([loss.item()], world)[0] / world.size
        train_s += time.perf_counter() - t_step
        tokens_done += y.numel() * world.size
        now = time.perf_counter() - t0
        cb("step", {"step": step, "loss": loss_value, "grad_norm": float(grad_norm),
                    "tokens_per_s": tokens_done / max(now - elapsed, 1e-9), "elapsed_s": now})
        # Snapshot before saving progress, so a resumed run's card still lists it.
        if step in train_cfg.snapshot_steps:
            if world.main:
                (out / "snapshots").mkdir(parents=True, exist_ok=True)
                save_weights(model, out / "snapshots" / f"step-{step}.safetensors", torch.float16)
            val = evaluate(model, val_ids, device, train_cfg.eval_tokens, world=world)
            snapshots.append({"step": step, "val_loss": round(val, 4)})
            cb("snapshot", snapshots[-1])
        if step % train_cfg.eval_every == 0 or step == train_cfg.steps:
            val = evaluate(model, val_ids, device, train_cfg.eval_tokens, world=world)
            history.append({"step": step, "train_loss": round(loss_value, 4), "val_loss": round(val, 4),
                            "elapsed_s": round(now, 1)})
            cb("eval", history[-1])
            if world.main:
                _checkpoint_progress(model, opt, out, step, pos, now, snapshots, history)
    wall = time.perf_counter() - t0
    val_loss = evaluate(model, val_ids, device, world=world)  # all validation tokens
    model.cpu().eval()
    if not world.main:
        return model
    card = {
        "name": out.name,
        "architecture": getattr(model, "architecture", None) or
        f"{model_cfg.n_layers}-layer {family(model_cfg.cell).title}, hidden {model_cfg.d_hidden}, "
        f"embedding {model_cfg.d_embed}, {model_cfg.tokenizer}-level",
        "corpus": corpus.name,
        "split": corpus.split,
        "tokenizer": f"{model_cfg.tokenizer}, {len(tokenizer)} tokens",
        "parameters": model.num_parameters(),
        "train_tokens": int(train_ids.numel()),
        "validation_tokens": int(val_ids.numel()),
        "training_steps": step,
        "tokens_seen": step * train_cfg.batch_size * train_cfg.seq_len,
        "device": _device_name(device, world),
        "world_size": world.size,
        "wall_time_s": round(wall, 1),
        "train_tokens_per_s": round(tokens_done / max(train_s, 1e-9)),  # this run's steps, evaluation excluded
        "val_loss": round(val_loss, 4),
        "val_perplexity": round(math.exp(val_loss), 3),
        "train_config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(train_cfg).items()},
        "history": history,
        "snapshots": snapshots,
    }
    if notice:
        card["notes"] = [notice]
    model.card = card
    model.save_pretrained(out, card)
    for leftover in ("train_state.json", "optimizer.safetensors"):
        (out / leftover).unlink(missing_ok=True)
    from seqviz.introspect.language import write_scores

    write_scores(out)  # the app's sample texts, scored once here: its first view needs no model (scores.json)
    cb("done", card)
    return model


def _device_name(device, world: World = World()) -> str:
    if device.type == "cuda":
        name = f"cuda ({torch.cuda.get_device_name(device)}, {'bf16 autocast' if bf16_ok(device) else 'float32'})"
    else:
        n = torch.get_num_threads()
        name = f"cpu ({n} thread{'' if n == 1 else 's'})"
    if world.distributed:
        name += f" x {world.size} processes (DistributedDataParallel, {world.backend})"
    return name


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


def _restore(model, opt, out: Path, world: World = World()):
    """The saved progress (rank 0 reads it; other ranks receive it), or None when there is none."""
    from safetensors.torch import load_file

    progress = None
    if world.main and (out / "train_state.json").exists():
        progress = read_json(out / "train_state.json")
    progress = broadcast_json(progress, world)
    if progress is None:
        return None
    device = next(model.parameters()).device
    if world.main:
        model.load_state_dict(load_file(str(out / "model.safetensors")))
        moments = load_file(str(out / "optimizer.safetensors"))
    for i, p in enumerate(model.parameters()):
        if world.main and f"{i}.exp_avg" not in moments:
            raise DataError(f"{out}/optimizer.safetensors has no moments for parameter {i}: start again "
                            "without --resume")
        if world.main:
            st = {"step": moments[f"{i}.step"].reshape(1), "exp_avg": moments[f"{i}.exp_avg"].to(device),
                  "exp_avg_sq": moments[f"{i}.exp_avg_sq"].to(device)}
        else:
            st = {"step": torch.zeros(1), "exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.zeros_like(p)}
        for key in ("exp_avg", "exp_avg_sq"):
            broadcast_tensor(st[key], world)
        step_t = broadcast_tensor(st["step"].to(device, torch.float32), world)
        opt.state[p] = {"step": torch.tensor(float(step_t[0])), "exp_avg": st["exp_avg"],
                        "exp_avg_sq": st["exp_avg_sq"]}
    return (progress["step"], progress["pos"], progress["elapsed_s"], progress["snapshots"],
            progress["history"])
