"""seqviz.views.memo: one computation per (model, key), shared by the threads that ask for it at once."""

from __future__ import annotations

import threading
import time

import pytest

from seqviz.views import memo


class Model:  # any object a weak reference can key
    pass


def test_callers_at_once_share_one_computation():
    model, calls, started = Model(), [], threading.Event()

    def slow():
        calls.append(1)
        started.set()
        time.sleep(0.2)  # the others arrive while it runs
        return object()

    results = []
    first = threading.Thread(target=lambda: results.append(memo(model, ("k",), slow)))
    first.start()
    started.wait(5)
    others = [threading.Thread(target=lambda: results.append(memo(model, ("k",), slow))) for _ in range(4)]
    for t in others:
        t.start()
    for t in [first, *others]:
        t.join(5)
    assert len(calls) == 1 and len(results) == 5 and all(r is results[0] for r in results)
    assert memo(model, ("other",), lambda: 7) == 7  # another key computes its own


def test_a_failed_computation_is_not_kept_and_a_waiter_computes_it_again():
    model, started, release = Model(), threading.Event(), threading.Event()

    def failing():
        started.set()
        release.wait(5)
        raise RuntimeError("out of memory")

    errors = []
    failing_thread = threading.Thread(target=lambda: errors.append(pytest.raises(RuntimeError, memo, model, ("k",),
                                                                                 failing)))
    failing_thread.start()
    started.wait(5)
    got = []
    waiter = threading.Thread(target=lambda: got.append(memo(model, ("k",), lambda: "computed again")))
    waiter.start()
    time.sleep(0.05)
    assert not got  # it waits for the running one
    release.set()
    failing_thread.join(5)
    waiter.join(5)
    assert got == ["computed again"] and errors
