"""Real servers and a real browser for the web-table tests.

Engine, session (SQLite in tmp) and gateway run in the test's event loop on port 0, exactly as in
``tests/gateway``, but with turns long enough for a human who taps: the session's ``time_scale``
shrinks the 10-second turn to a few seconds, bots think for a few tens of milliseconds.

The browser is Debian's Chromium (``/usr/bin/chromium``) driven by Playwright over CDP, headless,
with a fresh profile per test and a phone-sized touch viewport. Playwright's own browser download
(``playwright install``) is never used. Every WebSocket frame the page sends or receives is
recorded and checked against the protocol's JSON Schema, and any uncaught page error fails the test.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import BrowserContext, Page, ViewportSize, WebSocket, async_playwright
from prometheus_client import CollectorRegistry

from ninetynine.engine.server import EngineMetrics, create_engine_server
from ninetynine.gateway.protocol import client_validator, server_validator
from ninetynine.gateway.server import RunningGateway, start_gateway
from ninetynine.session.server import close_room_service, create_session_server

CHROMIUM = Path(os.environ.get("NINETYNINE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PHONE: ViewportSize = {"width": 390, "height": 844}
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
# A 10-second turn lasts 4 s: ample for a scripted tap, short when the seat is away (the drop test).
TURN_TIME_SCALE = 0.4
BOT_THINK_MS = 40
ACTION_TIMEOUT_MS = 15_000


@dataclass
class Servers:
    gateway: RunningGateway

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.gateway.http_port}/"

    @property
    def ws_url(self) -> str:
        return f"http://127.0.0.1:{self.gateway.http_port}/ws"


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[Servers]:
    engine, engine_port, _ = create_engine_server(
        "127.0.0.1:0", metrics=EngineMetrics.create(CollectorRegistry())
    )
    await engine.start()
    session, session_port, _, rooms = create_session_server(
        "127.0.0.1:0",
        engine_target=f"127.0.0.1:{engine_port}",
        store_url=f"sqlite:///{tmp_path}/rooms.db",
        bot_think_ms=BOT_THINK_MS,
        time_scale=TURN_TIME_SCALE,
        registry=CollectorRegistry(),
    )
    await session.start()
    rooms.start()
    gateway = await start_gateway(session_target=f"127.0.0.1:{session_port}", registry=CollectorRegistry())
    try:
        yield Servers(gateway)
    finally:
        await gateway.stop(grace=0.5)
        await session.stop(None)
        await close_room_service(rooms)
        await engine.stop(None)


@dataclass
class Frame:
    socket: int  # 1 for the page's first WebSocket, 2 after the first reconnect, ...
    sent: bool
    message: dict[str, Any]


@dataclass
class PageLog:
    """What the page did on the wire and what went wrong inside it."""

    frames: list[Frame] = field(default_factory=list)
    sockets: int = 0
    schema_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def received(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [f.message for f in self.frames if not f.sent and kind in (None, f.message["type"])]

    def sent(self, kind: str | None = None) -> list[Frame]:
        return [f for f in self.frames if f.sent and kind in (None, f.message["type"])]

    def record(self, socket: int, sent: bool, payload: str | bytes) -> None:
        message = json.loads(payload)
        validator = client_validator() if sent else server_validator()
        errors = [e.message for e in validator.iter_errors(message)]
        if errors:
            self.schema_errors.append(f"{'sent' if sent else 'received'} {message!r}: {errors[0]}")
        self.frames.append(Frame(socket, sent, message))

    def watch(self, ws: WebSocket) -> None:
        self.sockets += 1
        number = self.sockets
        ws.on("framesent", lambda payload: self.record(number, True, payload))
        ws.on("framereceived", lambda payload: self.record(number, False, payload))


@dataclass
class Browser:
    page: Page
    log: PageLog
    shots: list[Path]
    others: list[PageLog] = field(default_factory=list)

    async def screenshot(self, name: str, page: Page | None = None) -> Path:
        """Save ``name``.png of the test's page (or of another page of the same browser)."""
        path = ARTIFACTS / f"{name}.png"
        await (page or self.page).screenshot(path=str(path))
        self.shots.append(path)
        return path

    async def new_page(self) -> tuple[Page, PageLog]:
        """Another tab (its own sessionStorage: its own seat), its frames checked like the first one's."""
        page = await self.page.context.new_page()
        log = PageLog()
        page.on("websocket", log.watch)
        page.on("pageerror", lambda exc: self.log.page_errors.append(str(exc)))
        self.others.append(log)
        return page, log


def _chromium_or_skip() -> None:
    if CHROMIUM.exists():
        return
    hint = f"{CHROMIUM} is missing: apt-get install -y chromium fonts-nanum fonts-noto-color-emoji"
    if os.environ.get("CI"):
        pytest.fail(hint)  # CI installs it (.ci/run); missing there is a broken pipeline
    pytest.skip(hint)


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncIterator[Browser]:
    _chromium_or_skip()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    profile = tmp_path / "chromium-profile"
    log = PageLog()
    async with async_playwright() as playwright:
        context: BrowserContext = await playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport=PHONE,
            screen={"width": PHONE["width"], "height": PHONE["height"]},
            device_scale_factor=2,
            is_mobile=True,
            has_touch=True,
            locale="en-US",  # the table is Korean by default whatever the browser's language
        )
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        page = context.pages[0] if context.pages else await context.new_page()
        page.on("websocket", log.watch)
        page.on("pageerror", lambda exc: log.page_errors.append(str(exc)))
        # The gateway's CSP must not block anything the table does (Chromium reports it on the console).
        page.on(
            "console",
            lambda m: log.page_errors.append(m.text) if "Content Security Policy" in m.text else None,
        )
        opened = Browser(page, log, [])
        try:
            yield opened
        finally:
            await context.close()
            shutil.rmtree(profile, ignore_errors=True)
    assert not log.page_errors, f"uncaught errors in the page: {log.page_errors}"
    assert not log.schema_errors, f"frames outside the protocol: {log.schema_errors[:3]}"
    for other in opened.others:
        assert not other.schema_errors, f"frames outside the protocol: {other.schema_errors[:3]}"


async def until(check: Callable[[], object], what: str, timeout: float = 10.0) -> None:
    """Wait until ``check()`` is true; fail saying ``what`` was awaited once ``timeout`` s pass."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not check():
        assert loop.time() < end, f"not within {timeout:g} s: {what}"
        await asyncio.sleep(0.02)
