"""The command line's view of a training run: a tqdm bar fed by the trainers' callbacks."""

from __future__ import annotations

import json
from typing import Callable


def progress_bar(total: int, postfix: Callable[[dict], dict], done: Callable[[dict], None]):
    """A ``callback(event, info)`` that drives a progress bar.

    ``postfix(info)`` gives the figures shown beside the bar after each step; eval and
    snapshot and notice events are printed above it; ``done(card)`` prints the summary at the end.
    """
    from tqdm import tqdm

    bars = []  # the bar starts with the first event, so a run that fails before training draws none

    def bar():
        if not bars:
            bars.append(tqdm(total=total, unit="step", dynamic_ncols=True, mininterval=2.0))
        return bars[0]

    def callback(event: str, info: dict) -> None:
        if event == "step":
            bar().n = info["step"]
            bar().set_postfix(postfix(info), refresh=False)
            bar().update(0)
        elif event in ("eval", "snapshot"):
            bar().write(f"[{event}] " + json.dumps(info))
        elif event == "notice":
            bar().write(f"[notice] {info['message']}")
        elif event == "done":
            bar().close()
            done(info)

    return callback
