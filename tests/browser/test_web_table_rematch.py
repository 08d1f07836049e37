"""The web table when a game ends on the player's own play, then "한 판 더" starts the next one.

The engine ends a game inside the Apply of the play that leaves the next player without a legal
card (spec §5.1 step 1), so the finished view is the answer to a play still marked in flight. The
page's WebSocket is answered here by a script that speaks the documented protocol with the demo
frames of ``static/demo`` (every frame is checked against the JSON Schema as in every browser test):
which seat moves first and which play ends a game are the RNG's choice on a real server, and this
test needs both to be the player's. The page itself is the real one, served by the real gateway.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import WebSocketRoute

from tests.browser.conftest import Browser, Servers, until
from tests.browser.test_web_table import _expect_attr

pytestmark = pytest.mark.browser

DEMO = Path(__file__).resolve().parents[2] / "ninetynine" / "gateway" / "static" / "demo"
FIRST_ROOM, REMATCH_ROOM = "K7QX2P", "M4RT8Z"
# A number card the demo hand may play (N8-1: legal at the demo's total).
CARD = "N8-1"


def _demo(name: str) -> dict[str, Any]:
    frame: dict[str, Any] = json.loads((DEMO / f"{name}.json").read_text(encoding="utf-8"))
    return frame


def _my_turn_now() -> dict[str, Any]:
    """The demo table's view, its turn started just now (p1 to play, N8-1 legal)."""
    frame = _demo("view-table")
    view = frame["view"]
    span = view["deadline"] - view["turnStartedAt"]
    view["turnStartedAt"] = int(time.time() * 1000)
    view["deadline"] = view["turnStartedAt"] + span
    assert view["myTurn"] and view["viewer"] == "p1"
    assert any(e["card"]["id"] == CARD and e["choices"][0]["legal"] for e in view["hand"])
    return frame


class ScriptedServer:
    """Answers the page's socket: a game that ends on the page's first play, then its rematch."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []  # what the page sent, in order
        self.page_side: WebSocketRoute | None = None

    def route(self, ws: WebSocketRoute) -> None:
        self.page_side = ws
        ws.on_message(self._on_message)

    def _send(self, frame: dict[str, Any]) -> None:
        assert self.page_side is not None
        self.page_side.send(json.dumps(frame))

    def _join(self, request_id: int | None, room_id: str, token: str) -> None:
        self._send(
            {
                "type": "joined",
                "id": request_id,
                "roomId": room_id,
                "playerId": "p1",
                "token": token,
                "role": "player",
                "host": True,
            }
        )
        room = copy.deepcopy(_demo("room"))
        room["room"]["roomId"] = room_id
        self._send(room)
        self._send(_my_turn_now())

    def _on_message(self, raw: str | bytes) -> None:
        message: dict[str, Any] = json.loads(raw)
        self.sent.append(message)
        kind, request_id = message["type"], message.get("id")
        if kind == "hello":
            self._send(
                {
                    "type": "welcome",
                    "id": request_id,
                    "protocolVersion": 1,
                    "heartbeatSeconds": 20,
                    "maxMessageBytes": 4096,
                    "lang": "ko",
                }
            )
        elif kind == "createRoom":
            self._join(request_id, FIRST_ROOM, "tA9fQ2mZr8Lw0xY3cV5bN1kJ4hG6dS7e")
        elif kind == "play" and len(self.plays()) == 1:
            # The play is applied and the next seat has no legal card: the game is over.
            self._send({"type": "played", "id": request_id, "clientSeq": message["clientSeq"], "seq": 58})
            self._send(_demo("view-finished"))
        elif kind == "rematch":
            self._join(request_id, REMATCH_ROOM, "sP2xW9qL4mN7bV1cZ8kJ3hG5fD6aS0eR")

    def plays(self) -> list[dict[str, Any]]:
        return [m for m in self.sent if m["type"] == "play"]


async def _tap_twice(browser: Browser, card: str) -> None:
    """The table's way to play a card: the first tap previews it, the second plays it."""
    locator = browser.page.get_by_test_id("hand").get_by_test_id(f"card-{card}")
    await locator.tap()
    await _expect_attr(locator, "data-selected", "true")
    await locator.tap()


async def test_the_rematch_hand_plays_when_the_last_game_ended_on_my_own_play(
    servers: Servers, browser: Browser
) -> None:
    page = browser.page
    script = ScriptedServer()
    await page.route_web_socket("**/ws", script.route)
    await page.goto(servers.url)
    await _expect_attr(page.get_by_test_id("connection"), "data-state", "open")
    await page.get_by_test_id("player-name").fill("나")
    await page.get_by_test_id("create-room").tap()
    await page.locator("#screen-table").wait_for(state="visible")

    await _tap_twice(browser, CARD)
    await until(lambda: len(script.plays()) == 1, "the first game's play is sent")
    await page.locator("#screen-results").wait_for(state="visible")

    await page.get_by_test_id("rematch").tap()
    await page.locator("#screen-table").wait_for(state="visible")
    assert await page.get_by_test_id("my-turn").count() == 1, "the new game starts with my turn"
    await _tap_twice(browser, CARD)
    await until(lambda: len(script.plays()) == 2, "two taps on a card of the new hand play it")
    first, second = script.plays()
    assert second["clientSeq"] != first["clientSeq"], "a new play, not the old one sent again"
    assert second["action"] == first["action"], f"the tapped {CARD} both times"
    await browser.screenshot("rematch-first-turn")
