"""A shared server never shows its own files (issue 20): secrets in the home and working folders stay there.

A fake home and working folder hold secret-bearing files; every loader, ``python -m seqviz inspect``
and the app's typed-path rule are tried on each. Every attempt is refused or fails, and no output
(message, exit text) contains any secret. Hub downloads are refused before a byte moves when the
repository is over the budget.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import seqviz
from seqviz.checkpoints import CheckpointError, check_allowed, read_json
from seqviz.registry import detect

ROOT = Path(__file__).resolve().parents[2]
SECRETS = ("hunter2SECRET", "sk-SECRET-TOML", "hf_SECRETTOKEN", "SECRET-MODEL-TYPE", "SECRETVALUE", "AKIASECRET")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A home folder, a working folder and a checkpoint root with links into the home folder."""
    base = tmp_path_factory.mktemp("server")
    home, work, roots = base / "home", base / "work", base / "checkpoints"
    for folder in (home / ".streamlit", home / ".cache" / "huggingface", work / ".streamlit", work / "ck", roots):
        folder.mkdir(parents=True)
    files = {
        home / ".netrc": "machine example.com login alice password hunter2SECRET\n",
        home / ".streamlit" / "secrets.toml": 'api_key = "sk-SECRET-TOML"\n',
        home / ".cache" / "huggingface" / "token": "hf_SECRETTOKEN\n",
        home / "notes.txt": "alice hunter2SECRET 0.5\n",
        home / "aws.vec": "1 2\nAKIASECRET 0.1 0.2\n",  # a valid vector file: only refused by where it is
        work / ".streamlit" / "secrets.toml": 'api_key = "sk-SECRET-TOML"\n',
        work / "notes.txt": "alice hunter2SECRET 0.5\nbob SECRETVALUE 0.25\n",
        work / "ck" / "config.json": json.dumps({"model_type": "SECRET-MODEL-TYPE", "d_hidden": "SECRETVALUE"}),
        work / "config.json": json.dumps({"model_type": "recurrent_lm", "cell": "SECRETVALUE",
                                          "tokenizer": "hunter2SECRET"}),
        work / "vocab.json": json.dumps(["hunter2SECRET", "hunter2SECRET"]),
        work / "model.safetensors": "hunter2SECRET is not a tensor file",
        work / "weights.pt": "hunter2SECRET",
        work / "secrets.bin": "hunter2SECRET AKIASECRET",
    }
    for path, text in files.items():
        path.write_text(text)
    (roots / "leak").symlink_to(home, target_is_directory=True)
    (roots / "leak-netrc.txt").symlink_to(home / ".netrc")
    (roots / "leak-work").symlink_to(work, target_is_directory=True)
    targets = [p for p in files] + [roots / "leak" / ".netrc", roots / "leak-netrc.txt", roots / "leak" / "notes.txt",
                                    roots / "leak-work" / "notes.txt", work / "ck", work, home, home / ".streamlit"]
    return SimpleNamespace(home=home, work=work, roots=roots, targets=targets)


def no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} leaked in: {text}"


def attempts(path: Path):
    """Every library route to a file: the loaders, the detector, and the JSON reader."""
    from seqviz.word2vec.formats import load_vectors

    yield lambda: seqviz.load(path)
    yield lambda: seqviz.load(path, limit=10)
    yield lambda: load_vectors(path)
    yield lambda: detect(path)
    yield lambda: read_json(path)


def test_every_loader_fails_without_quoting_a_secret(server):
    loaded = []
    for path in server.targets:
        for attempt in attempts(path):
            try:
                result = attempt()
            except (CheckpointError, ValueError, OSError) as e:
                no_secret(str(e))
            else:
                loaded.append((path.name, type(result).__name__))
    # Only aws.vec is a valid vector file (through seqviz.load, with and without a limit, and load_vectors);
    # the app never reaches it because it is in the home folder (next test).
    assert {name for name, kind in loaded if kind == "WordVectors"} <= {"aws.vec"}


def test_the_app_route_refuses_the_home_folder_hidden_files_and_links_out_of_the_roots(server, monkeypatch):
    monkeypatch.delenv("SEQVIZ_ALLOWED_DIRS", raising=False)
    monkeypatch.setenv("HOME", str(server.home))
    monkeypatch.chdir(server.work)
    for path in server.targets:
        try:
            model = seqviz.load(check_allowed(path, [server.roots]))
        except (CheckpointError, ValueError, OSError) as e:
            no_secret(str(e))
        else:
            pytest.fail(f"{path} opened through the app's typed-path rule: {type(model).__name__}")
    with pytest.raises(CheckpointError, match="outside the folders"):
        check_allowed(server.home / "aws.vec", [server.roots])
    with pytest.raises(CheckpointError, match="hidden file or folder"):
        check_allowed(server.work / ".streamlit" / "secrets.toml", [server.roots])
    monkeypatch.setenv("SEQVIZ_LOCAL_PATHS", "0")
    with pytest.raises(CheckpointError, match="typed paths are switched off"):
        check_allowed(ROOT / "checkpoints" / "shakespeare-char-gru", [ROOT / "checkpoints"])


def test_inspect_never_prints_a_secret(server):
    env = {**os.environ, "HOME": str(server.home), "PYTHONPATH": str(ROOT)}
    env.pop("SEQVIZ_ALLOWED_DIRS", None)
    paths = [p for p in server.targets if p.name != "aws.vec"]
    script = ("import sys, contextlib, io\nfrom seqviz.cli import main\ncodes = []\n"
              "for p in sys.argv[1:]:\n"
              "    out, err = io.StringIO(), io.StringIO()\n"
              "    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
              "        codes.append(main(['inspect', p]))\n"
              "    print(repr((p, codes[-1], out.getvalue(), err.getvalue())))\n")
    done = subprocess.run([sys.executable, "-c", script, *map(str, paths)], capture_output=True, text=True,
                          cwd=server.work, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    no_secret(done.stdout + done.stderr)
    rows = [eval(line) for line in done.stdout.splitlines()]  # noqa: S307 - our own repr() lines
    assert len(rows) == len(paths) and all(code == 2 for _, code, _, _ in rows)


# ------------------------------------------------------------------ the Hub, with a budget
class FakeApi:
    def __init__(self, sizes):
        self.sizes = sizes

    def model_info(self, repo_id, files_metadata=False):
        assert files_metadata, "sizes must be asked for"
        return SimpleNamespace(siblings=[SimpleNamespace(rfilename=n, size=s) for n, s in self.sizes.items()])


def test_a_repository_over_the_budget_is_refused_before_any_download(monkeypatch):
    import huggingface_hub

    import seqviz.hub as hub

    downloads = []
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: FakeApi({
        "config.json": 2_000, "model.safetensors": 3 * 2**30, "pytorch_model.bin": 3 * 2**30, "tokenizer.json": 9_000}))
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda *a, **k: downloads.append(a))
    monkeypatch.delenv("SEQVIZ_HUB_MAX_BYTES", raising=False)
    with pytest.raises(CheckpointError, match=r"its files take 3,072 MiB, over this server's 200 MiB download limit; "
                                              "refused before downloading"):
        seqviz.load("someone/huge-model")
    assert downloads == []
    # Within the budget (the pickled .bin is never counted nor fetched): downloaded file by file, with progress.
    monkeypatch.setenv("SEQVIZ_HUB_MAX_BYTES", str(4 * 2**30))
    progress = []
    monkeypatch.setattr(huggingface_hub, "hf_hub_download",
                        lambda repo, name: downloads.append(name) or str(Path("/tmp/hub-snap") / name))
    folder = hub.download("someone/huge-model", progress=lambda done, total: progress.append((done, total)))
    assert folder == Path("/tmp/hub-snap") and downloads == ["config.json", "model.safetensors", "tokenizer.json"]
    total = 2_000 + 3 * 2**30 + 9_000
    assert progress[-1] == (total, total) and len(progress) == 3


def test_the_hub_can_be_switched_off_and_one_download_runs_at_a_time(monkeypatch):
    import seqviz.hub as hub

    monkeypatch.setenv("SEQVIZ_HUB", "0")
    with pytest.raises(CheckpointError, match="switched off"):
        seqviz.load("someone/model")
    monkeypatch.setenv("SEQVIZ_HUB", "1")
    assert hub._LOCK.acquire(blocking=False)
    try:
        with pytest.raises(CheckpointError, match="another Hub download is running"):
            hub.download("someone/model")
    finally:
        hub._LOCK.release()
