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
    """The spec's ``"keys"`` (canonical -> the user's key), checked: every name known, every key in the file."""
    if spec_keys is None:
        return {}
    if not isinstance(spec_keys, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in spec_keys.items()):
        raise CheckpointError(where, '"keys" must map seqviz\'s names to the keys of your file, e.g. '
                              '{"enc_emb": "encoder.embedding.weight", "dec_w_ih": "decoder.gru.weight_ih_l0"}')
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


# ------------------------------------------------------------------ what the shapes say
def _layers(side: str, tensors: dict, names: dict, where) -> dict:
    """Cell, layers, directions and size of one side's recurrent module, checked layer by layer."""
    what = "encoder" if side == "enc" else "decoder"
    found = [m for n in names if (m := CANONICAL_RNN.match(n)) and m["side"] == side]
    if not any(m["leaf"] == "w_hh" for m in found):
        raise CheckpointError(where, f"no {what} GRU/LSTM found: expected keys like {what}.gru.weight_hh_l0 (or name "
                              f'them in the spec\'s "keys": {side}_w_hh, {side}_w_ih ...)')
    layers = sorted({int(m["layer"]) for m in found})
    reverse = any(m["reverse"] for m in found)
    if layers != list(range(len(layers))):
        raise CheckpointError(where, f"{what} layers {layers}: expected layers 0..{len(layers) - 1}")
    hh_key = names[f"{side}_w_hh_l0"]
    hh = tensors[hh_key]
    if hh.dim() != 2 or hh.shape[1] == 0 or hh.shape[0] % hh.shape[1] or hh.shape[0] // hh.shape[1] not in (3, 4):
        raise CheckpointError(where, f"{hh_key} has shape {tuple(hh.shape)}: a GRU's weight_hh is [3H, H] and an "
                              "LSTM's [4H, H] (seqviz's encoder-decoders read GRUs and LSTMs)")
    hidden, gates = int(hh.shape[1]), int(hh.shape[0] // hh.shape[1])
    cell = "gru" if gates == 3 else "lstm"
    dirs = 2 if reverse else 1
    d_in = None
    for layer in layers:
        for sfx in ("", "_reverse")[:dirs]:
            for leaf, want in (("w_ih", None), ("w_hh", (gates * hidden, hidden)), ("b_ih", (gates * hidden,)),
                               ("b_hh", (gates * hidden,))):
                name = f"{side}_{leaf}_l{layer}{sfx}"
                if name not in names:
                    if leaf.startswith("b"):
                        continue  # bias=False: zeros
                    raise CheckpointError(where, f"missing tensor {hh_key.replace('hh_l0', f'{leaf[2:]}_l{layer}')}"
                                          f"{sfx} of the {what}'s {cell.upper()} layer {layer}")
                t = tensors[names[name]]
                if want is None:
                    want = (gates * hidden, d_in if layer == 0 and d_in is not None else
                            int(t.shape[1]) if layer == 0 else hidden * dirs)
                if tuple(t.shape) != want:
                    raise CheckpointError(where, f"{names[name]} has shape {tuple(t.shape)}; the {what}'s "
                                          f"{cell.upper()} with hidden size {hidden} ({hh_key} {tuple(hh.shape)}) "
                                          f"needs {want}")
                if layer == 0 and leaf == "w_ih":
                    d_in = int(t.shape[1])
    return {"cell": cell, "layers": len(layers), "dirs": dirs, "hidden": hidden, "d_in": d_in, "key": hh_key}


def _matrix(name: str, tensors: dict, names: dict, want: tuple, what: str, where, why: str) -> None:
    t = tensors[names[name]]
    if tuple(t.shape) != want:
        raise CheckpointError(where, f"{names[name]} ({what}) has shape {tuple(t.shape)}; {why} need {want}")


def _attention(tensors: dict, names: dict, spec: dict, D: int, A: int, where) -> tuple[str | None, int]:
    """(score, hidden size) of the attention the keys show (or the spec's "attention": "dot")."""
    said = spec.get("attention")
    if said not in (None, "additive", "general", "dot", "none"):
        raise CheckpointError(where, '"attention" must be "additive", "general", "dot" or "none"')
    keys = [n for n in names if n.startswith("attn_")]
    if said == "dot" or (not keys and said is None) or said == "none":
        if keys:
            raise CheckpointError(where, f'the spec says "attention": "{said}", but the weights hold attention '
                                  f"tensors ({', '.join(names[n] for n in keys[:3])})")
        if said == "dot" and D != A:
            raise CheckpointError(where, f"dot attention needs decoder states and encoder outputs of one size; the "
                                  f"decoder has {D} units and the encoder outputs {A}")
        return ("dot", 0) if said == "dot" else (None, 0)
    why = f"a decoder of {D} units attending encoder outputs of {A}"
    if "attn_wa_w" in names or "attn_ua_w" in names:
        for n in ("attn_wa_w", "attn_ua_w", "attn_va_w"):
            if n not in names:
                raise CheckpointError(where, f"additive attention with {', '.join(names[k] for k in keys)} but no "
                                      f"{n[5:7].capitalize()} (BahdanauAttention has Wa, Ua and Va)")
        N = int(tensors[names["attn_wa_w"]].shape[0])
        for n, want in (("attn_wa_w", (N, D)), ("attn_ua_w", (N, A)), ("attn_va_w", (1, N)), ("attn_wa_b", (N,)),
                        ("attn_ua_b", (N,)), ("attn_va_b", (1,))):
            if n in names:
                _matrix(n, tensors, names, want, n[5:7].capitalize(), where, why)
        score, size = "additive", N
    elif "attn_w" in names:
        w = tensors[names["attn_w"]]
        if "attn_v_w" in names:
            N = int(w.shape[0])
            _matrix("attn_w", tensors, names, (N, D + A), "attn on [s; h]", where, why)
            v = tensors[names["attn_v_w"]]
            if v.numel() != N or v.dim() > 2:
                raise CheckpointError(where, f"{names['attn_v_w']} has shape {tuple(v.shape)}; {why} with attn of "
                                      f"{N} rows needs (1, {N})")
            score, size = "additive", N
        else:
            _matrix("attn_w", tensors, names, (D, A), "Luong general W", where, why)
            score, size = "general", 0
        if "attn_b" in names:
            _matrix("attn_b", tensors, names, (w.shape[0],), "its bias", where, why)
    else:
        raise CheckpointError(where, f"attention tensors {', '.join(names[k] for k in keys)} without its main "
                              "matrix (Wa/Ua/Va, or attn)")
    if said not in (None, score):
        raise CheckpointError(where, f'the spec says "attention": "{said}", but the keys show {score} attention')
    return score, size


def infer(tensors: dict, names: dict, spec: dict, where) -> dict:
    """The fields of a ``PlainSeq2SeqConfig`` (but the vocabulary's), from the shapes; errors name the user's keys."""
    enc, dec = _layers("enc", tensors, names, where), _layers("dec", tensors, names, where)
    if enc["cell"] != dec["cell"]:
        raise CheckpointError(where, f"{enc['key']} is a {enc['cell'].upper()} but {dec['key']} a "
                              f"{dec['cell'].upper()}: seqviz reads encoder-decoders of one cell")
    if dec["dirs"] == 2:
        raise CheckpointError(where, f"{dec['key']}: a bidirectional decoder cannot generate left to right")
    He, D, A = enc["hidden"], dec["hidden"], enc["hidden"] * enc["dirs"]
    for side, info in (("enc", enc), ("dec", dec)):
        emb = f"{side}_emb"
        if emb not in names:
            raise CheckpointError(where, f"no {'source' if side == 'enc' else 'target'} embedding found beside "
                                  f"{info['key']}: expected a name with \"emb\" (or \"{emb}\" in the spec's keys)")
        if tensors[names[emb]].dim() != 2:
            raise CheckpointError(where, f"{names[emb]} has shape {tuple(tensors[names[emb]].shape)}: an embedding "
                                  "is [vocabulary, size]")
    Vs, Es = map(int, tensors[names["enc_emb"]].shape)
    Vt, Et = map(int, tensors[names["dec_emb"]].shape)
    if enc["d_in"] != Es:
        raise CheckpointError(where, f"{names['enc_w_ih_l0']} reads {enc['d_in']} inputs but {names['enc_emb']} "
                              f"gives {Es} ({Vs} x {Es})")
    if dec["d_in"] not in (Et, Et + A):
        raise CheckpointError(where, f"{names['dec_w_ih_l0']} reads {dec['d_in']} inputs; after {names['dec_emb']} "
                              f"({Vt} x {Et}) the decoder reads {Et} (the embedding) or {Et + A} (the embedding and a "
                              f"context of the encoder's {A} outputs)")
    feed = dec["d_in"] == Et + A
    bridge = "enc_fc_w" in names
    if bridge:
        _matrix("enc_fc_w", tensors, names, (D, A), "the bridge", where,
                f"the encoder's final states ({A}) mapped to the decoder's first state ({D})")
        if "enc_fc_b" in names:
            _matrix("enc_fc_b", tensors, names, (D,), "the bridge's bias", where, "a decoder of {D} units")
        if dec["layers"] != 1:
            raise CheckpointError(where, f"{names['enc_fc_w']} starts a {dec['layers']}-layer decoder; seqviz reads "
                                  "a bridge into a one-layer decoder")
    elif (enc["dirs"], enc["layers"], He) != (1, dec["layers"], D):
        raise CheckpointError(where, f"the decoder starts from the encoder's final states (there is no bridge such as "
                              f"encoder.fc), but the encoder is a {enc['layers']}-layer {'bi' if enc['dirs'] == 2 else 'uni'}"
                              f"directional {He}-unit {enc['cell'].upper()} ({enc['key']}) and the decoder a "
                              f"{dec['layers']}-layer {D}-unit one ({dec['key']}): they must match")
    score, size = _attention(tensors, names, spec, D, A, where)
    if score is not None and not feed:
        raise CheckpointError(where, f"the weights hold attention but {names['dec_w_ih_l0']} reads only the "
                              f"{Et}-wide embedding: seqviz reads decoders fed [embedding; context] "
                              "(Bahdanau; Luong's decoder, which attends after its step, is not read yet)")
    if "out_w" not in names:
        raise CheckpointError(where, f"no output layer found beside {dec['key']}: expected decoder.out or "
                              'decoder.fc_out (or "out_w" in the spec\'s keys)')
    out = tensors[names["out_w"]]
    if out.dim() != 2 or out.shape[0] != Vt:
        raise CheckpointError(where, f"{names['out_w']} has shape {tuple(out.shape)}; the output layer must give "
                              f"one logit for each of the {Vt} tokens of {names['dec_emb']}")
    if "out_b" in names:
        _matrix("out_b", tensors, names, (Vt,), "the output bias", where, f"{Vt} target tokens")
    output = _output(spec, int(out.shape[1]), {"hidden": D, "context": A, "embedding": Et}, score, feed,
                     names["out_w"], where)
    layout = _layout(names, score, feed, bridge, output)
    decoder_input = spec.get("decoder_input")
    if decoder_input is None:  # the tutorial's DecoderRNN applies F.relu to the embedding; nobody else does
        decoder_input = "relu(embedding)" if layout == "pytorch-tutorial" else "embedding"
    return {"layout": layout, "cell": enc["cell"], "enc_layers": enc["layers"], "dec_layers": dec["layers"],
            "bidirectional": enc["dirs"] == 2, "d_src_embed": Es, "d_tgt_embed": Et, "d_encoder": He,
            "d_decoder": D, "score": score, "d_attention": size, "bridge": bridge, "feed_context": feed,
            "decoder_input": decoder_input, "output": output, "src_vocab_size": Vs, "tgt_vocab_size": Vt}


def _output(spec: dict, cols: int, sizes: dict, score, feed: bool, key: str, where) -> tuple:
    said = spec.get("output")
    if said is not None:
        if not isinstance(said, list) or not said or any(p not in sizes for p in said) or len(set(said)) != len(said):
            raise CheckpointError(where, '"output" must list what the output layer reads, in order: some of '
                                  '"hidden", "context", "embedding"')
        if sum(sizes[p] for p in said) != cols:
            raise CheckpointError(where, f"the spec says the output layer reads [{'; '.join(said)}] = "
                                  f"{' + '.join(str(sizes[p]) for p in said)} values, but {key} has {cols} columns")
        return tuple(said)
    if cols == sizes["hidden"]:
        return ("hidden",)
    if feed and cols == sum(sizes.values()):  # bentrevett 2 (fixed context) and 3 (attention) orders
        return ("hidden", "context", "embedding") if score else ("embedding", "hidden", "context")
    raise CheckpointError(where, f"{key} has {cols} columns; the output layer reads the decoder state "
                          f"({sizes['hidden']}) or [state; context; embedding] "
                          f"({sizes['hidden']} + {sizes['context']} + {sizes['embedding']}); say which in the spec "
                          '("output": ["hidden", "context", ...])')


def _layout(names: dict, score, feed: bool, bridge: bool, output: tuple) -> str:
    """The known layout these keys are (shown by ``inspect``; sets the default decoder_input)."""
    bentrevett = any(".rnn." in k or "fc_out" in k or k.startswith("rnn.") for k in names.values())
    if not bentrevett:
        if not bridge and output == ("hidden",) and score in (None, "additive") and feed == (score is not None):
            return "pytorch-tutorial" + ("-attention" if score else "")
        return "custom"
    if not bridge and not score and not feed and output == ("hidden",):
        return "bentrevett-1"
    if not bridge and not score and feed and output == ("embedding", "hidden", "context"):
        return "bentrevett-2"
    if bridge and score == "additive" and output == ("hidden", "context", "embedding"):
        return "bentrevett-3"
    return "custom"
