"""Train a seq2seq model on a generated task: teacher forcing or scheduled sampling, with callbacks.

Batches hold sentences of similar source length (sorted, cut, shuffled per epoch), so a
batch of 5-unit sentences does not pay for 70 steps of padding. The learning-rate
schedule, devices and weight files are the language-model trainer's (``seqviz.train.lm``).

Under ``torchrun`` every rank builds the same batches (same seed) and takes every
``world_size``-th pair of each; the loss is normalised by the whole batch's target tokens,
so DDP's averaged gradient is exactly the one-process gradient. Rank 0 validates, scores
BLEU and writes the folder.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

from seqviz.checkpoints import save_weights
from seqviz.seq2seq.checkpoints import save_heldout
from seqviz.seq2seq.config import Seq2SeqConfig
from seqviz.seq2seq.data import TASKS, Pair, Splits, make_splits
from seqviz.seq2seq.model import Seq2Seq
from seqviz.seq2seq.vocab import BOS_ID, EOS_ID, Vocab
from seqviz.train.distributed import all_reduce, current
from seqviz.train.lm import _device_name, lr_at, pick_device


@dataclass
class Seq2SeqTrainConfig:
    """How to train (the model's shape lives in Seq2SeqConfig)."""

    task: str = "zh-en"  # generated task: "zh-en" (grammar corpus) or "dates"
    n_train: int = 40_000  # generated training pairs
    n_valid: int = 500  # held-out pairs for the validation loss during training
    n_test: int = 1000  # held-out pairs for the card's BLEU by length
    max_clauses: int = 7  # longest zh-en sentence, in clauses (7 clauses ~ 60-90 units)
    steps: int = 3000  # optimizer steps the learning-rate schedule spans
    batch_size: int = 64  # sentence pairs per step (global: shared out across torchrun processes)
    lr: float = 2e-3  # peak Adam learning rate (warm-up, cosine decay to 10%: seqviz.train.lm.lr_at)
    clip: float = 1.0  # global gradient-norm clipping threshold
    eval_every: int = 250  # steps between validation losses
    snapshot_steps: tuple = ()  # steps at which to keep a float16 snapshot of the weights
    scheduled_sampling: float = 0.0  # k of Bengio et al. 2015's inverse-sigmoid decay; 0 = teacher forcing
    max_minutes: float | None = None  # wall-clock budget; training stops cleanly when spent
    seed: int = 0  # seeds the data, the initial weights and the batch order
    device: str = "auto"  # "auto" = CUDA when available, else CPU


def teacher_forcing_prob(step: int, k: float) -> float:
    """eps_i = k / (k + exp(i / k)): probability of feeding the gold token (Bengio et al. 2015, sec. 2.4)."""
    if k <= 0:
        return 1.0
    x = step / k
    return k / (k + math.exp(x)) if x < 700 else 0.0


def tensorize(pairs: list[Pair], src_vocab: Vocab, tgt_vocab: Vocab, device="cpu"):
    """-> src [B,S], src_mask, decoder inputs [B,T] (<bos> y), targets [B,T] (y <eos>), target mask."""
    from seqviz.data.tokenizers import pad_batch

    src, src_mask = pad_batch([src_vocab.encode(list(p.src)).ids for p in pairs])
    tgt = [tgt_vocab.encode(list(p.tgt)).ids for p in pairs]
    tgt_in, tgt_mask = pad_batch([[BOS_ID] + y for y in tgt])
    tgt_out, _ = pad_batch([y + [EOS_ID] for y in tgt])
    return tuple(t.to(device) for t in (src, src_mask, tgt_in, tgt_out, tgt_mask))


def length_batches(pairs: list[Pair], batch_size: int, rng: random.Random) -> list[list[Pair]]:
    """Batches of similar source length, in a shuffled order (a new one each epoch)."""
    ordered = sorted(pairs, key=lambda p: (len(p.src), rng.random()))
    batches = [ordered[i: i + batch_size] for i in range(0, len(ordered), batch_size)]
    rng.shuffle(batches)
    return batches


def sequence_loss(logits, targets, mask, n_tokens=None) -> torch.Tensor:
    """NLL (nats) summed over real target tokens, divided by ``n_tokens`` (default: this batch's count)."""
    nll = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none")
    return (nll * mask.reshape(-1)).sum() / (mask.sum() if n_tokens is None else n_tokens)


@torch.no_grad()
def validation_loss(model: Seq2Seq, pairs: list[Pair], device, batch_size: int = 128) -> float:
    """Teacher-forced NLL per target token over ``pairs`` (nats)."""
    was = model.training
    model.eval()
    total, count = 0.0, 0
    for batch in length_batches(pairs, batch_size, random.Random(0)):
        src, smask, tin, tout, tmask = tensorize(batch, model.src_vocab, model.tgt_vocab, device)
        logits = model(src, smask, tin)
        total += float(sequence_loss(logits, tout, tmask)) * int(tmask.sum())
        count += int(tmask.sum())
    model.train(was)
    return total / max(count, 1)


def train_seq2seq(model_cfg: Seq2SeqConfig, train_cfg: Seq2SeqTrainConfig, out: str | Path,
                  callback: Callable[[str, dict], None] | None = None, splits: Splits | None = None) -> Seq2Seq:
    """Generate the data (or take ``splits``, e.g. from a dataset), train, evaluate and write ``out``.

    ``callback(event, info)`` gets "step", "eval", "snapshot" and "done" events.
    """
    from torch.nn.parallel import DistributedDataParallel

    from seqviz.introspect.attention import alignment_hit_rate, bleu_by_length

    world = current()  # joined by the caller under torchrun (seqviz.train.distributed.setup), else 1 process
    out, cb = Path(out), (callback if world.main else None) or (lambda event, info: None)
    if train_cfg.batch_size < world.size:
        raise ValueError(f"--batch-size {train_cfg.batch_size} is smaller than the {world.size} processes")
    if splits is None and train_cfg.task not in TASKS:
        raise ValueError(f"unknown task {train_cfg.task!r}; choose from {', '.join(TASKS)}")
    splits = splits or make_splits(train_cfg.task, train_cfg.n_train, train_cfg.n_valid, train_cfg.n_test,
                                   train_cfg.seed, train_cfg.max_clauses)
    src_kind, tgt_kind = splits.kinds or TASKS[splits.task]  # a dataset's splits carry their kinds
    src_vocab = Vocab.build(src_kind, [p.src for p in splits.train])
    tgt_vocab = Vocab.build(tgt_kind, [p.tgt for p in splits.train])
    longest = max(len(p.tgt) for p in splits.train + splits.valid + splits.test)
    model_cfg = Seq2SeqConfig(**{**asdict(model_cfg), "src_vocab_size": len(src_vocab),
                                 "tgt_vocab_size": len(tgt_vocab),
                                 "max_target_len": max(model_cfg.max_target_len, longest + 10)})
    torch.manual_seed(train_cfg.seed)
    device = pick_device(train_cfg.device)
    model = Seq2Seq(model_cfg, src_vocab, tgt_vocab).to(device)
    net = (DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
           if world.distributed else model)
    opt = torch.optim.Adam(model.parameters(), lr=train_cfg.lr)
    rng = random.Random(train_cfg.seed)  # the same batches on every rank
    gen = torch.Generator(device=device).manual_seed(train_cfg.seed + world.rank)  # scheduled-sampling draws
    step, history, snapshots, batches = 0, [], [], []
    t0 = time.perf_counter()
    model.train()
    while step < train_cfg.steps:
        if train_cfg.max_minutes is not None:
            spent = float(time.perf_counter() - t0 > 60 * train_cfg.max_minutes)
            if all_reduce([spent], world, "max")[0]:  # every rank stops at the same step
                break
        if not batches:  # next epoch; a last batch too small to give every rank a pair is dropped
            batches = [b for b in length_batches(splits.train, train_cfg.batch_size, rng) if len(b) >= world.size]
        batch = batches.pop()
        n_tokens = sum(len(p.tgt) + 1 for p in batch)  # the whole batch's targets (+ <eos>), on every rank
        src, smask, tin, tout, tmask = tensorize(batch[world.rank:: world.size], src_vocab, tgt_vocab, device)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, train_cfg)
        eps = teacher_forcing_prob(step, train_cfg.scheduled_sampling)
        logits = net(src, smask, tin, sample_prob=1.0 - eps, generator=gen)
        # x world size: DDP averages the ranks' gradients, and their sum is the batch's mean-loss gradient
        loss = sequence_loss(logits, tout, tmask, n_tokens) * world.size
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.clip)
        opt.step()
        step += 1
        loss_value = all_reduce([loss.item()], world)[0] / world.size  # the whole batch's mean loss
        now = time.perf_counter() - t0
        cb("step", {"step": step, "loss": loss_value, "grad_norm": float(grad_norm),
                    "teacher_forcing": round(eps, 4), "elapsed_s": now})
        if not world.main:
            continue  # rank 0 validates and snapshots; the others wait for it in the next all-reduce
        if step % train_cfg.eval_every == 0 or step == train_cfg.steps:
            val = validation_loss(model, splits.valid, device)
            history.append({"step": step, "train_loss": round(loss_value, 4), "val_loss": round(val, 4),
                            "teacher_forcing": round(eps, 4), "elapsed_s": round(now, 1)})
            cb("eval", history[-1])
        if step in train_cfg.snapshot_steps:
            (out / "snapshots").mkdir(parents=True, exist_ok=True)
            save_weights(model, out / "snapshots" / f"step-{step}.safetensors", torch.float16)
            snapshots.append({"step": step, "val_loss": round(validation_loss(model, splits.valid, device), 4)})
            cb("snapshot", snapshots[-1])
    wall = time.perf_counter() - t0
    model.cpu().eval()
    if not world.main:
        return model
    t1 = time.perf_counter()
    table = bleu_by_length(model, splits.test)
    card = {
        "name": out.name,
        "task": splits.task,
        "architecture": model_cfg.describe(),
        "data": splits.describe(),
        "source_vocab": f"{src_kind}, {len(src_vocab)} tokens",
        "target_vocab": f"{tgt_kind}, {len(tgt_vocab)} tokens",
        "parameters": model.num_parameters(),
        "training": ("teacher forcing" if train_cfg.scheduled_sampling <= 0 else
                     f"scheduled sampling, inverse-sigmoid decay k={train_cfg.scheduled_sampling:g}"),
        "training_steps": step,
        "pairs_seen": step * train_cfg.batch_size,
        "device": _device_name(device, world),
        "world_size": world.size,
        "wall_time_s": round(wall, 1),
        "val_loss": round(validation_loss(model, splits.valid, torch.device("cpu")), 4),
        "test_bleu": float(table.loc[table.bucket == "all", "bleu"].iloc[0]),
        "test_exact_match": float(table.loc[table.bucket == "all", "exact"].iloc[0]),
        "bleu_by_length": table.to_dict(orient="records"),
        "bleu_note": "sacrebleu corpus BLEU, tokenize='none' on the model's own target units; "
                     "greedy decoding; buckets by source length in units",
        "train_config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(train_cfg).items()},
        "history": history,
        "snapshots": snapshots,
    }
    if model_cfg.attention and splits.task == "zh-en":
        card["alignment"] = alignment_hit_rate(model, splits.test)
    card["evaluation_time_s"] = round(time.perf_counter() - t1, 1)
    model.card = card
    model.save_pretrained(out, card)
    save_heldout(splits.test, out, splits.task)
    cb("done", card)
    return model
