"""The wheel serves the dashboard and its shipped checkpoints from any folder (setup.py's build step,
seqviz/installed.py, seqviz/serve.py): built from this tree, installed into a new virtual environment, used
from a folder that is not the repository, offline (SEQVIZ_HUB=0). About a minute: in the slow tier."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port

pytestmark = pytest.mark.slow


def tree_copy(dest: Path) -> Path:
    """The files git would commit (tracked, or new and not ignored): no build/, caches or local checkpoints."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A new virtual environment (system site-packages: torch & co. are not installed again) holding the wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tree_copy(tmp / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp / "dist"), str(src)], check=True)
    wheel = next((tmp / "dist").glob("seqviz-*.whl"))
    print(f"wheel: {wheel.name}, {wheel.stat().st_size / 2**20:.1f} MiB")
    env = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env)], check=True)
    subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True)
    return env


@pytest.fixture
def elsewhere(tmp_path) -> dict:
    """Keyword arguments for subprocess: a folder that is not the repository, offline, no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SEQVIZ_CHECKPOINTS")}
    return {"cwd": tmp_path, "env": {**env, "SEQVIZ_HUB": "0"}, "capture_output": True, "text": True,
            "timeout": 300}


def test_the_installed_package_inspects_and_loads_a_shipped_checkpoint_by_name(venv, elsewhere):
    done = subprocess.run([str(venv / "bin" / "seqviz"), "inspect", "shakespeare-char-lstm"], **elsewhere)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["model_type"] == "recurrent_lm"
    code = ("import seqviz; m = seqviz.load('zh-en-attention-gru'); "
            "print(seqviz.__file__, type(m).__name__, m.attn is not None)")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code], **elsewhere)
    assert done.returncode == 0, done.stderr
    where, kind, attention = done.stdout.split()
    assert Path(where).is_relative_to(venv) and kind == "Seq2Seq" and attention == "True"
    # a relative path that is no folder here says so before anything about the Hub
    done = subprocess.run([str(venv / "bin" / "seqviz"), "inspect", "checkpoints/no-such-model"], **elsewhere)
    assert done.returncode == 2 and "no such file or folder here; as a Hugging Face Hub id" in done.stderr


def test_seqviz_app_serves_the_dashboard_from_any_folder(venv, elsewhere):
    port = free_port()
    elsewhere.pop("capture_output"), elsewhere.pop("text"), elsewhere.pop("timeout")
    server = subprocess.Popen([str(venv / "bin" / "seqviz"), "app", "--server.port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **elsewhere)
    try:
        deadline, health = time.monotonic() + 120, None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as r:
                    health = r.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert health == "ok", f"no answer on port {port}; exit {server.poll()}"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
    finally:
        server.terminate()
        out = server.communicate(timeout=30)[0]
    assert "ScriptRunContext" not in out and "Error" not in out, out
