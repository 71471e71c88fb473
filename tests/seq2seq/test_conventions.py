"""A recognised layout brings its code's conventions; the spec overrides them; inspect says where each came from.

The modules are ``plain_layouts``' (written from the tutorials' equations, random weights far from PyTorch's
defaults): parity here is with the module's own run, sentence by sentence (``check_parity``, 1e-5).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import seqviz
from seqviz.checkpoints import CheckpointError
from seqviz.introspect import exposure as ex
from seqviz.seq2seq.conventions import conventions
from tests.seq2seq.plain_layouts import Bentrevett, Tutorial, randomize
from tests.seq2seq.test_plain_seq2seq import BEN_SRC, BEN_TGT, check_parity, save

DIGITS = ["SOS", "EOS", *"0123456789"]  # the tutorial's Lang of a digit task: every word is one character


def _bentrevett(tmp_path, spec_extra=None, seed=0):
    module = randomize(Bentrevett(1, len(BEN_SRC), len(BEN_TGT)), seed)
    spec = {"source_vocab": BEN_SRC, "target_vocab": BEN_TGT, **(spec_extra or {})}
    return module, seqviz.load(save(module, tmp_path / "ben", "npz", spec))


def test_bentrevett_without_a_spec_field_frames_the_source_as_its_code_did(tmp_path):
    module, model = _bentrevett(tmp_path)
    assert model.config.layout == "bentrevett-1"
    assert (model.config.source_bos, model.config.source_eos) == (True, True)
    assert model.conventions["source_bos"].origin == "layout" and model.conventions["bos"].value == "<sos>"
    check_parity(module, model, "ben")  # <sos> x <eos>, as bentrevett's notebook feeds it: 1e-5
    told = seqviz.load(save(module, tmp_path / "told", "npz", {"source_vocab": BEN_SRC, "target_vocab": BEN_TGT,
                                                                  "source_bos": False}))
    assert told.config.source_bos is False and told.conventions["source_bos"].origin == "spec"
    a, b = model.trace(["ich bin gross"], ["i am tall"]), told.trace(["ich bin gross"], ["i am tall"])
    assert float((a["logits"] - b["logits"]).abs().max()) > 1e-3  # the framing matters to this module


def test_inspect_prints_each_convention_and_its_origin(tmp_path):
    from tests.core.test_protocol import run_inspect

    _bentrevett(tmp_path, {"eos": "<eos>"})
    done = run_inspect(tmp_path / "ben" / "weights.npz")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)["conventions"]
    assert shown["source_bos"] == "true (from the layout)" and shown["eos"] == "<eos> (from the spec)"
    assert shown["source_tokenizer"] == "word (from the layout)"
    assert set(shown) == {"bos", "eos", "source_bos", "source_eos", "source_tokenizer", "target_tokenizer",
                          "decoder_input", "keys"}


def test_conventions_by_layout_spec_and_guess():
    tut = conventions("pytorch-tutorial", {}, DIGITS, DIGITS)
    assert {f: (c.value, c.origin) for f, c in tut.items() if f != "keys"} == {
        "bos": ("SOS", "layout"), "eos": ("EOS", "layout"), "source_bos": (False, "layout"),
        "source_eos": (True, "layout"), "source_tokenizer": ("word", "layout"), "target_tokenizer": ("word", "layout"),
        "decoder_input": ("relu(embedding)", "layout")}
    custom = conventions("custom", {"decoder_input": "relu(embedding)"}, ["<pad>", "</s>", "a", "b"], ["<s>", "</s>", "x"])
    assert (custom["source_tokenizer"].value, custom["source_tokenizer"].origin) == ("char", "guess")
    assert (custom["source_eos"].value, custom["source_eos"].origin) == (True, "guess")
    assert (custom["decoder_input"].value, custom["decoder_input"].origin) == ("relu(embedding)", "spec")
    assert custom["bos"].value == "<s>" and custom["keys"].origin == "guess"


def _tutorial_digits(tmp_path, spec_extra=None, attention=True):
    module = randomize(Tutorial(len(DIGITS), len(DIGITS), 8, attention), 4)
    spec = {"source_vocab": DIGITS, "target_vocab": DIGITS, **(spec_extra or {})}
    return module, seqviz.load(save(module, tmp_path / "digits", "two-pt", spec))


def test_a_vocabulary_of_digits_in_the_tutorials_layout_reads_words(tmp_path):
    module, model = _tutorial_digits(tmp_path)
    assert model.src_vocab.kind == "word" and model.conventions["source_tokenizer"].origin == "layout"
    tr = model.trace(["3 1 4"], ["4 1 3"])
    src = [DIGITS.index(t) for t in "3 1 4".split()] + [1]
    gold = [DIGITS.index(t) for t in "4 1 3".split()] + [1]
    logits, weights, _ = module.run(src, gold, len(gold), 0)
    inverse = [model.tgt_vocab.user_ids.index(u) for u in range(len(DIGITS))]
    assert float((tr["logits"][0, :len(gold)][:, inverse] - logits).abs().max()) < 1e-5
    assert float((tr["decoder.attn.weights"][0, :len(gold), :len(src)] - weights).abs().max()) < 1e-6


def test_a_refused_character_names_the_spec_field_that_reads_words(tmp_path):
    _, model = _tutorial_digits(tmp_path, {"source_tokenizer": "char"})
    with pytest.raises(ValueError, match=r"' '.*\"source_tokenizer\": \"word\""):
        model.trace(["3 1 4"])


def _canonical_state(module) -> dict:
    """The tutorial's DecoderRNN saved under seqviz's own names, but fc_w/fc_b for the output layer (g2p-en's)."""
    out = {}
    for key, value in module.state_dict().items():
        side, part, leaf = key.split(".")
        side = "enc" if side == "encoder" else "dec"
        if part == "embedding":
            name = f"{side}_emb"
        elif part == "gru":
            kind, what, layer = leaf.split("_")
            name = f"{side}_{kind[0]}_{what}"
        else:
            name = "fc_w" if leaf == "weight" else "fc_b"
        out[name] = value.detach().numpy()
    return out


@pytest.mark.parametrize("keys", [{"fc_w": "out_w", "fc_b": "out_b"}, {"out_w": "fc_w", "out_b": "fc_b"}])
def test_key_maps_read_either_way_and_seqvizs_own_names_need_no_entry(tmp_path, keys):
    module = randomize(Tutorial(len(DIGITS), len(DIGITS), 6, attention=False), 2)
    folder = tmp_path / "g2p"
    folder.mkdir()
    np.savez(folder / "checkpoint.npz", **_canonical_state(module))
    (folder / "spec.json").write_text(json.dumps({"source_vocab": DIGITS, "target_vocab": DIGITS, "keys": keys,
                                                  "decoder_input": "relu(embedding)", "source_tokenizer": "word",
                                                  "target_tokenizer": "word"}))
    model = seqviz.load(folder)
    assert model.card["keys"]["out_w"] == "fc_w" and model.card["keys"]["enc_w_hh_l0"] == "enc_w_hh"
    gold = [DIGITS.index(t) for t in "4 1 3".split()] + [1]
    logits, _w, _c = module.run([5, 3, 6, 1], gold, len(gold), 0)
    inverse = [model.tgt_vocab.user_ids.index(u) for u in range(len(DIGITS))]
    tr = model.trace(["3 1 4"], ["4 1 3"])
    assert float((tr["logits"][0, :len(gold)][:, inverse] - logits).abs().max()) < 1e-5
    (folder / "spec.json").write_text(json.dumps({"source_vocab": DIGITS, "target_vocab": DIGITS}))
    with pytest.raises(CheckpointError, match="fc_b, fc_w"):  # only the unknown names need an entry
        seqviz.load(folder)


@pytest.mark.parametrize("end", ["EOS", "</s>", "[SEP]"])
def test_the_end_token_ends_the_output_whatever_it_is_called(tmp_path, end):
    src = ["<pad>", "<unk>", "<s>", end, "ich", "bin", "du", "bist", "gross", "klein"]
    tgt = ["<pad>", "<unk>", "<s>", end, "i", "am", "you", "are", "tall", "small", "very"]
    module = randomize(Bentrevett(3, len(src), len(tgt)), 4)
    with torch.no_grad():
        module.decoder.fc_out.bias[3] += 1.0  # this random module then ends after one token (else never)
    folder = tmp_path / "end"
    save(module, folder, "safetensors", {"source_vocab": src, "target_vocab": tgt, "bos": "<s>"})
    model = seqviz.load(folder / "model.safetensors")
    assert model.tgt_vocab.end == end and model.conventions["eos"].origin in ("layout", "guess")
    ids, tr = model.translate(["ich bin gross"])
    own = model.tgt_vocab.strings(ids[0])  # its greedy output, without the end token: a perfect reference
    assert tr.target_strings[0][len(own)] == end and len(own) < 5
    run = ex.compare_translation(model, "ich bin gross", own)
    assert run["edit_distance"] == 0 and run["first_divergence"] is None and end not in run["free_running"]
    assert run["free_running"] == own
    at_end = ex.injection_choices(model, own, len(own))
    assert end not in at_end and "<unk>" in at_end  # the gold there is the end token; <unk> is a real token here
    assert end in ex.injection_choices(model, own, 0)
