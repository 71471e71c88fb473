"""The Community Cloud footprint: repository size, .streamlit/config.toml against the code's limits.

The server's memory after every page is checked in the browser pass (tests/browser/test_browser.py,
``test_server_memory_after_every_page``), which already runs a real server over every page.
"""

from __future__ import annotations

import os
import subprocess
import tomllib

from tests.conftest import ROOT

MAX_REPO_MB = 100  # a Community Cloud deploy clones the repository; keep it quick
MAX_FILE_MB = 25  # GitHub warns from 50 MB and refuses 100 MB; no single checkpoint needs that


def tracked_files() -> list[str]:
    """Files git tracks (what a clone gets), or every file outside .git and build folders without git."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        return [f for f in out.decode().split("\0") if f and (ROOT / f).is_file()]
    except (OSError, subprocess.CalledProcessError):  # an exported copy without git
        skip = {".git", "artifacts", "__pycache__", ".hypothesis", ".pytest_cache", ".venv", "venv"}
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]


def test_repository_is_small_enough_to_deploy():
    sizes = {f: (ROOT / f).stat().st_size for f in tracked_files()}
    total = sum(sizes.values()) / 2**20
    biggest = max(sizes, key=sizes.get)
    print(f"repository: {len(sizes)} files, {total:.1f} MB; largest {biggest} ({sizes[biggest] / 2**20:.1f} MB)")
    assert any(f.startswith("checkpoints/") for f in sizes) and "app.py" in sizes
    assert total <= MAX_REPO_MB, f"{total:.0f} MB of tracked files (limit {MAX_REPO_MB} MB)"
    assert sizes[biggest] <= MAX_FILE_MB * 2**20, f"{biggest} is {sizes[biggest] / 2**20:.0f} MB"


def test_streamlit_config_matches_the_code():
    from seqviz.uploads import MAX_UPLOAD_BYTES
    from seqviz.word2vec.formats import MAX_UPLOAD_BYTES as MAX_VECTOR_UPLOAD

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    server = config["server"]
    # Streamlit refuses an upload over maxUploadSize (MB) before seqviz sees it; seqviz's own limits match.
    assert server["maxUploadSize"] * 2**20 == MAX_UPLOAD_BYTES == MAX_VECTOR_UPLOAD
    assert server["headless"] is True and server["runOnSave"] is False
    assert server["fileWatcherType"] == "none"  # no watcher threads on the Cloud's small machine
    assert server.get("enableXsrfProtection", True) is True
    assert server["maxCacheDataSize"].endswith("mb") and int(server["maxCacheDataSize"][:-2]) <= 512
    assert config["browser"]["gatherUsageStats"] is False


def test_streamlit_reads_the_config():
    """The file parses as Streamlit's own options (a typo'd option name is only a warning there)."""
    from streamlit import config

    known = set(config._config_options_template)
    data = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    names = {f"{section}.{key}" for section, options in data.items() for key in options}
    assert names <= known, f"unknown Streamlit options: {sorted(names - known)}"


def test_freed_memory_goes_back_to_the_system():
    """release_freed_memory (seqviz/background.py, run by app.py after every run): free heap pages go back, RSS drops."""
    import numpy as np

    from seqviz.background import _libc, release_freed_memory
    from tests.browser.driver import rss_mb

    if _libc() is None:
        assert release_freed_memory() is False  # not glibc: a no-op that says so
        return
    keep, drop = [], []
    for i in range(3000):  # 64 KB arrays: from malloc's heap (below its mmap threshold), interleaved
        (keep if i % 2 else drop).append(np.ones(8192))
    del drop  # ~96 MB of holes between the kept arrays: glibc keeps them resident
    before = rss_mb(os.getpid())
    assert release_freed_memory() is True
    after = rss_mb(os.getpid())
    assert before - after > 40, f"RSS {before:.0f} -> {after:.0f} MB"
    assert len(keep) == 1500 and all(a[0] == 1.0 for a in keep[:10])
