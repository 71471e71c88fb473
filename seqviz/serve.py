"""``seqviz app``: the dashboard served from any folder, as ``streamlit run app.py`` serves it in the repository.

It runs ``python -m streamlit run <dashboard>/app.py`` (``seqviz.installed.dashboard()``: the wheel's copy inside
the package, or the repository's), whose ``.streamlit/config.toml`` beside ``app.py`` Streamlit reads as the
app's own config; options it does not know (``--server.port 8502`` ...) go to Streamlit, after that config.
The library itself never imports Streamlit: the app runs in its own process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser("app", help="serve the dashboard (Streamlit) on the shipped checkpoints and your own; "
                       "Streamlit's options (--server.port 8502 ...) pass through",
                       description="Serve the seqviz dashboard from any folder: streamlit run on the package's "
                                   "app.py. Options seqviz does not know go to streamlit run "
                                   "(e.g. --server.port 8502 --server.address 0.0.0.0).")
    p.add_argument("--checkpoints", nargs="+", metavar="DIR", default=[],
                   help="folders of checkpoint folders the model pickers list first (the shipped ones follow)")
    p.set_defaults(run=run, takes_extra=True)


def command(args, extra: list[str]) -> tuple[list[str], dict]:
    """The ``streamlit run`` command line and its environment, or SystemExit with one line."""
    from seqviz.installed import checkpoints, dashboard

    folder = dashboard()
    if folder is None:
        raise SystemExit("error: this seqviz has no dashboard (no app.py in the package or beside it); "
                         "install seqviz from its wheel or repository")
    env = dict(os.environ)
    roots = []
    for d in args.checkpoints:
        p = Path(d).expanduser().resolve()
        if not p.is_dir():
            raise SystemExit(f"error: --checkpoints {d}: no such folder here")
        roots.append(str(p))
    if roots or "SEQVIZ_CHECKPOINTS" not in env:
        shipped = checkpoints()
        env["SEQVIZ_CHECKPOINTS"] = os.pathsep.join(roots + ([str(shipped)] if shipped else []))
    return [sys.executable, "-m", "streamlit", "run", str(folder / "app.py"), *extra], env


def run(args, extra: list[str] = ()) -> int:
    cmd, env = command(args, list(extra))
    if os.name == "posix":  # Streamlit takes this process's place: Ctrl-C and a service manager's SIGTERM reach it
        os.execve(cmd[0], cmd, env)
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:  # Ctrl-C reached both: Streamlit stops itself
        return 130
