"""Tabs in AppTest: finding a page's keyed tab sets (``appkit.widgets.lazy_tabs``) and choosing one."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def tab_sets(node) -> list[tuple[str, list[str]]]:
    """The keyed tab containers under ``node`` (``lazy_tabs``): (their key, their tabs' labels)."""
    found = []
    for child in getattr(node, "children", {}).values():
        proto = getattr(child, "proto", None)
        if proto is not None and type(child).__name__ == "Block" and proto.HasField("tab_container"):
            key = proto.tab_container.query_param_key or proto.tab_container.id.rsplit("-", 1)[-1]
            found.append((key, [t.label for t in child.children.values() if type(t).__name__ == "Tab"]))
        found += tab_sets(child)
    return found


def choose_tab(at: AppTest, key: str, label: str) -> bool:
    """What a click on a tab does before the next run: the tabs' key holds the open tab's label, and the URL
    follows (AppTest sends its query string on every run, and a URL value wins over the session's).
    False when that tab is already the open one."""
    if key in at.session_state and at.session_state[key] == label:
        return False
    at.session_state[key] = label
    if key in at.query_params:
        at.query_params[key] = label
    return True
