"""Where the dashboard and the shipped checkpoints are: in the repository this package sits in, or, installed from
a wheel, inside the package (``seqviz/dashboard/``, put there by setup.py's build step).

``dashboard()`` is the folder holding ``app.py``, ``pages/``, ``appkit/``, ``.streamlit/config.toml`` and
``checkpoints/``; ``shipped(name)`` the checkpoint folder a shipped name (``shakespeare-char-lstm``, or
``checkpoints/shakespeare-char-lstm`` as the README writes it) stands for, wherever the command is typed.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
INSTALLED = PACKAGE / "dashboard"  # a wheel's copy (setup.py); absent in the repository
REPOSITORY = PACKAGE.parent  # a clone, or an editable install of one


def dashboard() -> Path | None:
    """The folder whose ``app.py`` ``seqviz app`` serves: the wheel's copy, else the repository's; None if neither."""
    for folder in (INSTALLED, REPOSITORY):
        if (folder / "app.py").is_file() and (folder / "appkit").is_dir():
            return folder
    return None


def checkpoints() -> Path | None:
    """The shipped checkpoints' folder (beside the dashboard's ``app.py``)."""
    folder = dashboard()
    return folder / "checkpoints" if folder is not None and (folder / "checkpoints").is_dir() else None


def names() -> list[str]:
    """The shipped checkpoints' names."""
    root = checkpoints()
    return sorted(p.name for p in root.iterdir() if (p / "config.json").is_file()) if root else []


def shipped(text) -> Path | None:
    """The shipped checkpoint ``text`` names (``NAME`` or ``checkpoints/NAME``), if it names one; else None."""
    parts = Path(str(text).strip()).parts
    if not parts or len(parts) > 2 or (len(parts) == 2 and parts[0] != "checkpoints"):
        return None
    root = checkpoints()
    folder = None if root is None else root / parts[-1]
    return folder if folder is not None and parts[-1] not in (".", "..") and (folder / "config.json").is_file() else None


def local(path) -> Path:
    """``path`` itself when it exists here, else the shipped checkpoint it names, else ``path`` (to be refused)."""
    p = Path(str(path)).expanduser()
    return p if p.exists() else (shipped(path) or p)
