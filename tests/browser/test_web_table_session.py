"""The web table around the game: a second game without a reload, leaving, lowercase codes, the
timer on the server's clock after a reconnect, and a silent network drop seen in seconds.

Same real servers and Chromium as ``test_web_table.py``. The silent drop is real too: the page is
loaded through a TCP relay in this test that, on demand, stops passing bytes in both directions
while keeping every socket open, which is what a phone walking out of Wi-Fi does to a WebSocket.
Screenshots land in ``artifacts/screenshots/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from playwright.async_api import Page

from tests.browser.conftest import Browser, PageLog, Servers, until
from tests.browser.test_web_table import HOOK, Tapper, _expect_attr, _joined

pytestmark = pytest.mark.browser

HUMAN = "지호"
GAME_TIMEOUT_MS = 60_000


async def _create_room(page: Page, url: str, *, seats: int, lives: str = "0", turn: str = "10") -> str:
    """Open the lobby, create a room with these settings; returns its code (the waiting room is up)."""
    await page.goto(url)
    await _expect_attr(page.get_by_test_id("connection"), "data-state", "open")
    await page.get_by_test_id("player-name").fill(HUMAN)
    await page.get_by_test_id("opt-seats").select_option(str(seats))
    await page.get_by_test_id("opt-mode").select_option("kr-product")
    await page.get_by_test_id("opt-lives").select_option(lives)
    await page.get_by_test_id("opt-turnSeconds").select_option(turn)
    await page.get_by_test_id("create-room").tap()
    await page.get_by_test_id("waiting-room").wait_for()
    return (await page.get_by_test_id("room-code").inner_text()).strip()


async def _fill_with_bots_and_start(page: Page, bots: int, first_free: int = 1) -> None:
    for seat in range(first_free, first_free + bots):
        await page.get_by_test_id("add-bot").tap()
        await page.locator(f'[data-testid="seat-{seat}"]:not(.free)').wait_for()
    await page.get_by_test_id("start-game").tap()
    await page.locator("#screen-table").wait_for(state="visible")


async def _play_to_results(tapper: Tapper) -> None:
    while await tapper.wait_for_turn():
        await tapper.play_turn()
    await tapper.page.locator("#screen-results").wait_for(state="visible")


def _errors(log: PageLog, reason: str) -> list[dict[str, Any]]:
    return [m for m in log.received("error") if m["reason"] == reason]


async def test_a_second_game_by_rematch_then_by_the_lobby_without_a_reload(
    servers: Servers, browser: Browser
) -> None:
    page = browser.page
    first_room = await _create_room(page, servers.url, seats=3)
    await _fill_with_bots_and_start(page, bots=2)
    tapper = Tapper(browser)
    await _play_to_results(tapper)
    await browser.screenshot("results-rematch-button")

    # "한 판 더": the server's rematch room, same size and settings, the same bots, started at once.
    rematch = page.get_by_test_id("rematch")
    assert await rematch.inner_text() == "한 판 더"
    await rematch.tap()
    await page.locator("#screen-table").wait_for(state="visible")
    await page.get_by_test_id("hand").locator('[data-testid^="card-"]').first.wait_for()
    await browser.screenshot("rematch-table")
    assert len(browser.log.sent("rematch")) == 1 and not browser.log.sent("leaveRoom")
    second_room = _joined_rooms(browser.log)[-1]
    assert second_room != first_room, "the rematch is a new room"
    room = browser.log.received("room")[-1]["room"]
    first = next(m["room"] for m in browser.log.received("room") if m["room"]["roomId"] == first_room)
    assert room["maxSeats"] == 3 and room["options"] == first["options"]
    assert len([s for s in room["seats"] if s["bot"]]) == 2, "the same two bots sit at the new table"
    await _play_to_results(tapper)

    # Back to the lobby: it really leaves, so the next create is a plain one.
    await page.get_by_test_id("back-to-lobby").tap()
    await page.locator("#screen-lobby").wait_for(state="visible")
    await page.get_by_test_id("create-room").tap()
    await page.get_by_test_id("waiting-room").wait_for()
    await browser.screenshot("lobby-third-room")
    assert len(set(_joined_rooms(browser.log))) == 3
    assert browser.log.sent("leaveRoom") and browser.log.received("left"), "the lobby button really left"
    assert not _errors(browser.log, "ALREADY_IN_ROOM"), "every new room was made without a reload"
    assert browser.log.sockets == 1, "all on the page's first WebSocket"


async def test_two_people_meet_again_with_one_more_game(servers: Servers, browser: Browser) -> None:
    host = browser.page
    code = await _create_room(host, servers.url, seats=3)
    guest, guest_log = await browser.new_page()
    await guest.goto(servers.url)
    await _expect_attr(guest.get_by_test_id("connection"), "data-state", "open")
    await guest.get_by_test_id("player-name").fill("민서")
    await guest.get_by_test_id("room-code-input").fill(code)
    await guest.get_by_test_id("join-room").tap()
    await guest.get_by_test_id("waiting-room").wait_for()
    await _fill_with_bots_and_start(host, bots=1, first_free=2)
    await _play_to_results(Tapper(browser))  # the guest lets its turns time out
    await guest.locator("#screen-results").wait_for(state="visible", timeout=GAME_TIMEOUT_MS)

    await host.get_by_test_id("rematch").tap()  # first: hosts the new room and brings the bot back
    await host.get_by_test_id("waiting-room").wait_for()
    await host.locator('[data-testid="seat-1"]:not(.free)').wait_for()
    await guest.get_by_test_id("rematch").tap()
    await guest.get_by_test_id("waiting-room").wait_for()
    new_code = (await guest.get_by_test_id("room-code").inner_text()).strip()
    assert new_code != code and new_code == (await host.get_by_test_id("room-code").inner_text()).strip()
    await host.locator('[data-testid="seat-2"]:not(.free)').wait_for()
    assert "민서" in await host.get_by_test_id("seat-2").inner_text()
    await browser.screenshot("rematch-waiting-room-two-people")
    await host.get_by_test_id("start-game").tap()
    for page in (host, guest):
        await page.locator("#screen-table").wait_for(state="visible")
    await browser.screenshot("rematch-table-guest", guest)
    assert guest_log.sent("rematch") and not _errors(guest_log, "ALREADY_IN_ROOM")


def _joined_rooms(log: PageLog) -> list[str]:
    return [m["roomId"] for m in log.received("joined")]


async def test_lowercase_codes_and_leaving_the_table_as_player_and_spectator(
    servers: Servers, browser: Browser
) -> None:
    host = browser.page
    code = await _create_room(host, servers.url, seats=3, turn="30")
    guest, guest_log = await browser.new_page()
    await guest.goto(servers.url)
    await _expect_attr(guest.get_by_test_id("connection"), "data-state", "open")
    await guest.get_by_test_id("player-name").fill("민서")
    await guest.get_by_test_id("room-code-input").fill(code.lower())
    assert await guest.get_by_test_id("room-code-input").input_value() == code, "shown in capitals"
    await guest.get_by_test_id("join-room").tap()
    await guest.get_by_test_id("waiting-room").wait_for()
    assert [m["roomId"] for m in guest_log.received("joined")] == [code]
    await _fill_with_bots_and_start(host, bots=1, first_free=2)
    await guest.locator("#screen-table").wait_for(state="visible")

    watcher, watcher_log = await browser.new_page()
    await watcher.goto(servers.url)
    await _expect_attr(watcher.get_by_test_id("connection"), "data-state", "open")
    await watcher.get_by_test_id("room-code-input").fill(code.lower())
    await watcher.get_by_test_id("spectate-room").tap()
    await watcher.locator("#screen-table").wait_for(state="visible")
    assert [m["role"] for m in watcher_log.received("joined")] == ["spectator"]

    # The player leaves: a warning first (leaving is final), then the lobby; the seat plays on.
    await guest.get_by_test_id("leave-table").tap()
    await guest.get_by_test_id("leave-confirm").wait_for()
    await browser.screenshot("table-leave-confirm", guest)
    await guest.get_by_test_id("leave-confirm").tap()
    await guest.locator("#screen-lobby").wait_for(state="visible")
    guest_id = guest_log.received("joined")[0]["playerId"]
    await host.locator(f'[data-testid="opponent-{guest_id}"][data-connected="false"]').wait_for()
    assert guest_log.sent("leaveRoom") and guest_log.received("left")
    # ... and can at once watch the same game from the lobby (the connection is free again).
    await guest.get_by_test_id("room-code-input").fill(code.lower())
    await guest.get_by_test_id("spectate-room").tap()
    await guest.locator("#screen-table").wait_for(state="visible")

    # The spectator leaves with one tap (nothing to lose) and is back in the lobby, unbound.
    await watcher.get_by_test_id("leave-table").tap()
    await watcher.locator("#screen-lobby").wait_for(state="visible")
    assert watcher_log.sent("leaveRoom")
    await watcher.get_by_test_id("player-name").fill("관전자")
    await watcher.get_by_test_id("create-room").tap()
    await watcher.get_by_test_id("waiting-room").wait_for()
    await browser.screenshot("lobby-after-spectator-left", watcher)
    for log in (guest_log, watcher_log):
        assert not _errors(log, "ALREADY_IN_ROOM") and not _errors(log, "ROOM_NOT_FOUND")


# The local clock of the page runs this far behind the server's (a phone whose clock is off).
SKEW_MS = 25_000
SKEWED_CLOCK = f"""(() => {{
  const real = Date.now.bind(Date);
  Date.now = () => real() - {SKEW_MS};
}})();"""


async def test_the_timer_runs_on_the_server_deadline_after_a_reconnect_and_a_reload(
    servers: Servers, browser: Browser
) -> None:
    page = browser.page
    await page.context.add_init_script(SKEWED_CLOCK)
    await _create_room(page, servers.url, seats=2, turn="30")
    await _fill_with_bots_and_start(page, bots=1)
    offset = await page.evaluate(f"{HOOK}.clockOffset")
    assert abs(offset - SKEW_MS) < 1000, f"the measured offset {offset} is the clock's skew"
    tapper = Tapper(browser)

    async def check_ring(label: str) -> None:
        """On my turn the digits are the server's time left to the view's deadline."""
        assert await tapper.wait_for_turn(), "the game lasts long enough"
        timer = page.get_by_test_id("timer")
        deadline = int(await timer.get_attribute("data-deadline") or "0")
        await page.wait_for_function("() => document.querySelector('[data-testid=timer]').textContent !== ''")
        shown = int(await timer.inner_text())
        left = (deadline - time.time() * 1000) / 1000
        assert left - 1.5 <= shown <= left + 1.5, f"{label}: ring {shown} s, server {left:.1f} s left"
        await browser.screenshot(f"table-timer-{label}")

    await check_ring("first-turn")
    await tapper.play_turn()
    await check_ring("before-drop")
    await page.wait_for_timeout(1500)  # part of this turn goes by before the line drops
    await page.evaluate(f"{HOOK}.drop()")
    await _expect_attr(page.get_by_test_id("connection"), "data-state", "open")
    await check_ring("after-reconnect")
    await page.reload()
    await _expect_attr(page.get_by_test_id("connection"), "data-state", "open")
    await page.locator("#screen-table").wait_for(state="visible")
    await check_ring("after-reload")
    assert browser.log.sockets >= 3 and browser.log.sent("resume")


@dataclass
class Blackhole:
    """A TCP relay to the gateway that can go silent: bytes stop both ways, sockets stay open."""

    target_port: int
    silent: bool = False
    port: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(src, dst))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await src.read(65536):
                if self.silent:
                    continue  # swallowed: neither side hears anything
                dst.write(data)
                await dst.drain()
        if self.silent:
            return  # a dead line carries no close either: the other side must find out by itself
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            dst.close()

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._server is not None:
            self._server.close()


@contextlib.asynccontextmanager
async def _blackhole(servers: Servers) -> AsyncIterator[Blackhole]:
    relay = Blackhole(servers.gateway.http_port)
    await relay.start()
    try:
        yield relay
    finally:
        await relay.stop()


@dataclass
class Watcher:
    """A spectator's own WebSocket straight to the gateway: what the others are told."""

    rooms: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    def connected(self, player: str) -> bool | None:
        for _, room in reversed(self.rooms):
            for seat in room["seats"]:
                if seat["playerId"] == player:
                    return bool(seat["connected"])
        return None


async def test_a_silent_drop_is_seen_within_seconds_by_the_player_and_the_others(
    servers: Servers, browser: Browser
) -> None:
    page = browser.page
    async with _blackhole(servers) as relay:
        code = await _create_room(page, relay.url, seats=3, lives="5", turn="30")
        await _fill_with_bots_and_start(page, bots=2)
        me = _joined(browser)["playerId"]
        welcome = browser.log.received("welcome")[0]
        assert welcome["heartbeatSeconds"] == 2, "the table asked for a 2-second heartbeat"

        other, _ = await browser.new_page()  # another person watching, straight to the gateway
        await other.goto(servers.url)
        await other.get_by_test_id("room-code-input").fill(code)
        await other.get_by_test_id("spectate-room").tap()
        await other.locator(f'[data-testid="opponent-{me}"][data-connected="true"]').wait_for()

        watcher = Watcher()
        async with aiohttp.ClientSession() as http, http.ws_connect(servers.ws_url) as ws:
            await ws.send_json({"type": "spectate", "id": 1, "roomId": code})

            async def read() -> None:
                async for frame in ws:
                    message = json.loads(frame.data)
                    if message["type"] == "room":
                        watcher.rooms.append((time.monotonic(), message["room"]))

            reader = asyncio.create_task(read())
            try:
                await until(lambda: watcher.connected(me) is True, "the others see the seat connected", 10)
                relay.silent = True
                cut = time.monotonic()
                # The player sees it: "연결 끊김" within seconds, not after the TCP timeout.
                await page.get_by_test_id("offline-banner").wait_for(state="visible", timeout=9000)
                seen_by_player = time.monotonic() - cut
                assert "연결 끊김" in await page.get_by_test_id("offline-banner").inner_text()
                assert await page.get_by_test_id("connection").get_attribute("data-state") == "reconnecting"
                await browser.screenshot("table-silent-drop-player")
                # The others see it: the server closed the silent connection and told the room.
                await until(lambda: watcher.connected(me) is False, "the others see the silent drop", 12)
                seen_by_others = time.monotonic() - cut
                offline = other.locator(f'[data-testid="opponent-{me}"][data-connected="false"]')
                await offline.wait_for(timeout=5000)
                assert "연결 끊김" in await offline.inner_text()
                await browser.screenshot("table-silent-drop-others", other)
                assert seen_by_player < 8, f"the player noticed after {seen_by_player:.1f} s"
                assert seen_by_others < 12, f"the others were told after {seen_by_others:.1f} s"

                # The line comes back: the table reconnects and resumes by itself.
                relay.silent = False
                await page.wait_for_function(
                    "() => document.querySelector('[data-testid=connection]').dataset.state === 'open'",
                    timeout=30_000,
                )
                await page.get_by_test_id("offline-banner").wait_for(state="hidden")
                await until(lambda: watcher.connected(me) is True, "the others see the seat back", 15)
                assert browser.log.sent("resume"), "the seat was resumed"
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
