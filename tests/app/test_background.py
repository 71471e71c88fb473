"""Background work for a visitor's next move waits until the server has nothing to serve (seqviz.background)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from seqviz import background


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(background, "QUIET_S", 0.2)
    monkeypatch.setattr(background, "PATIENCE_S", 3.0)
    monkeypatch.setitem(background._serving, "in_flight", 0)
    monkeypatch.setitem(background._serving, "last", 0.0)


def answering(seconds: float) -> threading.Thread:
    """One HTTP request answered through the middleware, taking ``seconds``, on its own event loop."""
    async def app(scope, receive, send):
        await asyncio.sleep(seconds)

    async def nothing(*_):
        return None

    request = threading.Thread(target=asyncio.run, args=(background.Serving(app)(
        {"type": "http", "method": "GET", "path": "/static/js/x.js", "headers": []}, nothing, nothing),))
    request.start()
    while not background._serving["in_flight"] and request.is_alive():
        time.sleep(0.005)
    return request


def test_with_nothing_being_served_it_starts_at_once(monkeypatch):
    monkeypatch.setattr(background, "QUIET_S", 2.0)  # a wait for quiet would show, even on a busy machine
    started = time.monotonic()
    ran = background.when_idle(time.monotonic).result(timeout=5)
    assert ran - started < 1.0  # (AppTest, a script: no server, nothing to wait for)


def test_it_waits_for_the_requests_being_answered_then_for_quiet():
    request = answering(0.6)
    asked = time.monotonic()
    ran = background.when_idle(time.monotonic)
    request.join()
    ended = background._serving["last"]
    assert ended - asked >= 0.55 and not background._serving["in_flight"]
    assert ran.result(timeout=5) >= ended + background.QUIET_S - 0.01  # not while the request was answered


def test_a_websocket_is_not_a_request_being_answered():
    async def app(scope, receive, send):
        assert not background._serving["in_flight"]

    asyncio.run(background.Serving(app)({"type": "websocket"}, None, None))
    assert background._serving["last"] == 0.0


def test_a_new_run_drops_the_work_still_waiting(monkeypatch):
    request = answering(1.0)
    calls = []
    waiting = background.when_idle(calls.append, "ran")
    time.sleep(0.1)
    background.cancel_pending()  # the next run: what the previous one asked for is superseded
    assert waiting.result(timeout=2) is None
    request.join()
    time.sleep(background.QUIET_S + 0.1)
    assert calls == []


def test_a_server_never_quiet_still_gets_it_after_patience(monkeypatch):
    monkeypatch.setattr(background, "PATIENCE_S", 0.4)
    request = answering(1.5)
    asked = time.monotonic()
    ran = background.when_idle(time.monotonic).result(timeout=5)
    assert 0.35 <= ran - asked and request.is_alive()
    request.join()


def test_shutdown_does_not_wait_for_quiet():
    request = answering(1.5)
    waiting = background.when_idle(time.monotonic)
    time.sleep(0.1)
    began = time.monotonic()
    background.shutdown()
    assert time.monotonic() - began < 0.5 and waiting.result(timeout=1) is None
    request.join()
