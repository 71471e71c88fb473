"""``Pretrained``: the public ``from_pretrained`` / ``save_pretrained`` of every model family, written once.

The pattern of huggingface_hub's ``ModelHubMixin``: the mixin does what every family shares (a Hub
id or a path resolved, the refusals common to all, config.json and card.json written), and each
family overrides only its own part::

    @classmethod
    def _from_pretrained(cls, path, snapshot=None, **options)   the model at an existing ``path``
    def _save_pretrained(self, folder, **options)               write its own files, return the config

A model module imports this module (and ``seqviz.checkpoints``), never the other way round.
``seqviz.registry`` lists the families; ``seqviz.load`` opens any of them.
"""

from __future__ import annotations

import json
from pathlib import Path

from seqviz.files import CheckpointError
from seqviz.hub import resolve


class Pretrained:
    """Mixin of every model family; a family sets ``model_type`` and overrides the two private methods."""

    model_type: str  # the family's name in config.json, and what pages ask for
    config_class = None  # the config dataclass config.json round-trips through
    folder_only: str | None = None  # the refusal when ``path`` is a file (None: files are accepted)
    no_snapshots: str | None = None  # the refusal when a snapshot is asked for (None: the family keeps them)

    @classmethod
    def from_pretrained(cls, path, snapshot: int | None = None, **options):
        """The model at ``path`` (a folder or file, or a Hub repo id), on the CPU, in eval mode, no gradients.

        ``snapshot``: the weights saved at that training step. ``options`` are the family's own (see its
        ``_from_pretrained``). Every refusal is one ``CheckpointError`` naming the file and the problem.
        """
        if snapshot is not None and cls.no_snapshots:
            raise CheckpointError(path, cls.no_snapshots)
        path = resolve(path)  # CheckpointError "no such file or folder" when it is neither here nor an id
        if cls.folder_only and path.is_file():
            raise CheckpointError(path, cls.folder_only)
        return cls._from_pretrained(path, snapshot=snapshot, **options)

    def save_pretrained(self, folder, card: dict | None = None, **options) -> Path:
        """Write a checkpoint folder: the family's files, config.json and card.json; return the folder.

        ``card`` defaults to the model's own; its ``parameters`` defaults to the model's count.
        """
        from seqviz.checkpoints import write_config  # imports torch; loading a torch-free family does not

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        config = self._save_pretrained(folder, **options)
        write_config(folder, config)
        card = dict(card if card is not None else self.card)
        card.setdefault("parameters", self.num_parameters())
        (folder / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n")
        return folder

    @classmethod
    def _from_pretrained(cls, path: Path, snapshot: int | None = None, **options):
        raise NotImplementedError(f"{cls.__name__} cannot be loaded by seqviz")

    def _save_pretrained(self, folder: Path, **options):
        raise NotImplementedError(f"{type(self).__name__} is not saved by seqviz")


class quiet_loading:
    """transformers' "Loading weights" progress bar off while a local folder loads (quick: it would only clutter
    a page's log and a command's stderr), restored afterwards."""

    def __enter__(self):
        from transformers.utils import logging as hf_logging

        self.was = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()

    def __exit__(self, *exc):
        from transformers.utils import logging as hf_logging

        if self.was:
            hf_logging.enable_progress_bar()
