"""A local folder in chromium (issue 51): typed into the sidebar, it goes into the address; the copied address opens
the same folder in a new tab; an address naming a folder the server may not open shows the default model and says
why, without an exception."""

from __future__ import annotations

import pytest

from tests.browser.driver import wait_idle
from tests.browser.test_browser import assert_no_exception, browser, server  # noqa: F401 - the module's fixtures

pytestmark = pytest.mark.browser


def opened(browser, url: str):  # noqa: F811 - the fixture
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(url, wait_until="domcontentloaded")
    wait_idle(page, timeout=240_000)
    return page


def sidebar(page) -> str:
    return page.locator("[data-testid='stSidebar']").inner_text()


def test_a_typed_folder_goes_into_the_address_and_the_copied_address_reopens_it(browser, server):  # noqa: F811
    folder = str(server.roots[1] / "tiny-lstm")  # under the server's checkpoint folders: allowed
    page = opened(browser, f"{server}/language_model")
    try:
        page.locator("[data-testid='stSidebar'] [data-testid='stRadio'] label", has_text="Local folder").click()
        wait_idle(page)
        box = page.locator("[data-testid='stSidebar'] [data-testid='stTextInput'] input").first
        box.fill(folder)
        box.press("Enter")
        wait_idle(page)
        assert "recurrent_lm_folder=" in page.url, page.url
        assert "tiny-lstm" in sidebar(page) and "local folder" in sidebar(page)
        copied = page.url
    finally:
        page.close()
    again = opened(browser, copied)  # a new visitor, with the copied address
    try:
        assert_no_exception(again, "the copied address")
        assert "Using tiny-lstm (local folder)" in sidebar(again), sidebar(again)
        assert again.locator("[data-testid='stSidebar'] [data-testid='stTextInput'] input").first.input_value() == folder
    finally:
        again.close()


def test_an_address_naming_a_folder_it_may_not_open_shows_the_default_and_says_why(browser, server):  # noqa: F811
    page = opened(browser, f"{server}/language_model?recurrent_lm_folder=/etc&lang=zh")
    try:
        assert_no_exception(page, "a link to /etc")
        said = page.locator("[data-testid='stAlertContentWarning']").first.inner_text()
        assert "链接中的文件夹" in said and "/etc" in said, said
        assert "recurrent_lm_folder" not in page.url
    finally:
        page.close()
