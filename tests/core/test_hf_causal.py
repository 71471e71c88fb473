"""What every transformers causal LM shares (seqviz.hf_causal): a tied output head is found whatever the family
calls it, and a head that is neither stored nor tied is refused."""

import pytest
import torch

import seqviz
from seqviz.files import CheckpointError


def _save(tmp_path, name, config, model_class):
    torch.manual_seed(0)
    model = model_class(config).eval()
    folder = tmp_path / name
    model.save_pretrained(folder, safe_serialization=True)
    return model, folder


@pytest.mark.parametrize("family", ["rwkv", "mamba"])
def test_a_tied_head_opens_whatever_its_name_and_the_logits_are_the_models(family, tmp_path):
    from safetensors import safe_open

    if family == "rwkv":
        from transformers import RwkvConfig as Config
        from transformers import RwkvForCausalLM as LM

        config = Config(vocab_size=40, hidden_size=16, num_hidden_layers=2, attention_hidden_size=16,
                        intermediate_size=32, context_length=64, tie_word_embeddings=True)
    else:
        from transformers import MambaConfig as Config
        from transformers import MambaForCausalLM as LM

        config = Config(vocab_size=40, hidden_size=16, num_hidden_layers=2, state_size=4, tie_word_embeddings=True)
    reference, folder = _save(tmp_path, family, config, LM)
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        head = "head.weight" if family == "rwkv" else "lm_head.weight"
        assert head not in f.keys()  # transformers stores the shared tensor once, under the embedding's name
    lm = seqviz.load(folder)
    ids = torch.randint(0, 40, (1, 45))
    with torch.no_grad():
        expected = reference(ids).logits
    got = lm.trace(ids, names=["logits"])["logits"]
    assert torch.allclose(got, expected, atol=1e-4 * float(expected.abs().max()))


def test_an_untied_head_that_is_not_stored_is_refused(tmp_path):
    from safetensors.torch import load_file, save_file
    from transformers import RwkvConfig, RwkvForCausalLM

    config = RwkvConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, attention_hidden_size=16,
                        intermediate_size=32, context_length=64, tie_word_embeddings=False)
    _, folder = _save(tmp_path, "untied", config, RwkvForCausalLM)
    weights = load_file(str(folder / "model.safetensors"))
    save_file({k: v for k, v in weights.items() if k != "head.weight"}, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match="1 missing.*head.weight"):
        seqviz.load(folder)
