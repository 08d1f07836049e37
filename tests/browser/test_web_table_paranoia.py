"""Paranoia (004 part III) at the web table: a pair tapped through its button, the card exchange.

Same real servers and Chromium as ``test_web_table.py``. The human plays by tapping: a card that
makes a pair offers "짝 …" beside its single play; in an exchange (a 2 or a King was played) every
seat picks the card it passes, the table says whom to, shows the others as choosing or chosen
(never what), and after it tells the human what it gave and what it got. To meet a pair in a
three-card hand the human keeps cards of the pair ranks and plays its other cards first.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import Browser, Servers
from tests.browser.test_web_table import GAME_TIMEOUT_MS, MOVED_ON, TURN_OR_RESULTS, Tapper
from tests.browser.test_web_table_presets import _create_preset_room, _play_with_bots

pytestmark = pytest.mark.browser

PAIR_RANKS = {"3", "6", "9", "K"}
GAMES = 4  # a pair may not come in one game of two rounds; the bound keeps a bad run finite


def _rank(face: str) -> str:
    return face.rstrip("♠♥♦♣")


class ParanoiaTapper(Tapper):
    """Plays paranoia's turns: a pair whenever one is legal, else a card it cannot pair; passes a
    card in an exchange."""

    pairs: int = 0
    passes: int = 0

    def view(self) -> dict[str, Any]:
        view: dict[str, Any] = self.browser.log.received("view")[-1]["view"]
        return view

    async def play_paranoia_turn(self) -> None:
        view = self.view()
        if view["phase"] == "exchange":
            await self._pass(view)
            return
        pairs = [p["action"] for p in view["legalPlays"] if p["action"].get("pairCardId")]
        if pairs:
            await self._pair(pairs[0])
            return
        await self.play_turn()

    def pick(self, playable: list[dict[str, Any]]) -> dict[str, Any]:
        keep = [c for c in playable if _rank(c["face"]) not in PAIR_RANKS]
        return min(keep or playable, key=lambda c: c["id"])

    async def _pass(self, view: dict[str, Any]) -> None:
        page = self.page
        status = page.get_by_test_id("exchange-status")
        assert await status.get_attribute("data-state") == "owed", await status.inner_text()
        assert "넘길 카드를 골라 주세요" in await status.inner_text()
        tags = page.get_by_test_id("pass-state")
        assert await tags.count() >= 1  # the others show as choosing or chosen
        hand = [c for c in await self.hand() if c["playable"]]
        card = self.pick(hand)
        locator = page.get_by_test_id(f"card-{card['id']}")
        await locator.tap()
        if not await self._selected_or_moved_on(card["id"]):
            return  # the exchange's deadline passed for us
        preview = page.get_by_test_id("preview")
        assert (await preview.inner_text()).startswith("넘기기")
        if not self.passes:
            await self.browser.screenshot("paranoia-exchange")
        await locator.tap()
        await page.wait_for_function(
            """() => !document.querySelector('#screen-results').hidden
              || document.querySelector('[data-testid="exchange-status"][data-state="owed"]') === null""",
            timeout=GAME_TIMEOUT_MS,
        )
        self.passes += 1

    async def _pair(self, action: dict[str, Any]) -> None:
        page = self.page
        first = action["cardId"]
        await page.get_by_test_id(f"card-{first}").tap()
        if not await self._selected_or_moved_on(first):
            return
        testid = "choice-pair-reverse" if action.get("dir") == "reverse" else "choice-pair"
        button = page.get_by_test_id(testid)
        await button.first.wait_for()
        assert await page.get_by_test_id("choice-single").count() == 1
        if not self.pairs:
            await self.browser.screenshot("paranoia-pair")
        await button.first.tap()
        await page.wait_for_function(MOVED_ON, arg=first, timeout=GAME_TIMEOUT_MS)
        self.pairs += 1
        self.moves.append("pair")


async def test_a_game_of_paranoia_with_a_pair_and_an_exchange(servers: Servers, browser: Browser) -> None:
    page = browser.page
    tapper = ParanoiaTapper(browser)
    for _ in range(GAMES):
        await _create_preset_room(page, servers.url, "paranoia", seats=3, house_rules="rounds=2")
        await _play_with_bots(browser, bots=2)
        while True:
            await page.wait_for_function(TURN_OR_RESULTS, timeout=GAME_TIMEOUT_MS)
            if await tapper.results_shown():
                break
            await tapper.play_paranoia_turn()
        if tapper.pairs and tapper.passes:
            break
        await page.get_by_test_id("back-to-lobby").tap()
    assert tapper.pairs, "a pair was played through its button"
    assert tapper.passes, "a card was passed in an exchange"
    events = [m["event"] for m in browser.log.received("event")]
    me = browser.log.received("joined")[0]["playerId"]
    played = [e for e in events if e["type"] == "pairPlayed" and e["player"] == me]
    assert played and len(played[0]["cards"]) == 2
    done = [e for e in events if e["type"] == "exchangeDone"]
    assert done and all(e["player"] == me for e in done), "only our own exchange is shown to us"
    banners = await page.evaluate("window.__ninetyNine.banners")
    texts = [b["text"] if isinstance(b, dict) else str(b) for b in banners]
    assert any("받았어요" in text for text in texts), texts[-10:]
    assert any("짝" in text for text in texts)
    # Penalty cards left at a round's end are laid down on the scoring strip, negative.
    for scored in (e for e in events if e["type"] == "handScored"):
        shown = page.locator(f'[data-testid="hand-scored"][data-player="{scored["player"]}"]')
        if await shown.count():
            assert int(await shown.last.get_attribute("data-points") or "0") <= 0
    await browser.screenshot("paranoia-results")
