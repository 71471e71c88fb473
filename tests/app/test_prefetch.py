"""appkit.models.prefetch: a cache filled in the background, once, and never while a visitor's run is in progress."""

from __future__ import annotations

import threading
import time

import streamlit as st

from appkit import models as cm


def test_a_prefetched_call_is_a_cache_hit_for_the_page(monkeypatch):
    monkeypatch.setenv("SEQVIZ_PREFETCH", "1")
    calls = []
    done = threading.Event()

    @cm.cached(st.cache_data, max_entries=4)
    def square(x: int, power: int = 2) -> int:
        calls.append(x)
        done.set()
        return x ** power

    cm.prefetch(square, 7, 2)
    assert done.wait(10), "the background worker did not run the task"
    assert square(7, 2) == 49 and calls == [7]  # the page's own call: a hit, not a second computation


def test_prefetch_waits_for_the_run_in_progress_and_queues_a_task_once(monkeypatch):
    monkeypatch.setenv("SEQVIZ_PREFETCH", "1")
    calls = []
    done = threading.Event()

    def task(x):
        calls.append(x)
        done.set()

    cm.run_started()
    try:
        cm.prefetch(task, [1, 2])  # lists are frozen into the key
        cm.prefetch(task, [1, 2])
        time.sleep(0.3)
        assert calls == []  # a visitor's run goes first
    finally:
        cm.run_finished()
    assert done.wait(10)
    time.sleep(0.2)
    assert calls == [[1, 2]]


def test_prefetch_is_off_with_the_environment_switch(monkeypatch):
    monkeypatch.setenv("SEQVIZ_PREFETCH", "0")
    calls = []
    cm.prefetch(calls.append, "never")
    time.sleep(0.3)
    assert calls == []


def test_a_costly_guess_waits_until_the_visitor_pauses(monkeypatch):
    monkeypatch.setenv("SEQVIZ_PREFETCH", "1")
    monkeypatch.setattr(cm, "IDLE_AFTER", 0.5)
    order = []
    done = {"cheap": threading.Event(), "costly": threading.Event()}

    def task(name):
        order.append((name, time.monotonic() - t0))
        done[name].set()

    cm.run_started()
    cm.run_finished()  # a run just ended: the pause starts now
    t0 = time.monotonic()
    cm.prefetch_idle(task, "costly")
    cm.prefetch(task, "cheap")
    assert done["cheap"].wait(10) and done["costly"].wait(10)
    assert [name for name, _ in order] == ["cheap", "costly"]  # the cheap guess first, though queued second
    assert order[0][1] < 0.4 <= order[1][1]  # the costly one only after IDLE_AFTER without a run


def test_the_newest_runs_guesses_go_first_each_runs_in_its_own_order(monkeypatch):
    """Guesses queued during an earlier page's run wait behind those of the run after it (the page the
    visitor is on now), which keep the order that page queued them in; a full queue gives up the
    stalest guess for a newer run's, never one of the newest run's own."""
    monkeypatch.setenv("SEQVIZ_PREFETCH", "1")
    monkeypatch.setattr(cm, "PREFETCH_QUEUE", 5)  # the queue's own bound stays larger: _make_room keeps this one
    order, done = [], threading.Event()

    def task(name):
        order.append(name)
        if len(order) == 5:
            done.set()

    cm.run_started()  # an earlier page's run queues three guesses, the worker held off meanwhile
    for name in ("old 1", "old 2", "old 3"):
        cm.prefetch(task, name)
    cm.run_finished()
    cm.run_started()  # the next page's run: three more, the queue holds five
    try:
        for name in ("new 1", "new 2", "new 3"):
            cm.prefetch(task, name)
        assert cm._prefetch_queue.qsize() == 5  # nothing is taken out while a run is in progress
    finally:
        cm.run_finished()
    assert done.wait(10)
    time.sleep(0.2)
    assert order == ["new 1", "new 2", "new 3", "old 1", "old 2"]  # "old 3", the stalest, gave way
