"""The web table when a tapped card meets a game that has moved on (``play.moveSeq``).

The page's WebSocket runs through Playwright's WebSocket route, so the test can hold back what the
server says for a while: the table keeps showing an old view, as on a slow line, while another
device of the same seat plays the turn. The card then tapped on the table names that old view; the
server refuses it (VIEW_OUTDATED) instead of playing it at the new total, and once the line catches
up the table shows the new view, says why in Korean, and the next turn plays by tapping as usual.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from playwright.async_api import WebSocketRoute

from ninetynine.session.errors import REASONS
from tests.browser.conftest import Browser, Servers, until
from tests.browser.test_web_table import Tapper, _joined, _open_lobby_and_start

pytestmark = pytest.mark.browser

KOREAN = REASONS["VIEW_OUTDATED"][1]


class HeldLine:
    """Forwards the page's WebSocket to the gateway; server frames can be held back and released."""

    def __init__(self) -> None:
        self.holding = False
        self.held: list[str] = []
        self.page_side: WebSocketRoute | None = None

    def route(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        self.page_side = ws
        ws.on_message(lambda message: server.send(message))
        server.on_message(self._from_server)

    def _from_server(self, message: str | bytes) -> None:
        assert self.page_side is not None
        if self.holding:
            self.held.append(str(message))
        else:
            self.page_side.send(message)

    def held_messages(self) -> list[dict[str, Any]]:
        return [json.loads(m) for m in self.held]

    def release(self) -> None:
        assert self.page_side is not None
        self.holding = False
        for message in self.held:
            self.page_side.send(message)
        self.held.clear()


async def test_a_card_tapped_on_an_outdated_table_is_refused_and_the_table_catches_up(
    servers: Servers, browser: Browser
) -> None:
    page = browser.page
    line = HeldLine()
    await page.route_web_socket("**/ws", line.route)
    await _open_lobby_and_start(browser, servers)
    joined = _joined(browser)
    tapper = Tapper(browser)
    assert await tapper.wait_for_turn()
    shown = [v["view"] for v in browser.log.received("view")][-1]
    assert shown["myTurn"]

    async with aiohttp.ClientSession() as http, http.ws_connect(servers.ws_url) as other:
        # From now on the table hears nothing: it keeps showing its turn.
        line.holding = True
        # Another device of the same seat plays this very turn.
        await other.send_json({"type": "resume", "id": "r", "token": joined["token"], "afterSeq": 0})
        while True:
            message = await other.receive_json(timeout=10)
            if message["type"] == "view" and message["view"]["myTurn"]:
                break
        view = message["view"]
        assert view["seq"] == shown["seq"]
        await other.send_json(
            {
                "type": "play",
                "id": "o",
                "clientSeq": 1,
                "moveSeq": view["seq"],
                "action": view["legalPlays"][0]["action"],
            }
        )
        while (message := await other.receive_json(timeout=10))["type"] != "played":
            pass

        async def after_tap() -> None:
            # The refusal reaches the held line; then the line catches up all at once.
            def refused() -> bool:
                return any(m["type"] == "error" for m in line.held_messages())

            await until(refused, "the refusal reaches the held line")
            line.release()
            # The refusal is shown (the toast hides itself after 3.2 s, so look while it is up).
            await page.wait_for_function(
                "() => { const el = document.querySelector('[data-testid=\"toast\"]');"
                " return el && !el.hidden && el.dataset.reason === 'VIEW_OUTDATED'; }",
                timeout=10_000,
            )

        await tapper.play_turn(after_tap=after_tap)

    plays = [f.message for f in browser.log.sent("play")]
    assert len(plays) == 1 and plays[0]["moveSeq"] == shown["seq"], "the play named the view on screen"
    errors = browser.log.received("error")
    assert [(e["reason"], e["message"]) for e in errors] == [("VIEW_OUTDATED", KOREAN)]
    assert not browser.log.received("played"), "the outdated play was not applied"
    toast = page.get_by_test_id("toast")
    assert await toast.get_attribute("data-reason") == "VIEW_OUTDATED"
    assert await toast.text_content() == KOREAN
    await browser.screenshot("table-view-outdated")
    # The table shows the newest view it was sent, past the one the card was tapped on.
    newest = [v["view"] for v in browser.log.received("view")][-1]
    assert newest["seq"] > shown["seq"]
    assert await tapper.total() == newest["total"]

    # Nothing is stuck: the next turn plays by tapping, with the then current move counter.
    if await tapper.wait_for_turn():
        turn = [v["view"] for v in browser.log.received("view")][-1]
        await tapper.play_turn()
        sent = browser.log.sent("play")[-1].message
        assert sent["moveSeq"] == turn["seq"]
        await until(
            lambda: any(p["clientSeq"] == sent["clientSeq"] for p in browser.log.received("played")),
            "the resent play is answered",
        )
