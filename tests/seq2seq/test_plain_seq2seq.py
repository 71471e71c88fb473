"""A user's own encoder-decoder state dict opens like seqviz's own seq2seq, and runs exactly like their module.

Each layout of ``plain_layouts`` (the PyTorch tutorial's, bentrevett's 1-3) is saved the way users save
it, opened by ``seqviz.load`` with only the vocabularies said, and its trace must equal the module's own
outputs (logits and attention weights, 1e-5), teacher-forced and free-running.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import seqviz
from seqviz.checkpoints import CheckpointError
from seqviz.registry import FAMILIES, detect
from seqviz.seq2seq.model import Seq2Seq, seq2seq_trace_names
from tests.seq2seq.plain_layouts import Bentrevett, LuongAttention, Tutorial, randomize

TUT_SRC = ["SOS", "EOS", "je", "suis", "tu", "es", "il", "est", "grand", "petit"]
TUT_TGT = ["SOS", "EOS", "i", "am", "you", "are", "he", "is", "tall", "small", "very"]
BEN_SRC = ["<unk>", "<pad>", "<sos>", "<eos>", "ich", "bin", "du", "bist", "gross", "klein"]
BEN_TGT = ["<unk>", "<pad>", "<sos>", "<eos>", "i", "am", "you", "are", "tall", "small", "very"]
PAIRS = {"tut": [("je suis grand", "i am tall"), ("tu es petit", "you are very small")],
         "ben": [("ich bin gross", "i am tall"), ("du bist klein", "you are very small")]}
LAYOUTS = {  # name: (module, source vocab, target vocab, spec, how it is saved)
    "pytorch-tutorial": (lambda: Tutorial(len(TUT_SRC), len(TUT_TGT), 8, attention=False), "tut", {}, "two-pt"),
    "pytorch-tutorial-attention": (lambda: Tutorial(len(TUT_SRC), len(TUT_TGT), 8, attention=True), "tut", {},
                                   "safetensors"),
    "bentrevett-1": (lambda: Bentrevett(1, len(BEN_SRC), len(BEN_TGT)), "ben", {"source_bos": True}, "npz"),
    "bentrevett-2": (lambda: Bentrevett(2, len(BEN_SRC), len(BEN_TGT)), "ben", {"source_bos": True}, "pt"),
    "bentrevett-3": (lambda: Bentrevett(3, len(BEN_SRC), len(BEN_TGT)), "ben", {"source_bos": True},
                     "safetensors"),
}
PARITY: dict[str, dict] = {}  # max abs differences, per layout (printed with -s)


def vocabs(kind):
    return (TUT_SRC, TUT_TGT) if kind == "tut" else (BEN_SRC, BEN_TGT)


def save(module, folder: Path, form: str, spec: dict | None) -> Path:
    """The module's weights as users save them; returns what to open."""
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in module.state_dict().items()}
    if spec is not None:
        (folder / "spec.json").write_text(json.dumps(spec))
    if form == "two-pt":
        torch.save(module.encoder.state_dict(), folder / "encoder.pt")
        torch.save(module.decoder.state_dict(), folder / "decoder.pt")
        return folder
    if form == "nested-pt":
        torch.save({"encoder": module.encoder.state_dict(), "decoder": module.decoder.state_dict(), "epoch": 3},
                   folder / "checkpoint.pt")
        return folder / "checkpoint.pt"
    if form == "npz":
        np.savez(folder / "weights.npz", **{k: v.numpy() for k, v in state.items()})
        return folder / "weights.npz"
    if form == "pt":
        torch.save(state, folder / "model.pt")
        return folder / "model.pt"
    save_file(state, str(folder / "model.safetensors"))
    return folder / "model.safetensors"


def open_layout(name, tmp_path, seed=0, form=None, spec_extra=None):
    build, kind, extra, saved = LAYOUTS[name]
    module = randomize(build(), seed)
    src, tgt = vocabs(kind)
    spec = {"source_vocab": src, "target_vocab": tgt, **extra, **(spec_extra or {})}
    return module, seqviz.load(save(module, tmp_path / name, form or saved, spec))


def user_ids(tokens, vocab):
    return [vocab.index(t) for t in tokens]


def gap(trace, weights, row, n, S) -> float:
    """Max |seqviz's attention weights - the module's| (inf when seqviz read no attention at all)."""
    if "decoder.attn.weights" not in trace:
        return float("inf")
    return float((trace["decoder.attn.weights"][row, :n, :S] - weights).abs().max())


def check_parity(module, model, kind, record=None):
    """seqviz's trace against the module's own run of each pair: teacher-forced, then free-running."""
    src_v, tgt_v = vocabs(kind)
    sos, eos = tgt_v.index(tgt_v[2] if kind == "ben" else "SOS"), tgt_v.index("<eos>" if kind == "ben" else "EOS")
    pre = [src_v.index("<sos>")] if kind == "ben" else []
    post = [src_v.index("<eos>" if kind == "ben" else "EOS")]
    inverse = [model.tgt_vocab.user_ids.index(u) for u in range(len(tgt_v))]  # seqviz id of each user id
    banned = [u for u in (model.tgt_vocab.user_ids[0], model.tgt_vocab.user_ids[2]) if u is not None]
    pairs = PAIRS[kind]
    tf = model.trace([s for s, _ in pairs], [t for _, t in pairs])  # one padded batch
    diffs = {"tf_logits": 0.0, "tf_attention": 0.0, "fr_logits": 0.0, "fr_attention": 0.0}
    for row, (s, t) in enumerate(pairs):
        src_ids = pre + user_ids(s.split(), src_v) + post
        gold = user_ids(t.split(), tgt_v) + [eos]
        logits, weights, _ = module.run(src_ids, gold, len(gold), sos)
        n, S = len(gold), len(src_ids)
        diffs["tf_logits"] = max(diffs["tf_logits"], float((tf["logits"][row, :n][:, inverse] - logits).abs().max()))
        if weights is not None:
            diffs["tf_attention"] = max(diffs["tf_attention"], gap(tf, weights, row, n, S))
        fr = model.trace([s], max_len=9)
        steps = int(fr["target.mask"].sum())
        logits, weights, chosen = module.run(src_ids, None, steps, sos, banned)
        diffs["fr_tokens"] = max(diffs.get("fr_tokens", 0.0), float(
            [model.tgt_vocab.user_ids[i] for i in fr["target.tokens"][0, :steps].tolist()] != chosen))
        diffs["fr_logits"] = max(diffs["fr_logits"], float((fr["logits"][0][:, inverse] - logits).abs().max()))
        if weights is not None:
            diffs["fr_attention"] = max(diffs["fr_attention"], gap(fr, weights, 0, steps, S))
    for what, value in diffs.items():
        assert value < 1e-5, (what, value)
    if record:
        PARITY[record] = diffs
        print(record, {k: f"{v:.1e}" for k, v in diffs.items()})
    return diffs


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_each_layout_traces_exactly_like_its_own_module(tmp_path, name):
    with torch.no_grad():
        module, model = open_layout(name, tmp_path)
        assert detect(tmp_path / name).name == "plain_seq2seq" and isinstance(model, Seq2Seq)
        assert model.config.layout == name and model.card["layout"] == name
        check_parity(module, model, LAYOUTS[name][1], record=name)
    assert list(model.trace("je suis grand" if "tutorial" in name else "ich bin gross")) == \
        seq2seq_trace_names(model.config.cell, model.attn is not None)


def test_what_the_shapes_say(tmp_path):
    _, tut = open_layout("pytorch-tutorial", tmp_path)
    _, ben1 = open_layout("bentrevett-1", tmp_path)
    _, ben3 = open_layout("bentrevett-3", tmp_path)
    assert (tut.config.cell, tut.config.decoder_input, tut.config.score, tut.config.output) == \
        ("gru", "relu(embedding)", None, ("hidden",))
    assert (ben1.config.cell, ben1.config.enc_layers, ben1.config.dec_layers, ben1.config.decoder_input) == \
        ("lstm", 2, 2, "embedding")
    assert list(ben1.trace("ich bin gross"))[:8] == ["source.tokens", "source.mask", "target.inputs",
                                                     "target.tokens", "target.mask", "encoder.h", "decoder.h",
                                                     "decoder.c"]
    assert (ben3.config.bidirectional, ben3.config.bridge, ben3.config.score, ben3.config.d_attention,
            ben3.config.output) == (True, True, "additive", 9, ("hidden", "context", "embedding"))
    # the tutorial's vocabulary has no <pad>/<unk>: placeholders at 0-1 that can never be chosen
    assert tut.tgt_vocab.tokens[:4] == ["<pad>", "<unk>", "SOS", "EOS"] and tut.tgt_vocab.user_ids[:4] == [None, None,
                                                                                                          0, 1]
    assert ben3.src_vocab.tokens[:4] == ["<pad>", "<unk>", "<sos>", "<eos>"]
    with pytest.raises(ValueError, match="no unknown token: 'nicht'"):
        tut.trace("je nicht grand")


@pytest.mark.parametrize("general", [True, False])
def test_luong_scores_where_the_keys_show_them_or_the_spec_says_dot(tmp_path, general):
    module = Tutorial(len(TUT_SRC), len(TUT_TGT), 8, attention=True)
    module.decoder.attention = LuongAttention(8, general)
    module = randomize(module, 5, scale=0.4)
    spec = {"source_vocab": TUT_SRC, "target_vocab": TUT_TGT, **({} if general else {"attention": "dot"})}
    model = seqviz.load(save(module, tmp_path / "luong", "safetensors", spec))
    assert (model.config.score, model.config.layout, model.config.decoder_input) == \
        ("general" if general else "dot", "custom", "embedding")
    with torch.no_grad():
        check_parity(module, model, "tut", record=f"luong-{'general' if general else 'dot'}")
    if not general:  # dot attention has no weights: without the spec the shapes read as a fixed context (bentrevett 2)
        (tmp_path / "luong" / "spec.json").write_text(json.dumps({"source_vocab": TUT_SRC, "target_vocab": TUT_TGT}))
        fixed = seqviz.load(tmp_path / "luong")
        assert fixed.config.score is None and fixed.config.feed_context
        with pytest.raises(AssertionError, match="tf_logits"), torch.no_grad():
            check_parity(module, fixed, "tut")


def test_the_relu_of_the_tutorials_decoder_matters(tmp_path):
    """The check can fail: reading DecoderRNN without its relu gives other logits."""
    module, model = open_layout("pytorch-tutorial", tmp_path, spec_extra={"decoder_input": "embedding"})
    with pytest.raises(AssertionError, match="tf_logits"), torch.no_grad():
        check_parity(module, model, "tut")


@pytest.mark.parametrize("form", ["two-pt", "nested-pt", "npz", "pt", "safetensors"])
def test_every_file_form_of_the_attention_tutorial_opens_the_same(tmp_path, form):
    module, model = open_layout("pytorch-tutorial-attention", tmp_path, form=form)
    with torch.no_grad():
        check_parity(module, model, "tut")
    if form == "two-pt":  # the encoder's file alone finds its decoder, and the spec beside them
        assert seqviz.load(tmp_path / "pytorch-tutorial-attention" / "encoder.pt").card["files"][1].endswith(
            "decoder.pt")


def test_decoding_strategies_run_on_a_plain_model(tmp_path):
    from seqviz.decoding import beam_search, sample
    from seqviz.introspect.attention import translate_text
    from seqviz.introspect.exposure import compare_translation

    _, model = open_layout("bentrevett-3", tmp_path)
    greedy, _trace = model.translate(["ich bin gross", "du bist klein"], max_len=9)
    assert beam_search(model, ["ich bin gross", "du bist klein"], k=1, max_len=9).best == greedy
    assert sample(model, ["ich bin gross", "du bist klein"], temperature=0, max_len=9) == greedy
    assert len(beam_search(model, ["ich bin gross"], k=3, max_len=9).hypotheses[0]) == 3
    shown = translate_text(model, "ich bin gross")
    assert shown["trace"].source_strings[0] == ["<sos>", "ich", "bin", "gross", "<eos>"]
    assert compare_translation(model, "ich bin gross", "i am tall")["table"].shape[0] >= 4


def test_a_key_map_opens_any_other_naming_and_the_spec_fields_as_written(tmp_path):
    module = randomize(Tutorial(5, 5, 6, attention=True), 3)
    renamed = {"encoder.gru.": "enc.rnn_cell.", "decoder.gru.": "dec.rnn_cell.", "attention.": "att."}
    state = {}
    for k, v in module.state_dict().items():
        for a, b in renamed.items():
            k = k.replace(a, b)
        state[k] = v.contiguous()
    spec = {"source_vocab": ["<pad>", "<unk>", "</s>", "a", "b"], "target_vocab": ["<pad>", "<unk>", "<s>", "</s>",
                                                                                   "AA0"],
            "source_tokenizer": "char", "target_tokenizer": "word", "bos": "<s>", "eos": "</s>", "pad": "<pad>",
            "unk": "<unk>", "source_eos": True, "decoder_input": "embedding",
            "keys": {"enc_emb": "encoder.embedding.weight", "dec_w_ih": "dec.rnn_cell.weight_ih_l0",
                     "enc_w_ih": "enc.rnn_cell.weight_ih_l0", "enc_w_hh": "enc.rnn_cell.weight_hh_l0",
                     "enc_b_ih": "enc.rnn_cell.bias_ih_l0", "enc_b_hh": "enc.rnn_cell.bias_hh_l0",
                     "dec_w_hh": "dec.rnn_cell.weight_hh_l0", "dec_b_ih": "dec.rnn_cell.bias_ih_l0",
                     "dec_b_hh": "dec.rnn_cell.bias_hh_l0",
                     **{f"attn_{m.lower()}_{leaf[0]}": f"decoder.att.{m}.{leaf}" for m in ("Wa", "Ua", "Va")
                        for leaf in ("weight", "bias")}}}
    (tmp_path / "m").mkdir()
    save_file(state, str(tmp_path / "m" / "w.safetensors"))
    (tmp_path / "m" / "spec.json").write_text(json.dumps(spec))
    model = seqviz.load(tmp_path / "m")
    assert model.card["keys"]["dec_w_ih_l0"] == "dec.rnn_cell.weight_ih_l0" and model.src_vocab.kind == "char"
    assert model.tgt_vocab.tokens == spec["target_vocab"] and model.tgt_vocab.user_ids == [0, 1, 2, 3, 4]
    tf = model.trace("ab", "AA0 AA0")
    with torch.no_grad():
        logits, weights, _ = module.run([3, 4, 2], [4, 4, 3], 3, 2)
    assert torch.allclose(tf["logits"][0], logits, atol=1e-5)
    assert torch.allclose(tf["decoder.attn.weights"][0], weights, atol=1e-5)


def bad(tmp_path, state, spec, name="bad"):
    (tmp_path / name).mkdir()
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp_path / name / "model.safetensors"))
    if spec is not None:
        (tmp_path / name / "spec.json").write_text(json.dumps(spec))
    with pytest.raises(CheckpointError) as err:
        seqviz.load(tmp_path / name)
    return str(err.value)


def test_bad_inputs_are_one_clear_error_naming_the_users_keys(tmp_path):
    module = randomize(Tutorial(len(TUT_SRC), len(TUT_TGT), 8, attention=True), 0)
    state = dict(module.state_dict())
    spec = {"source_vocab": TUT_SRC, "target_vocab": TUT_TGT}
    wrong = {**state, "decoder.gru.weight_ih_l0": torch.zeros(24, 7)}
    assert "decoder.gru.weight_ih_l0 reads 7 inputs; after decoder.embedding.weight (11 x 8) the decoder reads 8 " \
           "(the embedding) or 16" in bad(tmp_path, wrong, spec, "shape")
    hh = {**state, "encoder.gru.weight_hh_l0": torch.zeros(20, 8)}
    assert "encoder.gru.weight_hh_l0 has shape (20, 8): a GRU's weight_hh is [3H, H]" in bad(tmp_path, hh, spec, "hh")
    message = bad(tmp_path, state, None, "novocab")
    assert "the weights say: a GRU encoder-decoder, 10 source and 11 target tokens" in message
    assert 'give them in the spec as "source_vocab"' in message
    assert "has 9 tokens but encoder.embedding.weight has 10 rows" in bad(
        tmp_path, state, {**spec, "source_vocab": TUT_SRC[:-1]}, "short")
    assert "no start token" in bad(tmp_path, state, {"source_vocab": TUT_SRC, "target_vocab": ["x", "EOS"] + TUT_TGT[2:]},
                                   "nosos")
    missing = {k: v for k, v in state.items() if k != "decoder.attention.Ua.weight"}
    assert "but no Ua" in bad(tmp_path, missing, spec, "noua")
    assert '"keys" maps dec_w_ih to decoder.rnn.weight_ih_l0, but the weights have no decoder.rnn.weight_ih_l0' in bad(
        tmp_path, state, {**spec, "keys": {"dec_w_ih": "decoder.rnn.weight_ih_l0"}}, "badkey")
    assert "'decoder.gate.weight'" not in bad(tmp_path, state, {**spec, "keys": {"dec_gate": "x"}}, "badname")
    extra = {**state, "decoder.concat.weight": torch.zeros(8, 16)}
    assert "seqviz does not know what decoder.concat.weight is" in bad(tmp_path, extra, spec, "extra")
    assert "unknown field 'source_vocb'" in bad(tmp_path, state, {**spec, "source_vocb": []}, "typo")
    nan = {**state, "decoder.out.bias": torch.full((11,), float("nan"))}
    assert "decoder.out.bias contains NaN" in bad(tmp_path, nan, spec, "nan")


def test_detect_routes_encoder_decoders_and_keeps_language_models(tmp_path):
    module = randomize(Tutorial(len(TUT_SRC), len(TUT_TGT), 8, attention=False), 0)
    spec = {"source_vocab": TUT_SRC, "target_vocab": TUT_TGT}
    for form in ("safetensors", "pt", "npz", "nested-pt"):
        target = save(module, tmp_path / form, form, None)
        assert detect(target).name == "plain_seq2seq", form  # from the keys alone, no spec
        assert detect(target.parent).name == "plain_seq2seq", form
    save(module, tmp_path / "two", "two-pt", None)
    assert detect(tmp_path / "two").name == detect(tmp_path / "two" / "decoder.pt").name == "plain_seq2seq"
    lm = torch.nn.GRU(4, 5)
    save_file({f"rnn.{k}": v for k, v in lm.state_dict().items()} | {"encoder.weight": torch.zeros(7, 4),
                                                                        "decoder.weight": torch.zeros(7, 5)},
              str(tmp_path / "lm.safetensors"))
    assert detect(tmp_path / "lm.safetensors").name == "state_dict"  # word_language_model's names stay an LM
    np.savez(tmp_path / "lm.npz", **{k: v.numpy() for k, v in
                                     {f"rnn.{k}": v for k, v in lm.state_dict().items()}.items()})
    assert detect(tmp_path / "lm.npz").name == "state_dict"  # an LM's .npz goes to the LM loader, which reads it
    (tmp_path / "spec_only").mkdir()
    save_file({"a.weight": torch.zeros(2, 2)}, str(tmp_path / "spec_only" / "w.safetensors"))
    (tmp_path / "spec_only" / "spec.json").write_text(json.dumps(spec))
    assert detect(tmp_path / "spec_only").name == "plain_seq2seq"
    assert FAMILIES["plain_seq2seq"].model_type == "seq2seq"


def test_inspect_says_what_it_found(tmp_path):
    from tests.core.test_protocol import run_inspect

    open_layout("bentrevett-3", tmp_path)
    done = run_inspect(tmp_path / "bentrevett-3")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["found"] == FAMILIES["plain_seq2seq"].description and report["layout"] == "bentrevett-3"
    assert report["cell"] == "gru" and report["attention"] == "additive" and report["sizes"]["encoder"] == \
        "1 x 7 x 2 directions"
    assert report["specials"]["target"] == {"pad": "<pad>", "unk": "<unk>", "bos": "<sos>", "eos": "<eos>"}
    assert "decoder.attn.weights" in report["trace_names"] and report["card"]["keys"]["attn_w"] == \
        "decoder.attention.attn.weight"
    bad_path = tmp_path / "bentrevett-3" / "spec.json"
    bad_path.write_text(json.dumps({"source_vocab": BEN_SRC}))
    done = run_inspect(tmp_path / "bentrevett-3")
    assert done.returncode == 2 and done.stderr.startswith("error: ") and "target_vocab" in done.stderr
    assert done.stderr.count("\n") == 1


def test_an_upload_of_encoder_decoder_and_its_vocabularies_opens(tmp_path):
    from seqviz.uploads import extract_upload

    module = randomize(Tutorial(len(TUT_SRC), len(TUT_TGT), 8, attention=True), 0)
    save(module, tmp_path / "files", "two-pt", None)
    (tmp_path / "files" / "source_vocab.json").write_text(json.dumps(TUT_SRC))
    (tmp_path / "files" / "target_vocab.json").write_text(json.dumps(TUT_TGT))
    (tmp_path / "files" / "settings.json").write_text(json.dumps({"source_eos": True}))  # any name: the spec
    files = [(p.name, p.read_bytes()) for p in sorted((tmp_path / "files").iterdir())]
    opened = extract_upload(files, tmp_path / "upload")
    assert opened.is_dir() and (opened / "spec.json").is_file()
    with torch.no_grad():
        check_parity(module, seqviz.load(opened), "tut")


def test_an_npz_holding_pickled_objects_is_refused(tmp_path):
    module = randomize(Tutorial(len(TUT_SRC), len(TUT_TGT), 8, attention=False), 0)
    arrays = {k: v.numpy() for k, v in module.state_dict().items()}
    arrays["decoder.out.bias"] = np.array([{"evil": 1}], dtype=object)
    (tmp_path / "evil").mkdir()
    np.savez(tmp_path / "evil" / "w.npz", **arrays)
    (tmp_path / "evil" / "spec.json").write_text(json.dumps({"source_vocab": TUT_SRC, "target_vocab": TUT_TGT}))
    with pytest.raises(CheckpointError, match="not a plain .npz of numeric arrays"):
        seqviz.load(tmp_path / "evil")


@pytest.mark.parametrize("name", ["pytorch-tutorial-attention", "bentrevett-1", "bentrevett-3"])
def test_every_single_corruption_is_one_checkpoint_error_or_loads(tmp_path, name):
    """Drop each tensor, grow each by a row or a column, flatten it, make it 3-D or integer: never a traceback."""
    build, kind, extra, _ = LAYOUTS[name]
    state = {k: v.detach().contiguous() for k, v in randomize(build(), 0).state_dict().items()}
    src, tgt = vocabs(kind)
    spec = json.dumps({"source_vocab": src, "target_vocab": tgt, **extra})
    variants = []
    for key, t in state.items():
        variants.append({k: v for k, v in state.items() if k != key})
        changed = [torch.zeros(t.shape[0] + 1, *t.shape[1:]), t.flatten(), t[None], t.long()]
        if t.dim() == 2:
            changed.append(torch.zeros(t.shape[0], t.shape[1] + 1))
        variants += [{**state, key: c} for c in changed]
    outcomes = {"loaded": 0, "refused": 0}
    for i, variant in enumerate(variants):
        folder = tmp_path / str(i)
        folder.mkdir()
        save_file(variant, str(folder / "model.safetensors"))
        (folder / "spec.json").write_text(spec)
        try:
            seqviz.load(folder).trace(PAIRS[kind][0][0])
            outcomes["loaded"] += 1  # e.g. a dropped bias (bias=False loads with zeros)
        except CheckpointError as e:
            assert "\n" not in str(e) and "Traceback" not in str(e)
            outcomes["refused"] += 1
    assert outcomes["refused"] > 3 * len(state)


@pytest.mark.parametrize("field,value", [
    ("keys", ["enc_emb"]), ("keys", {"enc_emb": 3}), ("output", "hidden"), ("output", ["hidden", "logits"]),
    ("output", ["hidden", "context"]), ("attention", "luong"), ("attention", "general"), ("decoder_input", "tanh"),
    ("max_target_len", "long"), ("max_target_len", 10**6), ("source_tokenizer", 3), ("bos", 1), ("eos", "</s>"),
    ("source_eos", "yes"), ("source_bos", True), ("source_vocab", "missing.json"), ("target_vocab", [1, 2]),
    ("weights", "other.pt"), ("weights", {"encoder": "model.safetensors"})])
def test_every_bad_spec_field_is_one_checkpoint_error(tmp_path, field, value):
    module = randomize(Tutorial(len(TUT_SRC), len(TUT_TGT), 8, attention=True), 0)
    spec = {"source_vocab": TUT_SRC, "target_vocab": TUT_TGT, field: value}
    if field == "source_bos":  # the tutorial's source vocabulary has a start token: drop it to make this bad
        spec["source_vocab"] = ["<x>"] + TUT_SRC[1:]
    message = bad(tmp_path, dict(module.state_dict()), spec)
    assert "\n" not in message and message.split(": ", 1)[0].endswith(("spec.json", "bad", "missing.json"))
