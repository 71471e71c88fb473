"""Hugging Face encoder-decoders (Marian, T5, BART ...): safe loading and cross-attention traces.

A transformers checkpoint is a folder like ours (``config.json`` + ``model.safetensors`` +
tokenizer files); it loads through ``AutoModelForSeq2SeqLM`` / ``AutoTokenizer`` with
``use_safetensors=True``, ``trust_remote_code=False`` and ``local_files_only=True``, so
nothing is unpickled and no code is fetched. A folder with only ``pytorch_model.bin`` is
refused.

A run translates greedily (``generate``), then makes ONE teacher-forced forward pass over
the generated tokens with ``output_attentions=True`` and returns a ``Seq2SeqTrace``:

    decoder.cross_attn.weights  [B, layers, heads, T, S]  softmax(q_t . k_j / sqrt(d)) per head
    decoder.attn.weights        [B, T, S]  one head, or the mean over a layer's heads
    decoder.attn.scores         [B, T, S]  log of that: -inf at padded source positions

transformers returns attention weights only, not the scores e before the softmax. For
one head, log alpha_tj = e_tj - logsumexp_k e_tk differs from e by a constant per row,
and softmax is blind to such constants, so softmax(log alpha / T) = softmax(e / T): the
page's temperature slider is exact on a single head. For the mean of heads it sharpens
or flattens the averaged map, which no single softmax produced.

torch and transformers are imported inside the functions: importing this module costs neither.
Telling a transformers config.json from seqviz's own is ``seqviz.registry``'s (``is_hf_seq2seq``).
"""

from __future__ import annotations

from pathlib import Path

from seqviz.files import CheckpointError, read_json
from seqviz.pretrained import Pretrained, quiet_loading
from seqviz.registry import is_hf_seq2seq

MAX_NEW_TOKENS = 64  # greedy decoding stops here when the model never emits </s>
MAX_SOURCE_TOKENS = 256  # longer inputs are refused (the alignment grows as source x target)
HEAD_MEAN = None  # ``head`` value meaning "the mean over the layer's heads"


def hf_trace_names() -> list[str]:
    """Every name a trace of a transformers encoder-decoder holds, in order (pinned by a test)."""
    return ["source.tokens", "source.mask", "target.inputs", "target.tokens", "target.mask", "encoder.h",
            "decoder.h", "decoder.cross_attn.weights", "decoder.attn.scores", "decoder.attn.weights",
            "logits", "loss"]


# ------------------------------------------------------------------ loading
def check_folder(folder: Path) -> None:
    """Refuse what cannot be loaded safely, with a message that says why and what to do."""
    if not is_hf_seq2seq(read_json(folder / "config.json")):
        raise CheckpointError(folder / "config.json", "not a transformers encoder-decoder config")
    if not any(folder.glob("*.safetensors")):
        pickled = sorted(p.name for p in folder.iterdir() if p.suffix in (".bin", ".pt", ".pth", ".ckpt", ".pkl"))
        if pickled:
            raise CheckpointError(folder, f"only pickled weights ({', '.join(pickled)}); seqviz never unpickles. "
                                  "Convert them where you trust the file: AutoModelForSeq2SeqLM.from_pretrained(...)"
                                  ".save_pretrained(folder, safe_serialization=True)")
        raise CheckpointError(folder, "no model.safetensors (or sharded *.safetensors) in the folder")
    tokenizer_files = ("tokenizer.json", "tokenizer_config.json", "spiece.model", "source.spm", "vocab.json")
    if not any((folder / f).is_file() for f in tokenizer_files):
        raise CheckpointError(folder, "no tokenizer files (tokenizer.json, spiece.model, source.spm ...); "
                              "save the tokenizer with the model: tokenizer.save_pretrained(folder)")


TIED_HINTS = ("embed", "shared", "lm_head")  # tied to the shared embedding: saved once, under one name


def check_weights_cover_config(folder: Path, kwargs: dict) -> None:
    """Refuse a config that asks for tensors the weight files do not hold, before building the model.

    transformers fills missing weights with random ones and only warns, so a config.json
    edited from 2 to 2,000 layers would build (and slowly allocate) a huge random model.
    The architecture is first built on torch's ``meta`` device (no memory), and its
    parameter names are compared with the names in the safetensors files; tied embedding
    copies (saved once) may be absent.
    """
    import torch
    from safetensors import safe_open
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    config = AutoConfig.from_pretrained(folder, **kwargs)
    with torch.device("meta"):
        skeleton = AutoModelForSeq2SeqLM.from_config(config)
    stored: dict[str, tuple] = {}
    for f in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(str(f), "pt") as h:
                stored.update({k: tuple(h.get_slice(k).get_shape()) for k in h.keys()})
        except Exception as e:  # noqa: BLE001 - a truncated or lying header
            raise CheckpointError(f, f"not a valid safetensors file ({str(e)[:120]})") from None
    names = [k for k in skeleton.state_dict() if k not in stored]
    missing = [k for k in names if not any(h in k for h in TIED_HINTS)]
    if missing:
        raise CheckpointError(folder, f"config.json asks for {len(missing)} tensor(s) the weights do not hold "
                              f"(e.g. {', '.join(missing[:3])}); refused rather than filled with random values")


# ------------------------------------------------------------------ the wrapper
class HFSeq2Seq(Pretrained):
    """A transformers encoder-decoder and its tokenizer, answering with seqviz traces.

    Not an ``nn.Module`` itself (so this file imports without torch). Saved with transformers' own
    ``save_pretrained`` (``model.model`` and ``model.tokenizer``); seqviz only reads these folders.
    """

    def __init__(self, model, tokenizer, card: dict | None = None):
        self.model, self.tokenizer, self.card = model, tokenizer, dict(card or {})

    model_type = "seq2seq"  # what pages ask for; config.json keeps transformers' own model_type
    folder_only = "a transformers checkpoint is a folder (config.json, model.safetensors, tokenizer files)"
    no_snapshots = "a transformers checkpoint keeps no seqviz training snapshots"

    @classmethod
    def _from_pretrained(cls, path: Path, snapshot: int | None = None) -> "HFSeq2Seq":
        """A transformers encoder-decoder on the CPU, eval mode, no gradients, with a small card."""
        check_folder(path)
        try:
            from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

            kwargs = {"local_files_only": True, "trust_remote_code": False}
            check_weights_cover_config(path, kwargs)
            tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
            # eager attention: the fused (sdpa) kernels do not return attention weights
            with quiet_loading():
                model = AutoModelForSeq2SeqLM.from_pretrained(path, use_safetensors=True, attn_implementation="eager",
                                                              **kwargs)
        except CheckpointError:
            raise
        except Exception as e:  # noqa: BLE001 - transformers raises many kinds; the user needs one line
            # The exception's text is not repeated: it can quote the folder's files (issue 20).
            raise CheckpointError(path, "could not load it as a transformers encoder-decoder "
                                  f"({type(e).__name__} from transformers)") from None
        cfg = model.config
        card = {"name": path.name, "task": f"hf:{cfg.model_type}", "path": str(path), "source": str(path),
                "architecture": f"transformers {type(model).__name__} ({cfg.model_type}), "
                                f"d_model {getattr(cfg, 'd_model', '?')}",
                "parameters": sum(p.numel() for p in model.parameters())}
        model.eval().requires_grad_(False)
        return cls(model, tokenizer, card)

    def _save_pretrained(self, folder: Path):
        raise NotImplementedError("a transformers model is saved with transformers: "
                                  "model.model.save_pretrained(folder) and model.tokenizer.save_pretrained(folder)")

    @property
    def config(self):
        return self.model.config

    def trace_names(self) -> list[str]:
        return hf_trace_names()

    def describe(self) -> dict:
        cfg = self.model.config
        return {"model_type": f"transformers {cfg.model_type}", "architecture": self.card.get("architecture"),
                "layers": {"encoder": getattr(cfg, "encoder_layers", getattr(cfg, "num_layers", None)),
                           "decoder": getattr(cfg, "decoder_layers", getattr(cfg, "num_decoder_layers", None))},
                "parameters": self.card.get("parameters"), "vocab_size": getattr(cfg, "vocab_size", None),
                "vocab_sample": self.tokenizer.convert_ids_to_tokens(list(range(min(20, len(self.tokenizer))))),
                "trace_names": self.trace_names()}

    def _encode(self, texts: list[str]):
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, padding_side="right")
        limit = min(MAX_SOURCE_TOKENS, self.tokenizer.model_max_length or MAX_SOURCE_TOKENS)
        longest = int(enc["attention_mask"].sum(1).max())
        if longest > limit:  # refused, not truncated: what the user typed is never silently dropped
            raise ValueError(f"the sentence has {longest:,} tokens; at most {limit} are translated at once: "
                             "shorten it")
        return enc

    def trace(self, src, tgt=None, *, names=None, max_new_tokens: int = MAX_NEW_TOKENS, layer: int = -1,
              head: int | None = HEAD_MEAN):
        """Translate ``src`` (a text or a list of texts) greedily and trace one forward pass.

        ``tgt`` given: teacher-forced on those reference texts instead of the model's output.
        ``layer``/``head`` choose what ``decoder.attn.weights`` shows (see ``select_heads``).
        """
        import torch

        texts = [src] if isinstance(src, str) else list(src)
        if not texts or any(not t.strip() for t in texts):
            raise ValueError("type a sentence to translate (it has no tokens)")
        enc = self._encode(texts)
        cfg, tok = self.model.config, self.tokenizer
        start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else tok.pad_token_id
        with torch.no_grad():
            if tgt is None:
                out = self.model.generate(**enc, max_new_tokens=max_new_tokens, num_beams=1, do_sample=False)
                dec_in, labels = out[:, :-1], out[:, 1:]  # out[:, 0] is the decoder start token
            else:
                refs = [tgt] if isinstance(tgt, str) else list(tgt)
                if len(refs) != len(texts):
                    raise ValueError(f"{len(texts)} source sentences but {len(refs)} targets")
                labels = tok(text_target=refs, return_tensors="pt", padding=True, padding_side="right").input_ids
                dec_in = torch.cat([torch.full_like(labels[:, :1], start), labels[:, :-1]], dim=1)
            run = self.model(**enc, decoder_input_ids=dec_in, output_attentions=True, output_hidden_states=True,
                             return_dict=True)
        eos = cfg.eos_token_id if isinstance(cfg.eos_token_id, int) else tok.eos_token_id
        if eos is None:
            tmask = labels != tok.pad_token_id
        else:  # valid up to and including the first </s>; what follows is padding
            is_eos = (labels == eos).long()
            tmask = (is_eos.cumsum(1) - is_eos) == 0
        smask = enc["attention_mask"].bool()
        cross = torch.stack(run.cross_attentions, dim=1).float()  # [B, L, H, T, S]
        cross = cross.masked_fill(~tmask[:, None, None, :, None], float("nan"))
        logp = torch.log_softmax(run.logits.float(), dim=-1)
        loss = -logp.gather(-1, labels[..., None]).squeeze(-1)
        tensors = {"source.tokens": enc["input_ids"], "source.mask": smask, "target.inputs": dec_in,
                   "target.tokens": labels, "target.mask": tmask, "encoder.h": run.encoder_last_hidden_state,
                   "decoder.h": run.decoder_hidden_states[-1], "decoder.cross_attn.weights": cross,
                   "logits": run.logits, "loss": loss.masked_fill(~tmask, 0.0)}
        src_strings = [tok.convert_ids_to_tokens(row[: int(n)].tolist())
                       for row, n in zip(enc["input_ids"], smask.sum(1))]
        tgt_strings = [tok.convert_ids_to_tokens(row[: int(n)].tolist()) for row, n in zip(labels, tmask.sum(1))]
        full = select_heads(_trace(tensors, src_strings, tgt_strings, tgt is not None), layer, head)
        if names is None:
            return full
        from seqviz.trace import check_names

        keep = check_names(names, hf_trace_names())
        return _trace({k: full[k] for k in keep}, src_strings, tgt_strings, tgt is not None)

    def translate(self, src, max_new_tokens: int = MAX_NEW_TOKENS, **selection):
        """Greedy decoding: (emitted ids per row without </s>, the trace of the run)."""
        tr = self.trace(src, max_new_tokens=max_new_tokens, **selection)
        eos = self.tokenizer.eos_token_id
        rows = []
        for toks, n in zip(tr["target.tokens"].tolist(), tr.lengths().tolist()):
            row = toks[: int(n)]
            rows.append(row[:-1] if row and row[-1] == eos else row)
        return rows, tr


def _trace(tensors: dict, source_strings, target_strings, teacher_forced: bool):
    from seqviz.seq2seq.model import Seq2SeqTrace

    return Seq2SeqTrace({k: tensors[k] for k in hf_trace_names() if k in tensors}, source_strings,
                        target_strings, teacher_forced)


def attention_shape(trace) -> tuple[int, int]:
    """(decoder layers, heads per layer) of a transformers trace."""
    _, layers, heads, _, _ = trace["decoder.cross_attn.weights"].shape
    return int(layers), int(heads)


def select_heads(trace, layer: int = -1, head: int | None = HEAD_MEAN):
    """The same trace with ``decoder.attn.weights``/``scores`` set to one layer's head (or head mean).

    Scores are log(weights) in float64: -inf at padded source positions, NaN on padded target rows.
    """
    import torch

    layers, heads = attention_shape(trace)
    if not -layers <= layer < layers:
        raise ValueError(f"layer must be in 0..{layers - 1}, got {layer}")
    if head is not None and not -heads <= head < heads:
        raise ValueError(f"head must be in 0..{heads - 1} (or None for the mean of heads), got {head}")
    per_head = trace["decoder.cross_attn.weights"][:, layer]  # [B, H, T, S]
    weights = per_head.mean(1) if head is None else per_head[:, head]
    tensors = {k: trace[k] for k in trace if not k.startswith("decoder.attn.")}
    tensors["decoder.attn.weights"] = weights
    tensors["decoder.attn.scores"] = torch.log(weights.double()).float()
    return _trace(tensors, trace.source_strings, trace.target_strings, trace.teacher_forced)


def translate_text(model: HFSeq2Seq, text: str, max_new_tokens: int = MAX_NEW_TOKENS) -> dict:
    """Like ``seqviz.introspect.attention.translate_text`` for a transformers model.

    Pieces are the tokenizer's subwords as it spells them ("▁the", "</s>"); ``unknown``
    lists the stretches of the input that became the unknown token, where the tokenizer
    can say which (fast tokenizers with offsets), else the unknown tokens themselves.
    """
    ids, tr = model.translate(text or "", max_new_tokens=max_new_tokens)
    tok = model.tokenizer
    pieces = tr.source_strings[0]
    unknown = []
    if tok.unk_token_id is not None and tok.unk_token_id in tr["source.tokens"][0].tolist():
        try:
            enc = tok(text, return_offsets_mapping=True)
            unknown = [text[a:b] for i, (a, b) in zip(enc["input_ids"], enc["offset_mapping"])
                       if i == tok.unk_token_id and b > a]
        except (NotImplementedError, ValueError, TypeError, KeyError):
            unknown = [tok.unk_token]
        unknown = list(dict.fromkeys(unknown)) or [tok.unk_token]
    return {"ids": tr["source.tokens"][0].tolist(), "pieces": pieces, "unknown": unknown, "source": pieces,
            "translation": tok.decode(ids[0], skip_special_tokens=True).strip(), "target": tr.target_strings[0],
            "trace": tr}


def heads_frame(trace, layer: int, row: int = 0):
    """Long table of every head of one layer for one sentence: head, t, j, labels, weight."""
    import pandas as pd

    layers, heads = attention_shape(trace)
    if not -layers <= layer < layers:
        raise ValueError(f"layer must be in 0..{layers - 1}, got {layer}")
    n_src, n_tgt = int(trace.source_lengths()[row]), int(trace.lengths()[row])
    weights = trace["decoder.cross_attn.weights"][row, layer, :, :n_tgt, :n_src]  # [H, T, S]
    src, tgt = trace.source_strings[row][:n_src], trace.target_strings[row][:n_tgt]
    records = [{"head": h, "t": t, "target": tgt[t], "target_label": f"{t}:{tgt[t]}", "j": j, "source": src[j],
                "source_label": f"{j}:{src[j]}", "weight": float(weights[h, t, j])}
               for h in range(heads) for t in range(n_tgt) for j in range(n_src)]
    return pd.DataFrame(records)
