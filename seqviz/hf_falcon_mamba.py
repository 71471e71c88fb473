"""transformers FalconMamba causal LMs (Zuo et al. 2024, "Falcon Mamba: The First Competitive Attention-free 7B
Language Model"): a Mamba-1 whose Δ input, B_t and C_t are RMS-normalised before the scan.

``FalconMambaMixer`` is ``MambaMixer`` with three weightless RMSNorms (``dt_layernorm``, ``b_layernorm``,
``c_layernorm``, ε = ``mixer_rms_eps``) applied to x_proj's three parts; everything else (the causal conv, Δ =
softplus(W_Δ · + b_Δ), A = −exp(A_log), s_t = exp(Δ_t A) s_(t−1) + Δ_t B_t u_t, y_t = C_t s_t + D u_t, SiLU(z)) is
Mamba's. So its trace is ``hf_mamba``'s, with the same names and equations: ``hf_mamba.selection`` applies the
mixer's own norms where it has them. This module says only which transformers classes open it and that its
family entry is "falcon_mamba" (``seqviz.families.mamba``).
"""

from __future__ import annotations

from dataclasses import dataclass

from seqviz.hf_mamba import MambaLM
from seqviz.hf_mamba_text import MambaShape


@dataclass(frozen=True)
class FalconMambaShape(MambaShape):
    """A FalconMamba's sizes under LMConfig's names: a Mamba's, its family entry "falcon_mamba"."""

    @property
    def family(self) -> str:
        return "falcon_mamba"


def read_shape(folder) -> FalconMambaShape:
    """A FalconMamba folder's shape from its config.json alone (no torch, no transformers)."""
    from seqviz.hf_mamba_text import read_shape as mamba_shape

    return FalconMambaShape(**vars(mamba_shape(folder)))


class FalconMambaLM(MambaLM):
    """A transformers ``FalconMambaForCausalLM`` and its tokenizer, traced with Mamba's equations."""

    kinds, title = ("falcon_mamba",), "FalconMamba"

    @classmethod
    def classes(cls, kind: str):
        from transformers import FalconMambaConfig, FalconMambaForCausalLM

        return FalconMambaConfig, FalconMambaForCausalLM

    @classmethod
    def shape_of(cls, hf_config) -> FalconMambaShape:
        return FalconMambaShape(**vars(MambaShape.of(hf_config)))

    @classmethod
    def architecture(cls, hf_config, shape) -> str:
        return f"{super().architecture(hf_config, shape)}, Δ, B and C RMS-normalised (ε {hf_config.mixer_rms_eps:g})"
