"""transformers encoder-decoders (Marian, BART, T5) with random weights, built offline from configs.

Cross-attention traces are checked against a recomputation from each layer's own q/k
projections, across batching, and through the attention page (AppTest).
"""

from __future__ import annotations

import math
import os

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import (BartConfig, BartForConditionalGeneration, MarianConfig, MarianMTModel,
                          PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration)

from appkit.registry import PAGES
from seqviz.checkpoints import CheckpointError
from seqviz.hf_seq2seq import HFSeq2Seq, hf_trace_names, select_heads, translate_text
from seqviz.introspect.attention import alignment_frame, resoftmax
from seqviz.registry import is_hf_seq2seq, load, model_family
from tests.app.test_pages import open_page

WORDS = ("<pad> </s> <unk> <s> 我 你 昨天 今天 在 公园 学校 吃 喝 了 一个 苹果 茶 "
         "i you ate drank an apple tea in the park at school yesterday today").split()
SENTENCE = "我 昨天 在 公园 吃 了 一个 苹果"
SHARED = dict(vocab_size=len(WORDS), d_model=16, pad_token_id=0, eos_token_id=1)
CONFIGS = {
    "marian": (MarianMTModel, MarianConfig(**SHARED, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                                           decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                                           max_position_embeddings=64, decoder_start_token_id=0,
                                           forced_eos_token_id=1)),
    "bart": (BartForConditionalGeneration, BartConfig(**SHARED, encoder_layers=2, decoder_layers=2,
                                                      encoder_attention_heads=2, decoder_attention_heads=2,
                                                      encoder_ffn_dim=32, decoder_ffn_dim=32, bos_token_id=3,
                                                      max_position_embeddings=64, decoder_start_token_id=1,
                                                      forced_bos_token_id=None, forced_eos_token_id=1)),
    "t5": (T5ForConditionalGeneration, T5Config(**SHARED, d_kv=8, d_ff=32, num_layers=2, num_decoder_layers=2,
                                                num_heads=3, decoder_start_token_id=0)),
}
SCALE = {"marian": 0.8, "bart": 0.8, "t5": 0.25}  # T5 does not divide q.k by sqrt(d): smaller weights
PAGE = next(p for p in PAGES if p.path == "attention.py")


def tokenizer() -> PreTrainedTokenizerFast:
    """A whitespace word-level tokenizer that appends </s>, like Marian's (no download needed)."""
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                   model_max_length=64)


@pytest.fixture(scope="module")
def hf_root(tmp_path_factory):
    """One folder per architecture: config.json, model.safetensors, tokenizer files."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("hf-seq2seq")
    for name, (cls, config) in CONFIGS.items():
        torch.manual_seed(0)
        model = cls(config)
        with torch.no_grad():  # larger matrices than the default init, so attention is far from uniform
            for key, p in model.named_parameters():
                if p.dim() == 2 and "embed_positions" not in key:
                    p.normal_(0, SCALE[name])
        model.save_pretrained(root / f"tiny-{name}", safe_serialization=True)
        tokenizer().save_pretrained(root / f"tiny-{name}")
    return root


@pytest.fixture(scope="module", params=list(CONFIGS))
def hf_model(request, hf_root) -> HFSeq2Seq:
    return HFSeq2Seq.from_pretrained(hf_root / f"tiny-{request.param}")


def test_trace_names_shapes_and_rows_summing_to_one(hf_model):
    tr = hf_model.trace([SENTENCE, "你 在 学校"], tgt=["i ate an apple in the park yesterday", "you"])
    assert list(tr) == hf_trace_names()
    config = hf_model.model.config
    layers = getattr(config, "decoder_layers", None) or config.num_decoder_layers
    heads = getattr(config, "decoder_attention_heads", None) or config.num_heads
    B, S, T = 2, 9, 9  # 8 words + </s>, each side
    assert tr["decoder.cross_attn.weights"].shape == (B, layers, heads, T, S)
    assert tr["decoder.attn.weights"].shape == tr["decoder.attn.scores"].shape == (B, T, S)
    assert tr.source_lengths().tolist() == [9, 4] and tr.lengths().tolist() == [9, 2]
    assert tr.source_strings[1] == ["你", "在", "学校", "</s>"] and tr.target_strings[1] == ["you", "</s>"]
    w = tr["decoder.cross_attn.weights"]
    real = w[0]  # no padding on either side
    assert torch.allclose(real.sum(-1), torch.ones(layers, heads, T), atol=1e-5)
    padded = w[1, :, :, :2]  # the short sentence: 4 real source positions, 2 real target steps
    assert torch.allclose(padded[..., :4].sum(-1), torch.ones(layers, heads, 2), atol=1e-5)
    assert (padded[..., 4:] == 0).all() and w[1, :, :, 2:].isnan().all()
    assert torch.isinf(tr["decoder.attn.scores"][1, :2, 4:]).all()
    assert real.amax(-1).mean() > 2 / S  # far from uniform: a typical row's peak is over twice 1/S


def test_select_heads_picks_one_head_or_the_mean(hf_model):
    tr = hf_model.trace(SENTENCE)
    w = tr["decoder.cross_attn.weights"]
    assert torch.equal(tr["decoder.attn.weights"], w[:, -1].mean(1))  # default: last layer, mean of heads
    one = select_heads(tr, 0, 1)
    assert torch.equal(one["decoder.attn.weights"], w[:, 0, 1])
    assert torch.allclose(resoftmax(one["decoder.attn.scores"], 1.0), w[:, 0, 1], atol=1e-6)
    with pytest.raises(ValueError, match="layer must be in 0..1"):
        select_heads(tr, 5)
    with pytest.raises(ValueError, match="head must be in"):
        select_heads(tr, 0, 9)


def _recomputed_scores(hf: HFSeq2Seq, src: list[str], tgt: list[str]):
    """Per layer, e = q k^T * scaling from the layer's own projections of its captured inputs."""
    captured = {}
    handles = []
    for i, layer in enumerate(hf.model.model.decoder.layers):
        def grab(module, args, kwargs, i=i):
            captured[i] = (kwargs.get("hidden_states", args[0] if args else None), kwargs["key_value_states"])
        handles.append(layer.encoder_attn.register_forward_pre_hook(grab, with_kwargs=True))
    try:
        tr = hf.trace(src, tgt=tgt)
    finally:
        for h in handles:
            h.remove()
    scores = []
    for i, layer in enumerate(hf.model.model.decoder.layers):
        attn, (h, enc) = layer.encoder_attn, captured[i]
        B, T, _ = h.shape
        q = attn.q_proj(h).view(B, T, attn.num_heads, attn.head_dim).transpose(1, 2)
        k = attn.k_proj(enc).view(B, enc.shape[1], attn.num_heads, attn.head_dim).transpose(1, 2)
        e = (q @ k.transpose(-1, -2)) * attn.head_dim ** -0.5  # [B, H, T, S]
        scores.append(e.masked_fill(~tr["source.mask"][:, None, None, :], float("-inf")))
    return tr, torch.stack(scores, dim=1)


@pytest.mark.parametrize("arch", ["marian", "bart"])
def test_weights_equal_softmax_of_q_k_and_temperature_is_exact_per_head(hf_root, arch):
    hf = HFSeq2Seq.from_pretrained(hf_root / f"tiny-{arch}")
    tr, e = _recomputed_scores(hf, [SENTENCE, "你 喝 了 茶"], ["i ate an apple", "you drank tea today"])
    ok = tr["target.mask"][:, None, None, :, None].expand_as(e)
    assert torch.allclose(torch.softmax(e, -1)[ok], tr["decoder.cross_attn.weights"][ok], atol=1e-6)
    # transformers gives no scores, but log(alpha) = e - logsumexp(e): softmax(log alpha / T) = softmax(e / T)
    for layer in range(2):
        for head in range(2):
            one = select_heads(tr, layer, head)
            for temperature in (0.2, 1.0, 3.0):
                want = torch.softmax(e[:, layer, head].double() / temperature, -1)
                got = resoftmax(one["decoder.attn.scores"], temperature)
                rows = tr["target.mask"]
                assert torch.allclose(got[rows].double(), want[rows], atol=1e-5)


def test_a_sentence_traced_alone_equals_its_row_in_a_padded_batch(hf_model):
    alone = hf_model.trace("你 在 学校", tgt="you at school today")
    batch = hf_model.trace([SENTENCE, "你 在 学校"], tgt=["i ate an apple in the park yesterday",
                                                       "you at school today"])
    S, T = 4, 5
    a = alone["decoder.cross_attn.weights"][0]
    b = batch["decoder.cross_attn.weights"][1, :, :, :T, :S]
    assert a.shape == b.shape and torch.allclose(a, b, atol=1e-5)
    assert torch.allclose(alone["loss"][0], batch["loss"][1, :T], atol=1e-4)


def test_greedy_translation_is_generate_and_unknown_words_are_listed(hf_model):
    result = translate_text(hf_model, "我 昨天 在 月球 吃 了")
    enc = hf_model.tokenizer(["我 昨天 在 月球 吃 了"], return_tensors="pt")
    out = hf_model.model.generate(**enc, max_new_tokens=64, num_beams=1, do_sample=False)[0]
    tr = result["trace"]
    n = int(tr.lengths()[0])
    assert tr["target.tokens"][0, :n].tolist() == out[1: n + 1].tolist()
    assert result["target"] == hf_model.tokenizer.convert_ids_to_tokens(out[1: n + 1].tolist())
    assert result["translation"] == hf_model.tokenizer.decode(out, skip_special_tokens=True).strip()
    assert result["unknown"] == ["月球"] and result["pieces"][3] == "<unk>"
    frame = alignment_frame(tr, 0, 1.0, source=result["pieces"])
    assert len(frame) == n * 7 and math.isclose(frame.groupby("t")["weight"].sum().min(), 1.0, abs_tol=1e-5)
    with pytest.raises(ValueError, match="no tokens"):
        translate_text(hf_model, "   ")
    with pytest.raises(ValueError, match="the sentence has 301 tokens; at most 64 are translated"):
        translate_text(hf_model, "我 " * 300)  # the tokenizer's model_max_length is 64


def test_loading_refuses_pickles_and_says_what_is_wrong(hf_root, tmp_path):
    only_bin = tmp_path / "only-bin"
    only_bin.mkdir()
    (only_bin / "config.json").write_text((hf_root / "tiny-marian" / "config.json").read_text())
    (only_bin / "pytorch_model.bin").write_bytes(b"not even a pickle")
    tokenizer().save_pretrained(only_bin)
    with pytest.raises(CheckpointError, match=r"only pickled weights \(pytorch_model.bin\); seqviz never unpickles"):
        HFSeq2Seq.from_pretrained(only_bin)
    with pytest.raises(CheckpointError, match="no such file or folder"):
        HFSeq2Seq.from_pretrained(tmp_path / "missing")
    with pytest.raises(CheckpointError, match="needs a network connection"):
        HFSeq2Seq.from_pretrained("seqviz-tests/no-such-model-anywhere")
    no_tok = tmp_path / "no-tokenizer"
    no_tok.mkdir()
    for name in ("config.json", "model.safetensors"):
        (no_tok / name).write_bytes((hf_root / "tiny-marian" / name).read_bytes())
    with pytest.raises(CheckpointError, match="no tokenizer files"):
        HFSeq2Seq.from_pretrained(no_tok)


def test_seqviz_load_and_the_catalogue_treat_it_as_seq2seq(hf_root):
    assert isinstance(load(hf_root / "tiny-t5"), HFSeq2Seq)
    assert model_family({"model_type": "marian", "is_encoder_decoder": True}) == "seq2seq"
    assert model_family({"model_type": "t5"}) == "seq2seq" and model_family({}) == "recurrent_lm"
    assert not is_hf_seq2seq({"model_type": "gpt2"}) and model_family({"model_type": "word2vec"}) == "word2vec"


# ------------------------------------------------------------------ the page
def test_page_shows_layer_and_head_controls_for_a_transformers_model(hf_root, monkeypatch):
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(hf_root))
    at = open_page(PAGE, {"seq2seq": "tiny-marian", "att_sentence": SENTENCE})
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="att_hf_layer").options == ["decoder layer 0", "decoder layer 1"]
    assert at.selectbox(key="att_hf_head").options == ["mean of heads", "head 0", "head 1"]
    at = at.selectbox(key="att_hf_layer").select(0).run()
    at = at.selectbox(key="att_hf_head").select(1).run()
    assert not at.exception, at.exception
    hf = HFSeq2Seq.from_pretrained(hf_root / "tiny-marian")
    result = translate_text(hf, SENTENCE)
    one = select_heads(result["trace"], 0, 1)
    t = int(at.selectbox(key="att_target").value.split(":")[0])
    weights = one["decoder.attn.weights"][0, t]
    strongest = next(m for m in at.metric if m.label.startswith("Strongest source"))
    assert strongest.value == result["pieces"][int(weights.argmax())]
    assert strongest.delta == f"largest weight α = {float(weights.max()):.3f}"
    assert len(at.get("vega_lite_chart")) >= 3  # heatmap, bar chart, the per-head grid
    assert any("log α" in c.value for c in at.caption)


def test_a_local_folder_typed_in_the_sidebar_opens_the_transformers_model(hf_root, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(tmp_path))  # nothing shipped
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", os.pathsep.join([str(hf_root), str(tmp_path)]))  # typed paths
    from appkit.sidebar import widget_key

    at = open_page(PAGE)
    at.sidebar.radio(key=widget_key("seq2seq", "source", "attention")).set_value("Local folder").run()
    at.sidebar.text_input(key=widget_key("seq2seq", "folder", "attention")).input(str(hf_root / "tiny-bart")).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error] + [i.value for i in at.info]
    assert at.selectbox(key="att_hf_head").options == ["mean of heads", "head 0", "head 1"]
    at.sidebar.text_input(key=widget_key("seq2seq", "folder", "attention")).input(str(tmp_path / "nowhere")).run()
    assert not at.exception and any("no such file or folder" in e.value for e in at.error)


def test_the_exposure_page_explains_it_needs_a_seqviz_seq2seq(hf_root, monkeypatch):
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(hf_root))
    exposure = next(p for p in PAGES if p.path == "exposure_bias.py")
    at = open_page(exposure, {"seq2seq": "tiny-t5"})
    assert not at.exception, at.exception
    assert any("Attention page" in i.value for i in at.info)


def test_a_config_asking_for_more_layers_than_the_weights_hold_is_refused(hf_root, tmp_path):
    import json

    from seqviz.checkpoints import CheckpointError

    folder = tmp_path / "inflated"
    folder.mkdir()
    for f in (hf_root / "tiny-bart").iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    config = json.loads((folder / "config.json").read_text())
    config.update(encoder_layers=2000, decoder_layers=2000)
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="asks for .* tensor"):
        HFSeq2Seq.from_pretrained(folder)  # refused from a meta-device skeleton, before any real allocation
