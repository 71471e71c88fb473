"""Several edited runs as one batch (``seqviz.models.edit_batch``): each row equals its own edited trace."""

import pytest
import torch

from seqviz.models.edit_batch import Rows, edited_traces
from seqviz.models.edits import SetUnits, ablate, clamp, patch
from tests.core.test_edits import CELLS, IDS, held, tiny

NAMES = ("tokens", "mask", "logits", "loss", "loss_mask", "layers.0.h", "layers.1.h")


def edit_sets(cell, other):
    s = held(cell)
    return [[ablate(f"layers.0.{s}", [1, 2])],  # every step of the lowest layer
            [ablate(f"layers.1.{s}", [3], span=(5, 9))],  # the layer below read from the plain trace, from step 5
            [clamp("layers.0.h", [0], 0.7, span=(4, 12)), ablate(f"layers.1.{s}", [4], span=(6, 7))],
            [],  # no edit: the plain run
            [patch(f"layers.1.{s}", other, [2, 5], span=(8, 9), offset=1)]]


@pytest.mark.parametrize("cell", CELLS)
def test_each_row_of_the_batch_is_its_own_edited_trace(cell):
    model = tiny(cell)
    ids = torch.cat([IDS, IDS.flip(1)])  # two texts: each set's block holds both
    plain, other = model.trace(ids), model.trace(IDS[:, 3:].repeat(2, 1))
    sets = edit_sets(cell, other)
    for group in (sets, sets[1:2], sets[3:4], sets[4:]):  # all at once, one from a later step, none, a patch
        for edits, got in zip(group, edited_traces(model, plain, group, NAMES), strict=True):
            want = model.trace(ids, edits=edits)
            for name in NAMES:
                torch.testing.assert_close(got[name], want[name], atol=1e-5, rtol=0, msg=f"{cell} {name} {edits}")


def test_a_padded_batch_is_edited_row_by_row():
    model = tiny("lstm")
    texts = [IDS[0].tolist(), IDS[0, :13].tolist()]
    plain = model.trace(texts)
    sets = [[ablate("layers.0.c", [3])], [ablate("layers.1.h", [1, 6], span=(2, 20))]]
    for edits, got in zip(sets, edited_traces(model, plain, sets), strict=True):
        want = model.trace(texts, edits=edits)
        torch.testing.assert_close(got["loss"], want["loss"], atol=1e-5, rtol=0)
        torch.testing.assert_close(got["logits"], want["logits"], atol=1e-5, rtol=0)


def test_rows_edits_the_blocks_at_once_as_one_by_one():
    state = torch.randn(6, 11)
    fns = [[SetUnits([1], torch.tensor([0.5]), (2, 4))], [], [SetUnits([3, 9], torch.zeros(2), (2, 4))]]
    at_once = Rows(fns, 2, "c")
    assert at_once.at_once
    mixed = Rows(fns + [[SetUnits([0], torch.ones(5, 1), (2, 4))]], 2, "c")  # a patch: each block on its own
    assert not mixed.at_once
    for t in range(6):
        want = torch.cat([f[0](state[2 * r:2 * r + 2], t) if f else state[2 * r:2 * r + 2] for r, f in enumerate(fns)])
        assert torch.equal(at_once(state, t), want) and torch.equal(mixed(torch.cat([state, state[:2]]), t)[:6], want)
    assert at_once(state, 0) is state  # outside every span nothing is copied


def test_bad_batches_are_refused():
    model = tiny("gru")
    plain = model.trace(IDS)
    with pytest.raises(ValueError, match="needs edit sets and names of"):
        edited_traces(model, plain, [])
    with pytest.raises(ValueError, match="needs edit sets and names of"):
        edited_traces(model, plain, [[ablate("layers.0.h", [1])]], ["layers.0.gates.update"])
    with pytest.raises(ValueError, match="unit 11 is out of range: the state has 11 units"):
        edited_traces(model, plain, [[ablate("layers.0.h", [11])]])
    with pytest.raises(ValueError, match="no state 'layers.0.c' to edit"):
        edited_traces(model, plain, [[ablate("layers.0.c", [1])]])
