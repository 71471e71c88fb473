"""One entry point for any file or folder a user points at: dispatch by what is there."""

from __future__ import annotations

from seqviz.checkpoints import CheckpointError, load, load_state_dict_checkpoint, read_json, resolve
from seqviz.hf_seq2seq import is_hf_seq2seq, load_hf_seq2seq
from seqviz.seq2seq.checkpoints import load_seq2seq


def _load_word2vec(folder):
    from seqviz.word2vec.formats import load_checkpoint  # lazy: word vectors need no torch models

    return load_checkpoint(folder)


# model_type -> loader(folder); other model families add themselves here.
LOADERS = {"recurrent_lm": load, "seq2seq": load_seq2seq, "word2vec": _load_word2vec}


SNAPSHOT_TYPES = ("recurrent_lm", "seq2seq")  # model types whose folders keep snapshots/step-<n>


def load_any(path_or_repo_id, snapshot: int | None = None):
    """A checkpoint folder of any registered model_type, or a bare state dict + spec JSON.

    ``snapshot``: the weights saved at that training step (``snapshots/step-<n>.safetensors``).

    A bare ``.safetensors``/``.pt`` needs ``spec.json`` (or ``<name>.json``) beside it. A
    transformers encoder-decoder folder (model_type marian, t5, bart ...) loads as ``HFSeq2Seq``.
    """
    path = resolve(path_or_repo_id)
    if path.is_dir():
        config = read_json(path / "config.json")
        model_type = config.get("model_type", "recurrent_lm")
        if not isinstance(model_type, str):
            raise CheckpointError(path / "config.json", f"model_type must be a string, got {model_type!r}")
        loader = LOADERS.get(model_type)
        if loader is None and is_hf_seq2seq(config):
            return load_hf_seq2seq(path_or_repo_id)  # a Hub id: re-resolved with its tokenizer files
        if loader is None:
            raise CheckpointError(path / "config.json", f"unknown model_type {model_type!r} "
                                  f"(known: {', '.join(sorted(LOADERS))})")
        if snapshot is None:
            return loader(path)
        if model_type not in SNAPSHOT_TYPES:
            raise CheckpointError(path, f"a {model_type} checkpoint keeps no training snapshots")
        return loader(path, snapshot=snapshot)
    if snapshot is not None:
        raise CheckpointError(path, "only a checkpoint folder keeps training snapshots")
    for spec in (path.with_suffix(".json"), path.parent / "spec.json"):
        if spec.is_file() and spec != path:
            return load_state_dict_checkpoint(path, spec)
    if path.suffix.lower() in (".safetensors", ".pt", ".pth", ".bin"):
        raise CheckpointError(path, "a bare weight file needs a spec JSON beside it "
                              f"({path.with_suffix('.json').name} or spec.json) naming cell and vocab")
    raise CheckpointError(path, "not a checkpoint folder or a weight file")
