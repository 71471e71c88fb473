"""One model protocol: ``seqviz.load`` opens every shipped folder and a user's own files, ``inspect`` says what they are.

Plain state dicts are built here the way users build them (``nn.Embedding`` + ``nn.RNN/GRU/LSTM`` +
``nn.Linear``), saved with nothing but a vocabulary list, and must trace exactly like the modules
themselves (``layers.{i}.h`` against each layer's own ``nn.LSTM`` output, to 1e-5).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from torch import nn

import seqviz
from seqviz.checkpoints import CheckpointError
from seqviz.pretrained import Pretrained
from seqviz.registry import FAMILIES, detect

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p for p in (ROOT / "checkpoints").iterdir() if (p / "config.json").is_file())
VOCAB = list("\n !',.:;?abcdefghijklmnopqrstuvwxyz")
TEXT = "to be, or not to be: that is the question!\n"
FUSED = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}


def sample_input(model):
    if model.model_type == "recurrent_lm":
        return TEXT
    if model.model_type == "word2vec":
        return "the king and the queen"
    return "我 昨天 在 公园 吃 了 一个 苹果" if model.src_vocab.kind == "unit" else "March 3, 2021"


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_folder_loads_through_seqviz_load_and_traces(folder):
    model = seqviz.load(folder)
    assert detect(folder).model_type == model.model_type
    names = model.trace_names()
    trace = model.trace(sample_input(model))
    # a transformers Mamba leaves its T x D x N tensors (decay, state) out unless they are named, an xLSTM its
    # memory C (T x U x DK): the leaves its model's module lists in ON_REQUEST
    on_request = {n for n in names if n.split(".", 2)[-1] in getattr(sys.modules[type(model).__module__], "ON_REQUEST", ())}
    assert list(trace) == [n for n in names if n not in on_request]
    names = list(trace)
    for name in names:
        assert torch.isfinite(trace[name].float()).all() or "attn" in name, name  # no NaN to trip over
    first_two = model.trace(sample_input(model), names=names[-2:])
    assert list(first_two) == names[-2:]
    info = model.describe()
    assert info["model_type"] == model.model_type and info["trace_names"] == model.trace_names()
    assert info["parameters"] > 0


class PlainLM(nn.Module):
    """A language model as users write it; ``prefix`` names the recurrent module as they would."""

    def __init__(self, cell, layers, vocab, emb=6, hid=9, rnn_name="rnn"):
        super().__init__()
        self.encoder = nn.Embedding(vocab, emb)
        self.rnn_name = rnn_name
        setattr(self, rnn_name, FUSED[cell](emb, hid, layers, batch_first=True))
        self.decoder = nn.Linear(hid, vocab)

    @property
    def recurrent(self):
        return getattr(self, self.rnn_name)

    def layer_outputs(self, ids):
        """h of every layer, each from PyTorch's own module: layer i's input is layer i-1's output."""
        x, outs = self.encoder(ids), []
        cell = type(self.recurrent)
        for i in range(self.recurrent.num_layers):
            one = cell(x.shape[-1], self.recurrent.hidden_size, 1, batch_first=True)
            for leaf in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(one, f"{leaf}_l0").data.copy_(getattr(self.recurrent, f"{leaf}_l{i}"))
            x, _ = one(x)
            outs.append(x)
        return outs


def save_plain(model: nn.Module, folder: Path, suffix: str, key_prefix: str = "") -> Path:
    folder.mkdir(parents=True)
    state = {key_prefix + k: v.detach().contiguous() for k, v in model.state_dict().items()}
    weights = folder / f"weights{suffix}"
    if suffix == ".safetensors":
        save_file(state, str(weights))
    else:
        torch.save(state, weights)
    (folder / "vocab.json").write_text(json.dumps(VOCAB))
    return weights


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("layers,rnn_name,key_prefix,suffix", [
    (1, "rnn", "", ".safetensors"), (2, "lstm", "", ".pt"), (2, "rnn", "model.", ".safetensors"),
    (2, "encoder_rnn", "", ".pth")])
def test_plain_state_dicts_load_by_folder_and_by_file_with_no_spec(tmp_path, cell, layers, rnn_name, key_prefix,
                                                                  suffix):
    torch.manual_seed(layers)
    plain = PlainLM(cell, layers, len(VOCAB), rnn_name=rnn_name).eval()
    weights = save_plain(plain, tmp_path / "mine", suffix, key_prefix)
    by_folder, by_file = seqviz.load(tmp_path / "mine"), seqviz.load(weights)
    ids = torch.tensor([[VOCAB.index(c) for c in TEXT]])
    with torch.no_grad():
        expected = plain.layer_outputs(ids)
        logits = plain.decoder(plain.recurrent(plain.encoder(ids))[0])
    for model in (by_folder, by_file):
        cfg = model.config
        assert (cfg.cell, cfg.n_layers, cfg.d_embed, cfg.d_hidden, cfg.vocab_size) == (cell, layers, 6, 9, len(VOCAB))
        assert cfg.tokenizer == "char" and model.tokenizer.tokens == VOCAB
        trace = model.trace(TEXT)
        for i in range(layers):
            assert torch.allclose(trace[f"layers.{i}.h"], expected[i], atol=1e-5), i
        assert torch.allclose(trace["logits"], logits, atol=1e-5)
        assert model.card["inferred"] == f"{layers}-layer {cell.upper()}, hidden 9, embedding 6, {len(VOCAB)} tokens"
        assert model.card["keys"]["rnn"] == key_prefix + rnn_name


def test_a_spec_that_names_the_wrong_cell_is_told_what_the_shapes_say(tmp_path):
    plain = PlainLM("lstm", 2, len(VOCAB), emb=32, hid=128).eval()
    weights = save_plain(plain, tmp_path / "m", ".safetensors")
    (tmp_path / "m" / "spec.json").write_text(json.dumps({"cell": "gru"}))
    with pytest.raises(CheckpointError) as err:
        seqviz.load(tmp_path / "m")
    message = str(err.value)
    assert "rnn.weight_hh_l0 has shape (512, 128) = 4 x 128 rows, which is an LSTM" in message  # the user's key
    assert "the spec says gru" in message and "layers.0" not in message
    (tmp_path / "m" / "spec.json").unlink()
    assert seqviz.load(weights).config.cell == "lstm"


def test_vocabularies_in_every_accepted_shape_and_a_clear_error_without_one(tmp_path):
    plain = PlainLM("gru", 1, len(VOCAB)).eval()
    weights = save_plain(plain, tmp_path / "m", ".safetensors")
    for vocab in ({"kind": "char", "tokens": VOCAB}, {t: i for i, t in enumerate(VOCAB)}):
        (tmp_path / "m" / "vocab.json").write_text(json.dumps(vocab))
        assert seqviz.load(weights).tokenizer.tokens == VOCAB
    (tmp_path / "m" / "vocab.json").unlink()
    (tmp_path / "m" / "weights.json").write_text(json.dumps({"vocab": VOCAB}))  # <stem>.json beside the weights
    assert seqviz.load(weights).tokenizer.tokens == VOCAB
    (tmp_path / "m" / "weights.json").rename(tmp_path / "m" / "weights.safetensors.json")
    with pytest.raises(CheckpointError, match="weights.safetensors.json: a spec is read from weights.json beside"):
        seqviz.load(tmp_path / "m")  # never silently ignored
    (tmp_path / "m" / "weights.safetensors.json").unlink()
    with pytest.raises(CheckpointError, match=r"the weights say: 1-layer GRU, hidden 9, embedding 6, 35 tokens\. "
                                              r"seqviz also needs the 35 tokens in id order"):
        seqviz.load(weights)
    (tmp_path / "m" / "vocab.json").write_text(json.dumps(VOCAB[:-1]))
    with pytest.raises(CheckpointError, match="vocabulary has 34 tokens but the embedding has 35 rows"):
        seqviz.load(weights)


def test_seqviz_own_layer_layout_and_a_tied_head_are_inferred(tmp_path):
    from tests.conftest import build_tiny_lm

    ours = build_tiny_lm("lstm", seed=4)
    folder = ours.save_pretrained(tmp_path / "ck")
    (folder / "config.json").unlink()  # only the weights and the vocabulary are left
    again = seqviz.load(folder)
    assert again.config == ours.config and torch.equal(again.trace(TEXT)["logits"], ours.trace(TEXT)["logits"])

    torch.manual_seed(0)
    tied = PlainLM("gru", 1, len(VOCAB), emb=9, hid=9).eval()
    state = {k: v for k, v in tied.state_dict().items() if not k.startswith("decoder")}
    (tmp_path / "tied").mkdir()
    save_file(state, str(tmp_path / "tied" / "w.safetensors"))
    (tmp_path / "tied" / "vocab.json").write_text(json.dumps(VOCAB))
    model = seqviz.load(tmp_path / "tied")
    assert torch.equal(model.head.weight, tied.encoder.weight) and model.card["keys"]["head"] == "encoder.weight (tied)"


def test_an_encoder_decoder_state_dict_is_not_taken_for_a_language_model(tmp_path):
    state = {"encoder.rnn.weight_ih_l0": torch.zeros(12, 4), "encoder.rnn.weight_hh_l0": torch.zeros(12, 4),
             "decoder.rnn.weight_ih_l0": torch.zeros(12, 4), "decoder.rnn.weight_hh_l0": torch.zeros(12, 4)}
    save_file(state, str(tmp_path / "s2s.safetensors"))
    assert detect(tmp_path / "s2s.safetensors").name == "plain_seq2seq"  # tests/seq2seq/test_plain_seq2seq.py
    with pytest.raises(CheckpointError, match="no source embedding found beside encoder.rnn.weight_hh_l0"):
        seqviz.load(tmp_path / "s2s.safetensors")
    state = {"rnn1.weight_ih_l0": torch.zeros(12, 4), "rnn1.weight_hh_l0": torch.zeros(12, 4),
             "rnn2.weight_ih_l0": torch.zeros(12, 4), "rnn2.weight_hh_l0": torch.zeros(12, 4)}
    save_file(state, str(tmp_path / "two.safetensors"))  # two recurrent modules named neither way: still an LM's error
    with pytest.raises(CheckpointError, match="several modules \\('rnn1', 'rnn2'\\).*encoder-decoder"):
        seqviz.load(tmp_path / "two.safetensors")


def test_fasttext_bin_files_from_gensims_test_data_load_as_word_vectors():
    from gensim.models.fasttext import load_facebook_vectors
    from gensim.test.utils import datapath

    for name in ("lee_fasttext.bin", "lee_fasttext_new.bin", "non_ascii_fasttext.bin"):  # old and new format
        wv = seqviz.load(datapath(name))
        reference = load_facebook_vectors(datapath(name))
        assert wv.model_type == "word2vec" and wv.config.format == "fasttext-bin"
        assert wv.words == list(reference.index_to_key)
        word = wv.words[3]
        np.testing.assert_allclose(wv.vectors[3], reference[word], rtol=1e-6)
    limited = seqviz.load(datapath("lee_fasttext_new.bin"), limit=50)
    assert limited.words == list(load_facebook_vectors(datapath("lee_fasttext_new.bin")).index_to_key[:50])


def test_large_vector_files_open_their_first_words_without_reading_the_whole_file(tmp_path, monkeypatch):
    from gensim.models import KeyedVectors

    import seqviz.word2vec.formats as formats

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(3000)]
    kv = KeyedVectors(8)
    kv.add_vectors(words, rng.normal(size=(3000, 8)).astype(np.float32))
    kv.save_word2vec_format(str(tmp_path / "big.bin"), binary=True)
    kv.save_word2vec_format(str(tmp_path / "big.txt"), binary=False)
    monkeypatch.setattr(formats, "MAX_FILE_BYTES", 1000)  # both files are now "too large" to read whole
    for name in ("big.bin", "big.txt"):
        with pytest.raises(CheckpointError, match="open its most frequent words only"):
            seqviz.load(tmp_path / name)
        head = seqviz.load(tmp_path / name, limit=100)
        assert head.words == words[:100]
        np.testing.assert_allclose(head.vectors, kv.vectors[:100], rtol=1e-6)
    # Appending garbage after row 100 does not matter: rows past the limit are never read.
    data = (tmp_path / "big.txt").read_bytes()
    cut = sum(len(line) + 1 for line in data.split(b"\n")[:101])
    (tmp_path / "broken.txt").write_bytes(data[:cut] + b"\xff\xfe not vectors at all\n")
    assert len(seqviz.load(tmp_path / "broken.txt", limit=100)) == 100


def test_a_hostile_pickle_is_refused_in_one_sentence_naming_what_it_would_import(tmp_path):
    import os

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    torch.save({"rnn.weight_hh_l0": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(CheckpointError) as err:
        seqviz.load(tmp_path / "evil.pt")
    message = err.value.problem
    assert message.startswith("refused: this pickle would import the Python object posix.system")
    assert message.endswith("torch.save") and "\n" not in message and "weights_only" not in message


def test_a_folder_from_a_newer_seqviz_is_refused_and_new_folders_record_their_format(tmp_path):
    from tests.conftest import build_tiny_lm

    folder = build_tiny_lm("rnn").save_pretrained(tmp_path / "ck")
    config = json.loads((folder / "config.json").read_text())
    assert config["format_version"] == 2
    (folder / "config.json").write_text(json.dumps({**config, "format_version": 3}))
    with pytest.raises(CheckpointError, match="newer seqviz"):
        seqviz.load(folder)


def test_the_registry_is_the_one_table():
    assert set(FAMILIES) == {"recurrent_lm", "state_dict", "seq2seq", "plain_seq2seq", "transformers", "word2vec",
                             "mamba", "falcon_mamba", "minlm", "recurrent_gemma", "rwkv", "xlstm"}
    for family in FAMILIES.values():
        cls = family.cls
        assert callable(cls.from_pretrained) and callable(cls.trace) and callable(cls.describe), family.name
        assert cls.model_type == family.model_type
        # save and load are written once: a family (or the base of its kind, hf_causal.HFCausalLM) overrides only
        # _from_pretrained / _save_pretrained
        own = [k for k in cls.__mro__ if k is not Pretrained and "_from_pretrained" in vars(k)]
        assert issubclass(cls, Pretrained) and own, family.name
        assert cls.from_pretrained.__func__ is Pretrained.from_pretrained.__func__, family.name
        assert cls.save_pretrained is Pretrained.save_pretrained, family.name


def test_every_seqviz_family_round_trips_through_the_one_save_pretrained(tmp_path):
    from seqviz.word2vec.formats import save_checkpoint
    from seqviz.word2vec.vectors import VectorsConfig, WordVectors
    from tests.conftest import build_tiny_lm
    from tests.seq2seq.conftest import make_model

    rng = np.random.default_rng(1)
    vectors = WordVectors(["the", "and", "king"], rng.normal(size=(3, 4)), np.array([30, 20, 5]),
                          config=VectorsConfig(vocab_size=3, dim=4, arch="cbow", format="array"))
    for model in (build_tiny_lm("lstm"), make_model("gru"), vectors):
        folder = model.save_pretrained(tmp_path / model.model_type, {"note": "test"})
        card = json.loads((folder / "card.json").read_text())
        assert card == {"note": "test", "parameters": model.num_parameters()}
        assert json.loads((folder / "config.json").read_text())["format_version"] == 2
        again = type(model).from_pretrained(folder)
        assert again.config == (model.config if model is not vectors else VectorsConfig(3, 4, arch="cbow"))
        assert seqviz.load(folder).card["note"] == "test"
    # formats.save_checkpoint writes the same folder, byte for byte, until the parser rewrite retires it
    for dtype in ("float32", "float16"):
        ours = vectors.save_pretrained(tmp_path / f"ours-{dtype}", {}, dtype=dtype)
        theirs = save_checkpoint(vectors, tmp_path / f"theirs-{dtype}", {"parameters": 12}, arch="cbow", dtype=dtype)
        for name in ("config.json", "vocab.json", "vectors.safetensors", "card.json"):
            assert (ours / name).read_bytes() == (theirs / name).read_bytes(), (dtype, name)
    with pytest.raises(ValueError, match="dtype must be 'float16' or 'float32'"):
        vectors.save_pretrained(tmp_path / "bad", dtype="int8")
    with pytest.raises(CheckpointError, match="a seq2seq checkpoint is a folder"):
        type(make_model()).from_pretrained(tmp_path / "ours-float32" / "card.json")


def run_inspect(path):
    """``python -m seqviz inspect PATH`` in this process: (exit status, stdout, stderr)."""
    import contextlib
    import io

    from seqviz.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["inspect", str(path)])
    return subprocess.CompletedProcess(["inspect"], code, out.getvalue(), err.getvalue())


def test_inspect_runs_as_a_command_and_exits_2_on_a_refusal(tmp_path):
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 40)
    done = subprocess.run([sys.executable, "-m", "seqviz", "inspect", str(tmp_path / "junk.safetensors")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1


def test_inspect_says_what_each_family_is(tmp_path):
    from gensim.test.utils import datapath

    plain = PlainLM("lstm", 2, len(VOCAB)).eval()
    save_plain(plain, tmp_path / "plain", ".safetensors")
    cases = {
        ROOT / "checkpoints" / "shakespeare-char-gru": ('"cell": "gru"', '"layers.1.gates.update"', '"val_loss"'),
        ROOT / "checkpoints" / "zh-en-attention-gru": ('"model_type": "seq2seq"', '"decoder.attn.weights"',
                                                       '"target_vocab_size": 161'),
        ROOT / "checkpoints" / "word2vec-shakespeare": ('"model_type": "word2vec"', '"dims": 100', '"the"'),
        tmp_path / "plain": ('plain PyTorch', '"cell": "lstm"', '"layers": 2', '"hidden": 9',
                             f'"vocab_size": {len(VOCAB)}', '"inferred": "2-layer LSTM'),
        Path(datapath("lee_fasttext.bin")): ('"format": "fasttext-bin"', '"words": 1762'),
    }
    for path, fragments in cases.items():
        done = run_inspect(path)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["parameters"] > 0 and report["vocab_sample"] and report["trace_names"]
        for fragment in fragments:
            assert fragment in done.stdout, (path.name, fragment)
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 40)
    done = run_inspect(tmp_path / "junk.safetensors")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1 and "not a valid safetensors" in done.stderr


def test_inspect_describes_a_transformers_encoder_decoder(tmp_path):
    from transformers import MarianConfig, MarianMTModel

    from tests.seq2seq.test_hf_cross_attention import tokenizer

    config = MarianConfig(vocab_size=len(tokenizer()), d_model=16, encoder_layers=1, decoder_layers=2,
                          encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=16,
                          decoder_ffn_dim=16, max_position_embeddings=64, pad_token_id=0, eos_token_id=2,
                          decoder_start_token_id=0)
    MarianMTModel(config).save_pretrained(tmp_path / "marian", safe_serialization=True)
    tokenizer().save_pretrained(tmp_path / "marian")
    done = run_inspect(tmp_path / "marian")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["model_type"] == "transformers marian" and report["layers"] == {"encoder": 1, "decoder": 2}
    assert "decoder.cross_attn.weights" in report["trace_names"]
