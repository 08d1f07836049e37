"""After a game and around it: the replay on the table, the deal re-checked in the browser, sound.

"공정성 확인" re-runs the engine's documented shuffle and deal (PCG32, canonical deck, round-robin
deal) in the page from the revealed seed; the test compares the page's verdict with the server's
published commitment, and checks that a tampered seed is caught. Screenshots land in
``artifacts/screenshots/``.
"""

from __future__ import annotations

import json

import pytest
from playwright.async_api import Route

from ninetynine.engine.rules.rng import seed_commitment
from ninetynine.gateway.server import STATIC_DIR as STATIC
from tests.browser.conftest import Browser, Servers
from tests.browser.test_web_table import HOOK, Tapper, _expect_attr
from tests.browser.test_web_table_session import _create_room, _fill_with_bots_and_start, _play_to_results

pytestmark = pytest.mark.browser


async def test_the_deal_of_a_real_game_is_verified_in_the_browser(servers: Servers, browser: Browser) -> None:
    page = browser.page
    await _create_room(page, servers.url, seats=3)
    await _fill_with_bots_and_start(page, bots=2)
    await _play_to_results(Tapper(browser))
    await page.get_by_test_id("verify-deal").tap()
    fairness = page.get_by_test_id("fairness")
    await fairness.wait_for()
    await _expect_attr(fairness, "data-verdict", "ok")
    replay = browser.log.received("replay")[-1]
    started = next(e["event"] for e in replay["events"] if e["event"]["type"] == "gameStarted")
    assert started["seedCommitment"] == seed_commitment(int(replay["seed"]))
    assert started["seedCommitment"] in await fairness.inner_text(), "the commitment is shown"
    oks = await page.locator('[data-testid^="fair-"]').evaluate_all("els => els.map(e => e.dataset.ok)")
    assert oks == ["true"] * (3 + 3), "commitment, deck size, first player and the three first hands"
    assert "공개한 약속 그대로" in await page.get_by_test_id("fairness-verdict").inner_text()
    await fairness.scroll_into_view_if_needed()
    await browser.screenshot("results-fairness-verified")


async def test_a_tampered_seed_is_caught(servers: Servers, browser: Browser) -> None:
    page = browser.page

    async def tamper(route: Route) -> None:
        response = await route.fetch()
        replay = json.loads(await response.text())
        replay["seed"] = str(int(replay["seed"]) + 1)
        await route.fulfill(response=response, body=json.dumps(replay))

    await page.goto(f"{servers.url}?demo=results")
    await page.get_by_test_id("verify-deal").tap()
    await _expect_attr(page.get_by_test_id("fairness"), "data-verdict", "ok")  # the fixture as recorded
    await page.route("**/demo/replay.json", tamper)
    await page.reload()
    await page.get_by_test_id("verify-deal").tap()
    fairness = page.get_by_test_id("fairness")
    await _expect_attr(fairness, "data-verdict", "mismatch")
    assert await page.get_by_test_id("fair-commitment").get_attribute("data-ok") == "false"
    assert "맞지 않아요" in await page.get_by_test_id("fairness-verdict").inner_text()
    await fairness.scroll_into_view_if_needed()
    await browser.screenshot("results-fairness-tampered")


async def test_sounds_play_until_muted_and_the_mute_is_remembered(servers: Servers, browser: Browser) -> None:
    page = browser.page
    await _create_room(page, servers.url, seats=2)
    await _fill_with_bots_and_start(page, bots=1)
    tapper = Tapper(browser)
    assert await tapper.wait_for_turn()
    await page.wait_for_function(f"() => {HOOK}.sounds.includes('turn')")
    await tapper.play_turn()
    assert "play" in await page.evaluate(f"{HOOK}.sounds")
    toggle = page.get_by_test_id("sound-toggle")
    assert await toggle.get_attribute("aria-pressed") == "true"
    await toggle.tap()
    assert await toggle.get_attribute("aria-pressed") == "false" and await toggle.inner_text() == "🔇"
    heard = len(await page.evaluate(f"{HOOK}.sounds"))
    if await tapper.wait_for_turn():
        await tapper.play_turn()
    assert len(await page.evaluate(f"{HOOK}.sounds")) == heard, "muted: nothing more is played"
    await page.reload()
    await _expect_attr(page.get_by_test_id("sound-toggle"), "aria-pressed", "false")
    assert await page.get_by_test_id("sound-toggle").get_attribute("aria-label") == "소리 꺼짐 (누르면 켜기)"


async def test_the_replay_steps_move_by_move_on_the_table(servers: Servers, browser: Browser) -> None:
    page = browser.page
    await page.goto(f"{servers.url}?demo=replay")
    replay = json.loads((STATIC / "demo" / "replay.json").read_text())
    plays = [e["event"] for e in replay["events"] if e["event"]["type"] == "cardPlayed"]
    frame = page.locator("#replay-frame")
    await frame.get_by_test_id("total").wait_for()
    step = page.get_by_test_id("replay-step")
    assert await step.inner_text() == f"1 / {len(plays) + 1}", "the deal, then one step per move"
    assert await frame.locator('[data-testid^="opponent-"]').count() == len(replay["players"])
    for n in range(3):
        await page.get_by_test_id("replay-next").tap()
        await _expect_attr(frame.get_by_test_id("pile"), "data-card", plays[n]["cardId"])
        await _expect_attr(frame.get_by_test_id("total"), "data-value", str(plays[n]["total"]))
    await browser.screenshot("replay-table")
    await page.get_by_test_id("replay-prev").tap()
    await _expect_attr(frame.get_by_test_id("total"), "data-value", str(plays[1]["total"]))
    await page.get_by_test_id("replay-play").tap()  # about one move a second
    await page.wait_for_timeout(2500)
    shown = int((await step.inner_text()).split(" / ")[0])
    assert 4 <= shown <= 6, f"a readable pace: step {shown} after 2.5 s from step 3"
    await page.get_by_test_id("replay-play").tap()


async def test_from_the_results_to_the_replay_and_back(servers: Servers, browser: Browser) -> None:
    page = browser.page
    await _create_room(page, servers.url, seats=2)
    await _fill_with_bots_and_start(page, bots=1)
    await _play_to_results(Tapper(browser))
    await page.get_by_test_id("open-replay").tap()
    await page.locator("#replay-frame").get_by_test_id("total").wait_for()
    await page.get_by_test_id("replay-next").tap()
    await page.locator('#replay-frame [data-testid="pile"][data-card]').wait_for()
    await page.get_by_test_id("replay-back").tap()
    await page.locator("#screen-results").wait_for(state="visible")
    assert not browser.log.sent("leaveRoom"), "back to the results, still in the room"
