"""Several processes, one model: PyTorch's DistributedDataParallel as launched by ``torchrun``.

``torchrun --nproc_per_node=N -m seqviz train lm ...`` starts N copies of the command with
``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE`` and a rendezvous address in their environment.
``setup`` joins them into one process group (nccl on CUDA, gloo on CPU), gives each rank
its own GPU (``cuda:LOCAL_RANK``), and the trainers then shard every global batch across
ranks; DDP averages the gradients, so each optimizer step sees the whole batch, as one
process would. Rank 0 alone writes the checkpoint folder and reports progress.
A plain ``python -m seqviz`` run has no such environment and stays a single process.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class World:
    """Where this process stands among the others (one process: rank 0 of 1)."""

    rank: int = 0  # this process, 0 .. size-1
    size: int = 1  # processes in the job (torchrun's WORLD_SIZE)
    local_rank: int = 0  # this process on its machine; picks the GPU
    backend: str = ""  # "gloo" or "nccl"; "" when not distributed

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1


def launched() -> bool:
    """True inside a ``torchrun`` job of more than one process."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def setup(device: str = "auto") -> World:
    """Join the process group torchrun described (idempotent); a lone process gets ``World()``."""
    if dist.is_available() and dist.is_initialized():
        return current()
    if not launched():
        return World()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    if cuda:
        torch.cuda.set_device(local_rank)
    backend = "nccl" if cuda else "gloo"
    dist.init_process_group(backend=backend)
    return current()


def current() -> World:
    """The process group already joined, or ``World()``."""
    if not (dist.is_available() and dist.is_initialized()):
        return World()
    return World(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")),
                 dist.get_backend())


def device_for(name: str, world: World) -> torch.device:
    """``auto`` = CUDA when available, else CPU; under DDP on CUDA each rank takes ``cuda:LOCAL_RANK``."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(name)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", world.local_rank if world.distributed else torch.cuda.current_device())
    return device


def all_reduce(values: list[float], world: World, op: str = "sum") -> list[float]:
    """Element-wise sum (or max) of small lists of numbers over all ranks."""
    if not world.distributed:
        return list(values)
    device = torch.device("cuda", torch.cuda.current_device()) if world.backend == "nccl" else "cpu"
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
    return t.tolist()


def broadcast_json(obj, world: World):
    """Rank 0's ``obj`` (JSON-serialisable) on every rank; sent as UTF-8 bytes, never pickled."""
    if not world.distributed:
        return obj
    device = torch.device("cuda", torch.cuda.current_device()) if world.backend == "nccl" else "cpu"
    data = json.dumps(obj).encode() if world.main else b""
    size = broadcast_tensor(torch.tensor([len(data)], dtype=torch.long, device=device), world)
    buf = torch.zeros(int(size.item()), dtype=torch.uint8, device=device)
    if world.main:
        buf.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
    broadcast_tensor(buf, world)
    return json.loads(bytes(buf.cpu().tolist()).decode())


def broadcast_tensor(t: torch.Tensor, world: World) -> torch.Tensor:
    """Rank 0's values copied into ``t`` on every rank, in place."""
    if world.distributed:
        dist.broadcast(t, src=0)
    return t


def barrier(world: World) -> None:
    if world.distributed:
        dist.barrier()


def teardown() -> None:
    """Leave the process group. A run that ended well calls ``barrier`` first: the other ranks return from
    training while rank 0 still evaluates and writes the folder, and one that destroyed the gloo group then
    aborted now and then ("terminate called without an active exception", 1 run in 3 on a 2-core machine)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
