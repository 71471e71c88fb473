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


# Pages where a view does not apply to a family without a W_hh under a tanh, or a bias on its retention gate: the
# entry's own sentence says why, naming the family.
EXPLAINED = {"gates.py", "gradient_flow.py", "exploding_vanishing.py"}


def walk_family(page, name: str, root, monkeypatch, *titles: str) -> None:
    """Every tab of the LM ``page`` opened on checkpoint ``name`` (a folder under ``root``): no exception anywhere,
    the sidebar uses that model, and a note names the family (one of ``titles``) on exactly the ``EXPLAINED`` pages."""
    from tests.app.test_minimal_pages import clean
    from tests.app.test_pages import open_page
    from tests.app.test_picker_truth import in_use

    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(root))
    at = open_page(page, {"recurrent_lm": name})
    clean(at, page.path)
    assert in_use(at)[0] == name, page.path
    notes = {i.value for i in at.info}
    for key, labels in tab_sets(at.main):
        for label in labels:
            if choose_tab(at, key, label):
                at.run()
                clean(at, f"{page.path} · {label}")
                notes |= {i.value for i in at.info}
    said = [n for n in notes if any(title in n for title in titles)]
    assert bool(said) == (page.path in EXPLAINED), (page.path, said)
