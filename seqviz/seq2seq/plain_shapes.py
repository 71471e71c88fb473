"""What a plain encoder-decoder's shapes say: cell, layers, directions, sizes, bridge, attention, output layer.

``infer`` reads the tensors named by ``plain_layout.find_names`` and returns the fields of a
``PlainSeq2SeqConfig``; every refusal is one ``CheckpointError`` naming the user's own keys and the
shape the others imply (``decoder.gru.weight_ih_l0 reads 7 inputs; after decoder.embedding.weight
(11 x 8) the decoder reads 8 (the embedding) or 16 (the embedding and a context ...)``).
"""

from __future__ import annotations

from seqviz.files import CheckpointError
from seqviz.seq2seq.plain_layout import CANONICAL_RNN


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
    if f"{side}_w_hh_l0" not in names:
        some = next(names[n] for n in names if CANONICAL_RNN.match(n) and n.startswith(side))
        raise CheckpointError(where, f"{some} belongs to the {what}'s recurrent layers, but its layer 0 has no "
                              "weight_hh_l0")
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
                if want is None:  # weight_ih: [G*H, inputs], inputs = the embedding (layer 0) or the layer below
                    if t.dim() != 2:
                        raise CheckpointError(where, f"{names[name]} has shape {tuple(t.shape)}; the {what}'s "
                                              f"{cell.upper()} needs a ({gates * hidden}, inputs) matrix")
                    first = int(t.shape[1])
                    want = (gates * hidden, d_in if layer == 0 and d_in is not None else
                            first if layer == 0 else hidden * dirs)
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
            _matrix("enc_fc_b", tensors, names, (D,), "the bridge's bias", where, f"a decoder of {D} units")
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
    layout = _layout(names, score, feed, bridge, output)  # its conventions (decoder_input ...): conventions.py
    return {"layout": layout, "cell": enc["cell"], "enc_layers": enc["layers"], "dec_layers": dec["layers"],
            "bidirectional": enc["dirs"] == 2, "d_src_embed": Es, "d_tgt_embed": Et, "d_encoder": He,
            "d_decoder": D, "score": score, "d_attention": size, "bridge": bridge, "feed_context": feed,
            "output": output, "src_vocab_size": Vs, "tgt_vocab_size": Vt}


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
    """The known layout these keys are (shown by ``inspect``; brings its code's conventions, ``conventions.py``):
    the tutorial's modules are named ``gru`` and ``out``, bentrevett's ``rnn`` and ``fc_out``."""
    bentrevett = any(".rnn." in k or "fc_out" in k or k.startswith("rnn.") for k in names.values())
    tutorial = any(".gru." in k for k in names.values()) and names["out_w"].rpartition(".")[0].endswith("out")
    if not bentrevett:
        if tutorial and not bridge and output == ("hidden",) and score in (None, "additive") and feed == (score is not None):
            return "pytorch-tutorial" + ("-attention" if score else "")
        return "custom"
    if not bridge and not score and not feed and output == ("hidden",):
        return "bentrevett-1"
    if not bridge and not score and feed and output == ("embedding", "hidden", "context"):
        return "bentrevett-2"
    if bridge and score == "additive" and output == ("hidden", "context", "embedding"):
        return "bentrevett-3"
    return "custom"
