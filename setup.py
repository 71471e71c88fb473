"""The wheel's one build step (everything else is in pyproject.toml): the dashboard (app.py, pages/, appkit/,
.streamlit/config.toml) and the shipped checkpoints/ are copied inside the package as seqviz/dashboard/, where
``seqviz app`` serves them and ``seqviz.load("shakespeare-char-lstm")`` finds them, from any folder (see
seqviz/installed.py). In the repository they stay where ``streamlit run app.py`` reads them."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DASHBOARD = ("app.py", "pages", "appkit", ".streamlit/config.toml", "checkpoints")
LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.pyc", "train_state.json", "optimizer.safetensors", "secrets.toml")


class BuildWithDashboard(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install serves the repository itself
            return
        dest = Path(self.build_lib) / "seqviz" / "dashboard"
        for name in DASHBOARD:
            src, out = ROOT / name, dest / name
            if src.is_dir():
                shutil.copytree(src, out, ignore=LEFT_OUT, dirs_exist_ok=True)
            else:
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, out)


setup(cmdclass={"build_py": BuildWithDashboard})
