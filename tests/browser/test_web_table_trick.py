"""The web table of the trick-taking 99 in headless Chromium: one deal against two bots, tapped.

The lobby's game select creates a trick room; the human sets three cards aside (the bid box shows
the tricks they bid), announces or passes, and plays one of the cards the server marks playable
until the deal is scored. What the server saw is checked from the page's own WebSocket frames.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import Browser, Servers
from tests.browser.test_web_table_axe import _axe_or_skip, _violations

pytestmark = pytest.mark.browser

HUMAN = "지호"
DEAL_TIMEOUT_MS = 60_000
SUIT_VALUE = {"C": 3, "H": 2, "S": 1, "D": 0}
# Something for me to do (bid, announce or pass, a card to play), or the first deal is over.
MY_MOVE_OR_DEAL_OVER = """() => document.querySelector('[data-testid="place-bid"]')
  || document.querySelector('[data-testid="announce-box"]')
  || document.querySelector('[data-testid="hand"] .card.playable:not([disabled])')
  || document.querySelector('[data-testid="deal-line"]')
  || !document.querySelector('#screen-results').hidden"""
MY_BID_SHOWN = """() => /=/.test(
  document.querySelector('[data-testid="trick-player-p1"] [data-testid="bid"]')?.textContent)"""
SENT = """(cardId) => !document.querySelector(`[data-testid="hand"] [data-card="${cardId}"]`)
  || !document.querySelector('[data-testid="hand"] .card.playable:not([disabled])')"""


async def test_one_deal_of_the_trick_game_by_tapping(servers: Servers, browser: Browser) -> None:
    page = browser.page
    await page.goto(servers.url)
    await page.get_by_test_id("player-name").fill(HUMAN)
    await page.get_by_test_id("opt-game").select_option("trick")
    assert await page.get_by_test_id("opt-seats").is_hidden()  # three seats, always
    await page.get_by_test_id("create-room").tap()
    await page.get_by_test_id("waiting-room").wait_for()
    assert await page.get_by_test_id("room-game").get_attribute("data-game") == "trick"
    assert await page.get_by_test_id("start-game").is_disabled()  # three seats to fill first
    for seat in (1, 2):
        await page.get_by_test_id("add-bot").tap()
        await page.locator(f'[data-testid="seat-{seat}"]:not(.free)').wait_for()
    await page.get_by_test_id("start-game").tap()
    await page.locator("#screen-trick").wait_for(state="visible")

    # The bid: three cards set aside, the box counts the tricks they bid (♣3 ♥2 ♠1 ♦0).
    await page.get_by_test_id("place-bid").wait_for()
    assert await page.get_by_test_id("place-bid").is_disabled()
    chosen: list[str] = []
    for _ in range(3):
        card = page.locator('[data-testid="hand"] .card').first
        chosen.append(str(await card.get_attribute("data-card")))
        await card.tap()
    made = sum(SUIT_VALUE[c[-1]] for c in chosen)
    assert await page.get_by_test_id("bid-count").inner_text() in (f"트릭 {made}개 약속",)
    await browser.screenshot("trick-bid")
    await page.get_by_test_id("place-bid").tap()

    moves: list[str] = ["bid"]
    while True:
        await page.wait_for_function(MY_MOVE_OR_DEAL_OVER, timeout=DEAL_TIMEOUT_MS)
        if (
            await page.locator('[data-testid="deal-line"]').count()
            or await page.locator("#screen-results").is_visible()
        ):
            break
        if await page.get_by_test_id("announce-box").count():
            await page.get_by_test_id("pass").tap()
            moves.append("pass")
            await page.get_by_test_id("announce-box").wait_for(state="detached")
            continue
        playable = page.locator('[data-testid="hand"] .card.playable:not([disabled])')
        if not await playable.count():
            continue  # the view moved on meanwhile
        card_id = await playable.first.get_attribute("data-card")
        if "card" not in moves:
            await browser.screenshot("trick-play")
        await page.locator(f'[data-testid="hand"] [data-card="{card_id}"]').tap()
        moves.append("card")
        # Sent: the hand is held until the answer, or the card has left it.
        await page.wait_for_function(SENT, arg=card_id, timeout=DEAL_TIMEOUT_MS)

    sent = [f.message["action"]["trick"] for f in browser.log.sent("play")]
    assert sent[0] == {"kind": "bid", "cards": chosen}
    assert {a["kind"] for a in sent} >= {"bid", "play"}
    scored = [m["event"] for m in browser.log.received("event") if m["event"]["type"] == "dealScored"]
    assert scored and scored[0]["deal"] == 1
    mine = next(ln for ln in scored[0]["lines"] if ln["player"] == "p1")
    assert sorted(mine["bid"]) == sorted(chosen) and mine["bidTricks"] == made
    # Every card I played was one the server's view marked playable (follow-suit).
    for frame in browser.log.sent("play"):
        action = frame.message["action"]["trick"]
        if action["kind"] == "play":
            views = [
                m["trick"]
                for m in browser.log.received("view")
                if m["trick"]["seq"] == frame.message["moveSeq"]
            ]
            assert views and any(
                c["card"]["id"] == action["card"] and c["playable"] for c in views[-1]["hand"]
            )
    await browser.screenshot("trick-deal-scored")
    # Help tells this game's rules, not the adding game's.
    await page.get_by_test_id("help-toggle").tap()
    assert await page.get_by_test_id("help-trick").is_visible()
    assert "♣ 3" in await page.get_by_test_id("help-trick").inner_text()
    await page.get_by_test_id("help-close").tap()
    # Korean by default, English at a tap: the table's own texts follow.
    head = page.get_by_test_id("trick-head")
    assert "번째 판" in await head.inner_text()
    await page.get_by_test_id("lang-toggle").tap()
    await page.wait_for_function(
        """() => document.querySelector('[data-testid="trick-head"]')?.textContent.includes('Deal ')
          || !document.querySelector('#screen-results').hidden"""
    )
    assert not browser.log.schema_errors and not browser.log.page_errors


async def test_the_results_of_a_match_show_the_ranking_and_each_deal_s_contracts(
    servers: Servers, browser: Browser
) -> None:
    """The results screen of a finished match (the demo fixture: a real match of bots to 50)."""
    page = browser.page
    await page.goto(servers.url + "?demo=trick-results")
    await page.locator("#screen-results").wait_for(state="visible")
    rows = page.get_by_test_id("ranking-row")
    assert await rows.count() == 3
    assert await rows.first.get_attribute("data-rank") == "1"
    deals = page.get_by_test_id("trick-deals")
    lines = deals.get_by_test_id("deal-line")
    count = await lines.count()
    assert count and count % 3 == 0  # three players' lines per deal
    made = [await lines.nth(i).get_attribute("data-made") for i in range(count)]
    assert {"true", "false"} & set(made)
    assert "위" in await rows.first.inner_text() and await page.get_by_test_id("verify-deal").is_hidden()
    assert await page.get_by_test_id("open-replay").is_hidden()
    await browser.screenshot("trick-results")
    assert not browser.log.page_errors


async def test_no_trick_screen_has_a_serious_or_critical_axe_violation(
    servers: Servers, browser: Browser
) -> None:
    """axe-core (as tests/browser/test_web_table_axe.py runs it) on the trick table while bidding
    with two cards set aside, while playing with follow-suit badges, on its help and results."""
    axe = _axe_or_skip()
    page = browser.page
    problems: list[str] = []
    await page.goto(f"{servers.url}?demo=trick-bid")
    for _ in range(2):
        await page.locator('[data-testid="hand"] .card').first.tap()
    await page.get_by_test_id("bid-count").wait_for()
    problems += await _violations(page, axe, "trick bid")
    await page.goto(f"{servers.url}?demo=trick-play")
    await page.locator('[data-testid="hand"] .badge').first.wait_for()
    problems += await _violations(page, axe, "trick play")
    await page.get_by_test_id("help-toggle").tap()
    await page.get_by_test_id("help-trick").wait_for()
    problems += await _violations(page, axe, "trick help")
    await page.goto(f"{servers.url}?demo=trick-results")
    await page.get_by_test_id("deal-line").first.wait_for()
    problems += await _violations(page, axe, "trick results")
    assert not problems, "axe-core found:\n" + "\n".join(problems)


async def test_a_reload_brings_the_trick_table_back_with_the_bid_laid(
    servers: Servers, browser: Browser
) -> None:
    """The seat survives a reload (its token in sessionStorage): the table comes back from the
    resumed view, the bid laid before the reload still shown as this seat's."""
    page = browser.page
    await page.goto(servers.url)
    await page.get_by_test_id("player-name").fill(HUMAN)
    await page.get_by_test_id("opt-game").select_option("trick")
    await page.get_by_test_id("create-room").tap()
    await page.get_by_test_id("waiting-room").wait_for()
    for seat in (1, 2):
        await page.get_by_test_id("add-bot").tap()
        await page.locator(f'[data-testid="seat-{seat}"]:not(.free)').wait_for()
    await page.get_by_test_id("start-game").tap()
    await page.get_by_test_id("place-bid").wait_for()
    for _ in range(3):
        await page.locator('[data-testid="hand"] .card').first.tap()
    await page.get_by_test_id("place-bid").tap()
    await page.get_by_test_id("place-bid").wait_for(state="detached")
    await page.reload()
    await page.locator("#screen-trick").wait_for(state="visible")
    mine = page.get_by_test_id("trick-player-p1").get_by_test_id("bid")
    await page.wait_for_function(MY_BID_SHOWN)
    assert "=" in await mine.inner_text()  # "6♦ 6♥ 8♥ = 4": my own bid, face down for the others
    resumed = [f.message for f in browser.log.sent("resume")]
    assert resumed and resumed[-1]["afterSeq"] > 0
    assert not browser.log.schema_errors and not browser.log.page_errors
