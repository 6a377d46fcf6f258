"""Headless Chromium (Debian's package) driven by Playwright; no browser download."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.fail("Chromium is not installed: run `make packages` (Debian package chromium).")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(scope="package")
def ws_port(django_db_setup: None) -> Iterator[int]:
    """uvicorn and the relay as processes, started once for the browser tests that need
    them: the pages only read from them, and each test sets settings.WS_PORT itself."""
    from tests.support.live import live_stack

    with live_stack() as port:
        yield port
