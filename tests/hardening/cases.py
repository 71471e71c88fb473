"""The table of bad files: each builds one hostile or broken input and names the message it must get.

Shared by tests/hardening/test_bad_files.py and benchmarks/robustness.py (no pytest here).
A case is opened by one of three routes, the ways a file reaches seqviz:

* ``folder``:  a path typed into the sidebar's "Local folder" box (``open_local``) or given to
  ``python -m seqviz inspect``;
* ``upload``:  files dropped on the sidebar's checkpoint uploader (``open_upload``); the command
  line gets the same bytes as one ``.zip`` (or the weight file with its spec beside it);
* ``vectors``: a word2vec/GloVe file dropped on the word2vec page (``open_vectors``).

``message`` is a fragment of what the user reads, the same from the library, the command line
and the app.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

MIB = 1 << 20


@dataclass(frozen=True)
class Bad:
    name: str  # test id
    route: str  # "folder" | "upload" | "vectors"
    what: str  # the bad input, in words (for the closing note)
    message: str  # fragment of the message the user sees
    build: Callable[[Path], "Built"]
    cli_message: str | None = None  # where `python -m seqviz inspect` says it differently


@dataclass
class Built:
    path: Path  # what the library and the command line open
    files: list[tuple[str, bytes]] | None = None  # what the app's uploader receives (upload/vectors routes)
    marker: Path | None = None  # must not exist afterwards (code that must not have run)


# ------------------------------------------------------------------ helpers
def good_folder(dest: Path, cell: str = "gru") -> Path:
    """A valid tiny checkpoint folder (random weights) to break."""
    from tests.conftest import build_tiny_lm, tiny_card

    model = build_tiny_lm(cell, seed=7)
    return model.save_pretrained(dest, tiny_card(model, dest.name))


def zip_of(entries: list[tuple[str, bytes]], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in entries:
            z.writestr(name, data)
    return buf.getvalue()


def zipped(folder: Path, tmp: Path, prefix: str = "model/") -> Built:
    """The folder as one uploaded .zip (also written to disk for the command line)."""
    data = zip_of([(prefix + p.name, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()])
    path = tmp / f"{folder.name}.zip"
    path.write_bytes(data)
    return Built(path, [(path.name, data)])


def edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def poison(path: Path, name: str, value: float) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(path))
    tensors[name].view(-1)[0] = value
    save_file(tensors, str(path))


def plain_lm_files(tmp: Path, suffix: str = ".safetensors") -> tuple[Path, Path]:
    """A plain PyTorch state dict (+ its spec JSON), as a user of pytorch/examples would save it."""
    import torch
    from safetensors.torch import save_file

    from tests.conftest import build_tiny_lm, plain_state_dict

    model = build_tiny_lm("lstm", seed=3)
    state = plain_state_dict(model)
    weights = tmp / f"weights{suffix}"
    if suffix == ".pt":
        torch.save({k: v.clone() for k, v in state.items()}, weights)
    else:
        save_file({k: v.contiguous() for k, v in state.items()}, str(weights))
    spec = weights.with_suffix(".json")
    spec.write_text(json.dumps({"cell": "lstm", "tokenizer": "char", "vocab": model.tokenizer.tokens}))
    return weights, spec


class _Evil:
    """Unpickling this runs ``touch <marker>``: the proof that nothing was unpickled is the missing file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


# ------------------------------------------------------------------ builders (tmp: an empty folder)
def pickled_code(tmp: Path) -> Built:
    marker = tmp / "pwned"
    weights = tmp / "evil.pt"
    weights.write_bytes(pickle.dumps({"rnn.weight_ih_l0": _Evil(marker)}))
    spec = tmp / "evil.json"
    spec.write_text(json.dumps({"cell": "lstm", "vocab": ["a", "b"]}))
    return Built(weights, [(weights.name, weights.read_bytes()), (spec.name, spec.read_bytes())], marker)


def zip_slip(tmp: Path) -> Built:
    folder = good_folder(tmp / "ck")
    entries = [(p.name, p.read_bytes()) for p in folder.iterdir()] + [("../../escape.json", b"{}")]
    path = tmp / "slip.zip"
    path.write_bytes(zip_of(entries))
    return Built(path, [(path.name, path.read_bytes())], tmp.parent / "escape.json")


def zip_bomb(tmp: Path) -> Built:
    path = tmp / "bomb.zip"
    path.write_bytes(zip_of([("config.json", b"{}"), ("model.safetensors", bytes(64 * MIB))]))  # ~64 KiB
    return Built(path, [(path.name, path.read_bytes())])


def zip_symlink(tmp: Path) -> Built:
    import stat

    info = zipfile.ZipInfo("model/config.json")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(info, "/etc/passwd")
    path = tmp / "link.zip"
    path.write_bytes(buf.getvalue())
    return Built(path, [(path.name, path.read_bytes())])


def truncated_safetensors(tmp: Path) -> Built:
    folder = good_folder(tmp / "truncated")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    return Built(folder)


def lying_header(tmp: Path) -> Built:
    """A safetensors header that declares a [64, 64] float32 tensor over 8 bytes of data."""
    folder = good_folder(tmp / "liar")
    header = json.dumps({"embed.weight": {"dtype": "F32", "shape": [64, 64], "data_offsets": [0, 8]}}).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))
    return Built(folder)


def weights_unlike_config(tmp: Path) -> Built:
    folder = good_folder(tmp / "reshaped")
    edit_json(folder / "config.json", d_hidden=16)
    return zipped(folder, tmp)


def memory_bomb_config(tmp: Path) -> Built:
    """config.json claims an 8-layer LSTM of 8192 units (~17 GB): refused before any allocation."""
    folder = good_folder(tmp / "huge")
    edit_json(folder / "config.json", cell="lstm", n_layers=8, d_embed=8192, d_hidden=8192)
    return Built(folder)


def unknown_cell(tmp: Path) -> Built:
    folder = good_folder(tmp / "mamba")
    edit_json(folder / "config.json", cell="mamba")
    return zipped(folder, tmp)


def vocab_wrong_size(tmp: Path) -> Built:
    folder = good_folder(tmp / "vocab")
    vocab = json.loads((folder / "vocab.json").read_text())
    vocab["tokens"] = vocab["tokens"][:-1]
    (folder / "vocab.json").write_text(json.dumps(vocab))
    return Built(folder)


def nan_weights(tmp: Path) -> Built:
    folder = good_folder(tmp / "nan")
    poison(folder / "model.safetensors", "head.bias", float("nan"))
    return Built(folder)


def inf_weights(tmp: Path) -> Built:
    folder = good_folder(tmp / "inf")
    poison(folder / "model.safetensors", "layers.1.weight_hh_l0", float("inf"))
    return zipped(folder, tmp)


def zero_bytes(tmp: Path) -> Built:
    folder = good_folder(tmp / "empty")
    (folder / "model.safetensors").write_bytes(b"")
    return Built(folder, [(p.name, p.read_bytes()) for p in sorted(folder.iterdir())])


def wrong_extension(tmp: Path) -> Built:
    weights, spec = plain_lm_files(tmp)
    onnx = weights.rename(tmp / "model.onnx")
    spec.rename(tmp / "model.json")
    return Built(onnx)


def pt_named_safetensors(tmp: Path) -> Built:
    weights, spec = plain_lm_files(tmp, ".pt")
    disguised = weights.rename(tmp / "weights.safetensors")
    return Built(disguised, [(disguised.name, disguised.read_bytes()), (spec.name, spec.read_bytes())])


def non_utf8(tmp: Path) -> Built:
    folder = good_folder(tmp / "latin1")
    (folder / "vocab.json").write_bytes(json.dumps({"kind": "char", "tokens": ["<pad>", "<unk>", "é"]},
                                                   ensure_ascii=False).encode("latin-1"))
    return Built(folder)


def not_json(tmp: Path) -> Built:
    folder = good_folder(tmp / "garbled")
    (folder / "config.json").write_text('{"model_type": "recurrent_lm", "cell": ')
    return zipped(folder, tmp)


def bad_prefixes(tmp: Path) -> Built:
    weights, spec = plain_lm_files(tmp)
    edit_json(spec, prefixes={"embed": ["encoder"]})
    return Built(weights, [(weights.name, weights.read_bytes()), (spec.name, spec.read_bytes())])


def control_char_name(tmp: Path) -> Built:
    path = tmp / "\x1b[31mred\x07.json"  # on disk too: the command line must not echo the escape
    path.write_text("{}")
    return Built(path, [(path.name, b"{}")])


def ragged_vectors(tmp: Path) -> Built:
    path = tmp / "ragged.txt"
    path.write_bytes(b"3 3\nking 0.1 0.2 0.3\nqueen 0.1 0.2\nman 0.3 0.2 0.1\n")
    return Built(path, [(path.name, path.read_bytes())])


def pickle_as_vectors(tmp: Path) -> Built:
    marker = tmp / "pwned"
    path = tmp / "vectors.bin"
    path.write_bytes(pickle.dumps(_Evil(marker), protocol=4))
    return Built(path, [(path.name, path.read_bytes())], marker)


def vectors_header_lies(tmp: Path) -> Built:
    """A binary header announcing 5,000,000 x 10,000 floats (186 GiB) over a few bytes."""
    path = tmp / "huge.bin"
    path.write_bytes(b"5000000 10000\nking " + struct.pack("<4f", 1.0, 2.0, 0.5, 0.25))
    return Built(path, [(path.name, path.read_bytes())])


def non_utf8_vectors(tmp: Path) -> Built:
    path = tmp / "latin1.vec"
    path.write_bytes("2 2\ncafé 0.1 0.2\nthé 0.3 0.4\n".encode("latin-1"))
    return Built(path, [(path.name, path.read_bytes())])


def oversize(tmp: Path) -> Built:
    """One byte over the 200 MiB upload limit (a sparse file: no disk or memory is used)."""
    from seqviz.uploads import MAX_UPLOAD_BYTES

    path = tmp / "big.zip"
    with open(path, "wb") as f:
        f.truncate(MAX_UPLOAD_BYTES + 1)
    return Built(path, None)  # the app's uploader gets the bytes from the test (see test_bad_files)


def outside_allowed(tmp: Path) -> Built:
    return Built(good_folder(tmp / "elsewhere"))  # tmp is outside the allowed folders in these tests


CASES: list[Bad] = [
    Bad("pickled-code-pt", "upload", "a .pt whose unpickling would run `touch pwned` (+ its spec JSON)",
        "refused: not a plain tensor file", pickled_code),
    Bad("zip-slip", "upload", "a zipped checkpoint with a member ../../escape.json",
        "points outside the folder ('..'); refused", zip_slip),
    Bad("zip-bomb", "upload", "a 64 KiB zip that expands to 64 MiB (1000x)", "looks like a zip bomb", zip_bomb),
    Bad("zip-symlink", "upload", "a zip whose config.json is a symbolic link to /etc/passwd",
        "is a symbolic link; refused", zip_symlink),
    Bad("truncated-safetensors", "folder", "model.safetensors cut in half", "not a valid safetensors file",
        truncated_safetensors),
    Bad("header-lies-about-shape", "folder", "a safetensors header declaring [64, 64] float32 over 8 bytes",
        "invalid shape, data type, or offset", lying_header),
    Bad("weights-unlike-config", "upload", "config.json says d_hidden=16, the weights have 12",
        "tensor layers.0.weight_ih_l0 has shape (36, 8), the config implies (48, 8)", weights_unlike_config),
    Bad("memory-bomb-config", "folder", "config.json claims an 8 x 8192-unit LSTM (17 GB) over 30 KB of weights",
        "weights do not match the config", memory_bomb_config),
    Bad("unknown-cell", "upload", "config.json names the cell 'mamba'",
        "invalid config: cell must be one of rnn, gru, lstm", unknown_cell),
    Bad("vocab-wrong-size", "folder", "vocab.json one token short of config.json's vocab_size",
        "vocabulary has 75 tokens but the config says vocab_size=76", vocab_wrong_size),
    Bad("nan-weights", "folder", "a NaN in head.bias", "tensor head.bias contains NaN or Inf values (1 of 76)",
        nan_weights),
    Bad("inf-weights", "upload", "an Inf in layers.1.weight_hh_l0",
        "tensor layers.1.weight_hh_l0 contains NaN or Inf values", inf_weights),
    Bad("zero-byte-file", "upload", "a 0-byte model.safetensors among the folder's files", "file is empty (0 bytes)",
        zero_bytes),
    Bad("wrong-extension", "folder", "a state dict named model.onnx beside its spec",
        "unsupported file type .onnx", wrong_extension),
    Bad("pt-named-safetensors", "upload", "a torch .pt renamed weights.safetensors (+ spec)",
        "not a valid safetensors file", pt_named_safetensors),
    Bad("non-utf8-vocab", "folder", "vocab.json written in Latin-1", "not UTF-8 text", non_utf8),
    Bad("config-not-json", "upload", "config.json cut off mid-object", "not valid JSON", not_json),
    Bad("spec-bad-prefixes", "upload", "a spec whose 'prefixes' maps embed to a list",
        "'prefixes' must map embed/rnn/head to module names", bad_prefixes),
    Bad("control-chars-in-name", "upload", "an uploaded file named ESC[31mred BEL.json",
        "file name '\\x1b[31mred\\x07.json' is not allowed", control_char_name,
        cli_message="\\x1b[31mred\\x07.json: this is a JSON file; give the checkpoint folder"),
    Bad("upload-over-limit", "upload", "an upload of 200 MiB + 1 byte", "209,715,201 bytes, over the 200 MiB",
        oversize),
    Bad("path-outside-allowed", "folder", "a checkpoint folder outside SEQVIZ_ALLOWED_DIRS",
        "is outside the folders this app may open", outside_allowed),
    Bad("ragged-vector-rows", "vectors", "a word2vec text file whose 2nd row has 2 of 3 numbers",
        "line 3 has 2 numbers, expected 3 like the rows before it (ragged rows)", ragged_vectors),
    Bad("pickle-as-vectors", "vectors", "a pickle (that would run `touch pwned`) named vectors.bin",
        "refused: this looks like a Python pickle", pickle_as_vectors),
    Bad("vector-header-lies", "vectors", "a binary header announcing 5,000,000 x 10,000 floats over 16 bytes",
        "the file ends inside the vector of word 1", vectors_header_lies),
    Bad("non-utf8-vectors", "vectors", "a word2vec text file in Latin-1", "line 2 is not UTF-8 text (byte 4 of the line)",
        non_utf8_vectors),
]


def build(case: Bad, tmp: Path) -> Built:
    """Build ``case`` under tmp/allowed (SEQVIZ_ALLOWED_DIRS), except the one that must lie outside it."""
    where = tmp / ("outside" if case.name == "path-outside-allowed" else "allowed") / case.name
    where.mkdir(parents=True)
    return case.build(where)


# ------------------------------------------------------------------ the library's entry points, per route
def open_local(path, roots=()):
    """What the sidebar does with a typed path: the allowed-folder rule, then seqviz.load."""
    from seqviz.checkpoints import check_allowed
    from seqviz.registry import load

    return load(check_allowed(path, roots))


def open_upload(files: list[tuple[str, bytes]], dest: Path):
    from seqviz.registry import load
    from seqviz.uploads import extract_upload

    try:
        return load(extract_upload(files, dest))
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def open_vectors(name: str, data: bytes):
    from seqviz.word2vec.formats import load_vector_bytes

    return load_vector_bytes(data, name)


def open_case(case: Bad, built: Built, tmp: Path, roots=()):
    """Open ``built`` the way the app does for ``case.route`` (raises CheckpointError when refused)."""
    if case.route == "folder":
        return open_local(built.path, roots)
    if case.route == "vectors":
        name, data = built.files[0]
        return open_vectors(name, data)
    files = built.files if built.files is not None else [(built.path.name, oversize_bytes())]
    return open_upload(files, tmp / "extracted")


def oversize_bytes() -> bytes:
    from seqviz.uploads import MAX_UPLOAD_BYTES

    return bytes(MAX_UPLOAD_BYTES + 1)
