"""Which tensor of a plain PyTorch encoder-decoder's state dict is which: the user's keys given canonical names.

The canonical names are those of the PyTorch translation tutorial ("NLP From Scratch: Translation with
a Sequence to Sequence Network and Attention": ``EncoderRNN``, ``DecoderRNN``, ``AttnDecoderRNN`` with
``BahdanauAttention``); a spec's ``"keys"`` maps them to any other layout's names::

    enc_emb                        [Vs, E]     encoder.embedding.weight
    enc_w_ih, enc_w_hh             [G*H, In]   encoder.gru.weight_ih_l0, weight_hh_l0 (G = 3 GRU, 4 LSTM)
    enc_b_ih, enc_b_hh             [G*H]       encoder.gru.bias_ih_l0, bias_hh_l0 (absent: zero)
      ..._l1, ..._l0_reverse                   more layers, the backward direction (enc_w_ih = enc_w_ih_l0)
    enc_fc_w, enc_fc_b             [D, A]      encoder.fc: s_0 = tanh(W [fwd_n; bwd_n] + b)  (bentrevett 3)
    dec_emb                        [Vt, E]     decoder.embedding.weight
    dec_w_ih, dec_w_hh, dec_b_*    ...         decoder.gru.* like the encoder's
    out_w, out_b                   [Vt, F]     decoder.out (bentrevett: decoder.fc_out)
    attn_wa_w, attn_wa_b           [N, D]      decoder.attention.Wa, applied to the query s_{t-1}
    attn_ua_w, attn_ua_b           [N, A]      decoder.attention.Ua, applied to the keys h_j
    attn_va_w, attn_va_b           [1, N]      decoder.attention.Va: e_tj = Va tanh(Wa s + Ua h_j)
    attn_w, attn_b                 [N, D + A]  bentrevett's attention.attn on [s_{t-1}; h_j] (additive), or
                                   [D, A]      Luong's "general" W: e_tj = s_{t-1} . (W h_j + b)
    attn_v_w, attn_v_b             [1, N]      bentrevett's attention.v

Without a spec the names are found in the file: the two recurrent modules by their ``weight_hh_l0``
keys (one under a name with "enc", one with "dec"), then, beside each, its embedding (a name with
"emb"), the encoder's bridge and the decoder's output layer (the one other module), and every key
with "attn"/"attention" in it by its last name (Wa, Ua, Va, attn, attn_fc, v, v_fc). A key that fits
nothing is refused by name: an unread tensor would make seqviz's run silently differ from the user's.
A key that already is one of these names is read as it (g2p-en's ``enc_emb``, ``dec_w_hh`` ...): the spec's
``"keys"`` then names only the others, in either direction (``{"fc_w": "out_w"}`` or ``{"out_w": "fc_w"}``).
"""

from __future__ import annotations

import re

import torch

from seqviz.files import CheckpointError

RNN_KEY = re.compile(r"^(?P<prefix>(?:.*\.)?)(?P<leaf>weight_ih|weight_hh|bias_ih|bias_hh)_l(?P<layer>\d+)"
                     r"(?P<reverse>_reverse)?$")
LEAVES = {"weight_ih": "w_ih", "weight_hh": "w_hh", "bias_ih": "b_ih", "bias_hh": "b_hh"}
ATTENTION_LEAVES = {"wa": "attn_wa", "ua": "attn_ua", "va": "attn_va", "attn": "attn", "attn_fc": "attn",
                    "v": "attn_v", "v_fc": "attn_v"}
SINGLE = ("enc_emb", "enc_fc_w", "enc_fc_b", "dec_emb", "out_w", "out_b", "attn_wa_w", "attn_wa_b", "attn_ua_w",
          "attn_ua_b", "attn_va_w", "attn_va_b", "attn_w", "attn_b", "attn_v_w", "attn_v_b")
CANONICAL_RNN = re.compile(r"^(?P<side>enc|dec)_(?P<leaf>w_ih|w_hh|b_ih|b_hh)(?:_l(?P<layer>\d+))?"
                           r"(?P<reverse>_reverse)?$")


def canonical_name(name: str) -> str | None:
    """The full canonical name (``enc_w_ih`` -> ``enc_w_ih_l0``), or None if ``name`` is none."""
    if name in SINGLE:
        return name
    m = CANONICAL_RNN.match(name)
    if m is None:
        return None
    return f"{m['side']}_{m['leaf']}_l{m['layer'] or 0}{m['reverse'] or ''}"


def spec_names(spec_keys, tensors: dict, where) -> dict[str, str]:
    """The spec's ``"keys"`` (canonical -> the user's key), checked: every name known, every key in the file.

    Either direction is read, told apart by which side names the file's keys: ``{"out_w": "fc_w"}`` (seqviz's
    name -> yours, the values are keys of the file) and ``{"fc_w": "out_w"}`` (yours -> seqviz's) are the same."""
    if spec_keys is None:
        return {}
    if not isinstance(spec_keys, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in spec_keys.items()):
        raise CheckpointError(where, '"keys" must map seqviz\'s names to the keys of your file, e.g. '
                              '{"enc_emb": "encoder.embedding.weight", "dec_w_ih": "decoder.gru.weight_ih_l0"}')
    if spec_keys and not all(v in tensors for v in spec_keys.values()) and all(k in tensors for k in spec_keys):
        spec_keys = {v: k for k, v in spec_keys.items()}  # written yours -> seqviz's
    names = {}
    for name, key in spec_keys.items():
        full = canonical_name(name)
        if full is None:
            raise CheckpointError(where, f'"keys" names {name!r}, which is not one of seqviz\'s names (enc_emb, '
                                  "enc_w_ih[_l<i>][_reverse], enc_w_hh, enc_b_ih, enc_b_hh, enc_fc_w, enc_fc_b, "
                                  "dec_emb, dec_w_ih ..., out_w, out_b, attn_wa_w, attn_ua_w, attn_va_w, attn_w, "
                                  "attn_v_w and their _b)")
        if key not in tensors:
            raise CheckpointError(where, f'"keys" maps {name} to {key}, but the weights have no {key} '
                                  f"(they have {', '.join(sorted(tensors)[:8])}{' ...' if len(tensors) > 8 else ''})")
        if full in names:
            raise CheckpointError(where, f'"keys" names {full} twice')
        names[full] = key
    return names


def _side(key: str) -> str | None:
    """"enc" or "dec" from the first name of ``key`` that says which (encoder.*, enc_rnn.*, decoder.* ...)."""
    for part in key.split(".")[:-1] or key.split("."):
        low = part.lower()
        if "enc" in low and "dec" not in low:
            return "enc"
        if "dec" in low and "enc" not in low:
            return "dec"
    return None


def _split(key: str) -> tuple[str, str]:
    """(module, leaf) of a key: ``decoder.out.weight`` -> (``decoder.out``, ``weight``)."""
    module, _, leaf = key.rpartition(".")
    return module, leaf


def find_names(tensors: dict[str, torch.Tensor], taken: dict[str, str], where) -> dict[str, str]:
    """Canonical name -> the user's key for every tensor, found from the keys (``taken``: the spec's, kept)."""
    names = dict(taken)
    used = set(taken.values())
    for key in tensors:  # keys that already are seqviz's names (g2p-en's enc_emb, dec_w_ih ...) need no entry
        full = canonical_name(key)
        if full is not None and key not in used and full not in names:
            names[full] = key
            used.add(key)
    rest = {k: v for k, v in tensors.items() if k not in used}
    prefixes: dict[str, str] = {}  # rnn prefix -> side
    for key in rest:
        m = RNN_KEY.match(key)
        if m and m["prefix"] not in prefixes:
            prefixes[m["prefix"]] = _side(m["prefix"] + "x") or "?"
    sides = {}
    for prefix, side in prefixes.items():
        if side == "?" or side in sides:
            found = ", ".join(repr(p.rstrip(".") or "(no prefix)") for p in sorted(prefixes))
            raise CheckpointError(where, f"recurrent modules {found}: seqviz expects one encoder and one decoder "
                                  '(names with "enc" and "dec"); name yours in the spec\'s "keys" '
                                  '(e.g. {"enc_w_ih": ..., "dec_w_ih": ...})')
        sides[side] = prefix
    for key in list(rest):
        m = RNN_KEY.match(key)
        if m and m["prefix"] in prefixes:
            side = prefixes[m["prefix"]]
            full = f"{side}_{LEAVES[m['leaf']]}_l{m['layer']}{m['reverse'] or ''}"
            if full not in names:
                names[full] = key
                rest.pop(key)
    _attention_names(rest, names)
    for side in ("enc", "dec"):
        _side_names(side, {k: v for k, v in rest.items() if _side(k) == side}, names, rest)
    if rest:
        shown = ", ".join(sorted(rest)[:6])
        raise CheckpointError(where, f"seqviz does not know what {shown} {'is' if len(rest) == 1 else 'are'} in an "
                              "encoder-decoder (it reads embeddings, GRU/LSTM layers, an encoder bridge, additive or "
                              "Luong attention and an output layer); name each tensor in the spec's \"keys\", or this "
                              "is a layout seqviz does not read")
    return names


def _attention_names(rest: dict, names: dict) -> None:
    for key in [k for k in rest if "attn" in k.lower() or "attention" in k.lower()]:
        module, leaf = _split(key)
        if leaf in ("weight", "bias"):
            base = ATTENTION_LEAVES.get(module.rpartition(".")[2].lower())
            full = f"{base}_{'w' if leaf == 'weight' else 'b'}" if base else None
        else:  # a bare nn.Parameter, e.g. the chatbot tutorial's attn.v
            base = ATTENTION_LEAVES.get(leaf.lower())
            full = f"{base}_w" if base else None
        if full is not None and full not in names:
            names[full] = key
            rest.pop(key)


def _side_names(side: str, mine: dict, names: dict, rest: dict) -> None:
    """Embedding, then the one other module (the encoder's bridge or the decoder's output layer)."""
    emb = f"{side}_emb"
    if emb not in names:
        matrices = [k for k, v in mine.items() if k.endswith("weight") and v.dim() == 2]
        named = [k for k in matrices if "emb" in k.lower()]
        if len(named) == 1:
            names[emb] = named[0]
            rest.pop(named[0])
            mine.pop(named[0])
    modules = sorted({_split(k)[0] for k in mine})
    if len(modules) > 1:  # the output layer by its usual names
        usual = [m for m in modules if m.rpartition(".")[2].lower() in ("out", "fc_out", "fc", "bridge", "linear")]
        modules = usual if len(usual) == 1 else modules
    if len(modules) == 1:
        role = "enc_fc" if side == "enc" else "out"
        for leaf, tag in (("weight", "w"), ("bias", "b")):
            key = f"{modules[0]}.{leaf}" if modules[0] else leaf
            if key in rest and f"{role}_{tag}" not in names:
                names[f"{role}_{tag}"] = key
                rest.pop(key)
