"""Upload unpacking: good uploads load, hostile or broken ones are refused with a clear message."""

import io
import json
import os
import stat
import zipfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

import seqviz.uploads as uploads
from seqviz.checkpoints import CheckpointError
from seqviz.registry import load
from seqviz.uploads import extract_upload
from tests.conftest import build_tiny_lm, plain_state_dict

TEXT = "To be, or not to be"


def zip_bytes(entries, compression=zipfile.ZIP_DEFLATED):
    """entries: (name, bytes) or ZipInfo-ready (ZipInfo, bytes) pairs."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in entries:
            z.writestr(name, data)
    return buf.getvalue()


def folder_entries(tmp_path, prefix=""):
    model = build_tiny_lm("gru", seed=2)
    folder = model.save_pretrained(tmp_path / "ck", {"corpus": "test"})
    return model, [(prefix + p.name, p.read_bytes()) for p in sorted(folder.iterdir())]


def same_trace(a, b):
    ta, tb = a.trace(TEXT), b.trace(TEXT)
    return all(torch.equal(ta[k].nan_to_num(), tb[k].nan_to_num()) for k in ta)


@pytest.mark.parametrize("prefix", ["", "my-model/"])
def test_zipped_folder_loads(tmp_path, prefix):
    model, entries = folder_entries(tmp_path, prefix)
    path = extract_upload([("ck.zip", zip_bytes(entries))], tmp_path / "out")
    assert path.is_dir() and (path / "config.json").is_file()
    assert same_trace(model, load(path))


def test_loose_folder_files_load(tmp_path):
    model, entries = folder_entries(tmp_path)
    path = extract_upload(entries, tmp_path / "out")
    assert same_trace(model, load(path))


def test_weights_plus_spec_json_load(tmp_path):
    model = build_tiny_lm("lstm", seed=1)
    state = plain_state_dict(model)
    buf = tmp_path / "w.safetensors"
    save_file({k: v.contiguous() for k, v in state.items()}, str(buf))
    spec = json.dumps({"cell": "lstm", "tokenizer": "char", "vocab": model.tokenizer.tokens}).encode()
    path = extract_upload([("weights.safetensors", buf.read_bytes()), ("my spec.json", spec)], tmp_path / "out")
    assert path.name == "weights.safetensors"
    assert same_trace(model, load(path))


@pytest.mark.parametrize("name, message", [
    ("../evil.json", "outside"), ("/etc/evil.json", "absolute"), ("a/../../evil.json", "outside"),
    ("C:/evil.json", "absolute"), ("a\\..\\evil.json", "backslash")])
def test_zip_member_paths_outside_are_refused(tmp_path, name, message):
    data = zip_bytes([("config.json", b"{}"), (name, b"{}")])
    with pytest.raises(CheckpointError, match=message):
        extract_upload([("x.zip", data)], tmp_path / "out")
    assert not (tmp_path / "evil.json").exists()


def test_symlink_member_is_refused(tmp_path):
    info = zipfile.ZipInfo("config.json")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(info, "/etc/passwd")
    with pytest.raises(CheckpointError, match="symbolic link"):
        extract_upload([("x.zip", buf.getvalue())], tmp_path / "out")


def test_zip_bomb_ratio_is_refused(tmp_path):
    data = zip_bytes([("model.safetensors", bytes(20 << 20))])  # 20 MiB of zeros -> ~20 KiB
    assert len(data) < 100_000
    with pytest.raises(CheckpointError, match="zip bomb"):
        extract_upload([("bomb.zip", data)], tmp_path / "out")


def test_total_uncompressed_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(uploads, "MAX_UNCOMPRESSED_BYTES", 1000)
    data = zip_bytes([("a.json", os.urandom(600)), ("b.json", os.urandom(600))], zipfile.ZIP_STORED)
    with pytest.raises(CheckpointError, match="expands to"):
        extract_upload([("big.zip", data)], tmp_path / "out")


def test_member_larger_than_its_header_says_is_refused(tmp_path):
    payload = os.urandom(4096)
    data = bytearray(zip_bytes([("model.safetensors", payload)], zipfile.ZIP_STORED))
    # Lie in the central directory: declare 100 bytes instead of 4096 (uncompressed size, offset 24).
    cd = data.rfind(b"PK\x01\x02")
    data[cd + 24: cd + 28] = (100).to_bytes(4, "little")
    with pytest.raises(CheckpointError, match="model.safetensors"):
        extract_upload([("liar.zip", bytes(data))], tmp_path / "out")


def test_oversize_upload_is_refused_before_writing(tmp_path, monkeypatch):
    monkeypatch.setattr(uploads, "MAX_UPLOAD_BYTES", 10)
    with pytest.raises(CheckpointError, match="upload is 22 bytes, over the 10 bytes limit"):
        extract_upload([("config.json", b"{" + b" " * 20 + b"}")], tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("files, message", [
    ([("x.zip", b"not a zip")], "not a valid zip"),
    ([("evil.py", b"print(1)")], "unsupported file type"),
    ([("notes.json", b"{}")], "no checkpoint found"),
    ([("x.zip", zip_bytes([("config.json", b"{}")])), ("y.json", b"{}")], "not both"),
    ([], "no file"),
])
def test_unusable_uploads_have_clear_messages(tmp_path, files, message):
    with pytest.raises(CheckpointError, match=message):
        extract_upload(files, tmp_path / "out")


def test_temp_folder_is_removed_on_failure(tmp_path, monkeypatch):
    made = []
    real = uploads.tempfile.mkdtemp
    monkeypatch.setattr(uploads.tempfile, "mkdtemp", lambda **kw: made.append(real(**kw)) or made[-1])
    with pytest.raises(CheckpointError):
        extract_upload([("x.zip", b"junk")])
    assert made and not Path(made[0]).exists()


def test_loose_file_names_are_reduced_to_their_base_name(tmp_path):
    model, entries = folder_entries(tmp_path)
    renamed = [("../../" + name, data) for name, data in entries]
    path = extract_upload(renamed, tmp_path / "out")
    assert path == tmp_path / "out" and same_trace(model, load(path))


def test_old_extracted_uploads_are_deleted(tmp_path):
    import os
    import time

    from seqviz.checkpoints import UPLOAD_PREFIX
    from seqviz.uploads import prune_uploads

    now = time.time()
    for i in range(20):
        d = tmp_path / f"{UPLOAD_PREFIX}{i:02d}"
        d.mkdir()
        (d / "config.json").write_text("{}")
        os.utime(d, (now - 1000 + i, now - 1000 + i))  # folder 19 is the newest
    (tmp_path / "unrelated").mkdir()
    assert prune_uploads(keep=5, root=tmp_path) == 15
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [f"{UPLOAD_PREFIX}{i:02d}" for i in range(15, 20)] + ["unrelated"]


def test_a_plain_state_dict_upload_needs_only_its_vocabulary_under_any_name(tmp_path):
    import json

    from safetensors.torch import save
    from tests.conftest import build_tiny_lm, plain_state_dict

    model = build_tiny_lm("gru", seed=2)
    weights = save({k: v.contiguous() for k, v in plain_state_dict(model).items()})
    alone = extract_upload([("mine.safetensors", weights)], tmp_path / "a")
    with pytest.raises(CheckpointError, match="the weights say: 2-layer GRU, hidden 12.*needs the .* tokens in id order"):
        load(alone)
    vocab = json.dumps(model.tokenizer.tokens).encode()
    path = extract_upload([("mine.safetensors", weights), ("my_tokens.json", vocab)], tmp_path / "b")
    assert same_trace(model, load(path))
    spec = json.dumps({"cell": "gru", "vocab": model.tokenizer.tokens}).encode()
    path = extract_upload([("mine.safetensors", weights), ("notes.json", spec)], tmp_path / "c")
    assert same_trace(model, load(path))
