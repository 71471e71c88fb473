"""An LSTM layer's gates as its fused kernel computed them: read from oneDNN's workspace, not computed again.

On a CPU, PyTorch runs ``nn.LSTM`` through oneDNN (``torch.mkldnn_rnn_layer``). Run for training, that kernel keeps
every step's activated gates i, f, g̃, o in its workspace for the backward pass: [T, B, ld] float32 from the
workspace's start, PyTorch's gate order, ld = 4H rounded up to 16 floats (a multiple of 256 gets 16 more, oneDNN's
``get_good_ld``, which keeps rows off the same cache sets). Rebuilding them instead means the two matrix products
the kernel has just done (W_ih x_t and W_hh h_(t−1) for every step), 0.4-0.6 of the forward's own time at H = 256.

The workspace's layout is oneDNN's, not a public contract, so nothing read from it is trusted: ``rebuilt_from`` in
``recurrent.py`` scans the cell state c_t = f_t c_(t−1) + i_t g̃_t from these gates and keeps them only if
o_t tanh(c_t) is the kernel's own output h_t at every step (``AGREE``; a misread layout is off by tenths); otherwise,
and on any other device, dtype or build, the gates are computed from the weights as before.
"""

from __future__ import annotations

import torch
from torch import nn

LSTM_MODE = 2  # oneDNN's (ideep's) rnn_kind::LSTM, as torch._decomp passes it
AGREE = 1e-4  # |o_t tanh(c_t) − h_t| the gates must meet (float32 rounding through T steps is ~1e-6)


def good_ld(width: int) -> int:
    """oneDNN's leading dimension for ``width`` float32 values (rnn_utils.cpp ``get_good_ld``)."""
    ld = -(-width // 16) * 16
    return ld + 16 if ld % 256 == 0 else ld


def fused_with_gates(rnn: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(h [B, T, H], gates [B, T, 4H]: sigmoid(i), sigmoid(f), tanh(g̃), sigmoid(o)) of one single-layer ``nn.LSTM``
    on x [B, T, In] from oneDNN's kernel run for training, or None where it cannot run so (not a float32 CPU tensor,
    a build without oneDNN, a projection): then the caller rebuilds the gates."""
    if x.device.type != "cpu" or x.dtype != torch.float32 or getattr(rnn, "proj_size", 0) \
            or not torch.backends.mkldnn.is_available() or not rnn.bias:
        return None
    batch, steps, width = x.shape[0], x.shape[1], rnn.hidden_size
    zeros = x.new_zeros(1, batch, width)
    weights = [w.detach() for w in (rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0)]
    try:
        with torch.enable_grad():  # train=True keeps the workspace only while autograd is on; nothing requires grad
            y, _h, _c, space = torch.mkldnn_rnn_layer(x.transpose(0, 1).contiguous(), *weights, zeros, zeros, False,
                                                      [], LSTM_MODE, width, 1, True, False, False, True)
    except (RuntimeError, TypeError, AttributeError):
        return None
    ld = good_ld(4 * width)
    if space is None or space.dtype != torch.uint8 or space.numel() < steps * batch * ld * 4:
        return None
    gates = space[: steps * batch * ld * 4].view(torch.float32).view(steps, batch, ld)[..., : 4 * width]
    return y.transpose(0, 1).contiguous(), gates.transpose(0, 1).contiguous()
