"""Presets through the web lobby and table: pick one with its description, play it to the end.

Same real servers and Chromium as ``test_web_table.py``. Each game is created from the lobby's
preset picker (the description shown is the preset's own, in Korean, and in English after the
language toggle), played by tapping against bots, and checked on the table: its name, the gauge's
threshold marks for the online 33/66/99 version, tokens as coins, and the banners of the preset's
turn effects. Screenshots land in ``artifacts/screenshots/``.
"""

from __future__ import annotations

import pytest
from playwright.async_api import Page

from ninetynine.engine.rules.presets import preset, preset_names
from tests.browser.conftest import Browser, Servers
from tests.browser.test_web_table import HOOK, Tapper, _expect_attr

pytestmark = pytest.mark.browser

HUMAN = "지호"


async def _create_preset_room(
    page: Page, url: str, name: str, *, seats: int, house_rules: str = "", turn: str = "10"
) -> str:
    """Open the lobby, pick preset ``name`` (its description must show), create the room."""
    await page.goto(url)
    await _expect_attr(page.get_by_test_id("connection"), "data-state", "open")
    await page.get_by_test_id("player-name").fill(HUMAN)
    picker = page.get_by_test_id("opt-rules")
    await picker.locator(f'option[value="{name}"]').wait_for(state="attached")
    await picker.select_option(name)
    rules = preset(name)
    summary = page.get_by_test_id("rules-summary")
    assert (await summary.inner_text()).startswith(rules.summary)
    # What the preset replaces is not offered; the seats stay within its players.
    assert not await page.get_by_test_id("opt-lives").is_visible()
    fewest, most = rules.players
    offered = await page.get_by_test_id("opt-seats").locator("option").all_inner_texts()
    assert len(offered) == most - fewest + 1
    await page.get_by_test_id("opt-seats").select_option(str(seats))
    await page.get_by_test_id("opt-turnSeconds").select_option(turn)
    if house_rules:
        await page.get_by_test_id("opt-overrides").fill(house_rules)
    await page.get_by_test_id("create-room").tap()
    await page.get_by_test_id("waiting-room").wait_for()
    await _expect_attr(page.get_by_test_id("room-rules"), "data-rules", name)
    return (await page.get_by_test_id("room-code").inner_text()).strip()


async def _play_with_bots(browser: Browser, bots: int) -> None:
    page = browser.page
    for seat in range(1, bots + 1):
        await page.get_by_test_id("add-bot").tap()
        await page.locator(f'[data-testid="seat-{seat}"]:not(.free)').wait_for()
    await page.get_by_test_id("start-game").tap()
    await page.locator("#screen-table").wait_for(state="visible")


async def _play_to_results(tapper: Tapper) -> None:
    while await tapper.wait_for_turn():
        await tapper.play_turn()
    await tapper.page.locator("#screen-results").wait_for(state="visible")


def _events(browser: Browser, kind: str) -> list[dict[str, object]]:
    return [m["event"] for m in browser.log.received("event") if m["event"]["type"] == kind]


async def test_the_online_version_with_a_house_rule_marks_its_thresholds(
    servers: Servers, browser: Browser
) -> None:
    page = browser.page
    await _create_preset_room(page, servers.url, "na-online", seats=3, house_rules="tokens=3")
    await browser.screenshot("preset-na-online-waiting")
    sent = browser.log.sent("createRoom")[-1].message
    assert (sent["rules"], sent["overrides"]) == ("na-online", {"tokens": "3"})
    assert "lives" not in sent["options"] or sent["options"]["lives"] == "auto"
    await _play_with_bots(browser, bots=2)
    await _expect_attr(page.get_by_test_id("table-rules"), "data-rules", "na-online")
    marks = page.get_by_test_id("threshold-mark")
    assert [await m.get_attribute("data-at") for m in await marks.all()] == ["33", "66", "99"]
    assert await page.get_by_test_id("my-lives").get_attribute("data-lives") == "3"
    assert "🪙" in await page.get_by_test_id("my-lives").inner_text()
    await browser.screenshot("preset-na-online-table")
    tapper = Tapper(browser)
    await _play_to_results(tapper)
    await browser.screenshot("preset-na-online-results")
    assert _events(browser, "tokensPaid"), "the thresholds cost tokens"


@pytest.mark.parametrize(
    ("name", "seats", "marks"),
    [
        ("wikipedia", 3, []),
        ("na-1950s", 3, []),
        ("na-two-player-again", 2, []),
        ("na-points", 3, ["33", "66", "99"]),
    ],
)
async def test_a_preset_game_through_the_lobby_and_table(
    servers: Servers, browser: Browser, name: str, seats: int, marks: list[str]
) -> None:
    page = browser.page
    await _create_preset_room(page, servers.url, name, seats=seats)
    await _play_with_bots(browser, bots=seats - 1)
    await _expect_attr(page.get_by_test_id("table-rules"), "data-rules", name)
    shown = [await m.get_attribute("data-at") for m in await page.get_by_test_id("threshold-mark").all()]
    assert shown == marks
    # The game-points version keeps a running score, on every seat.
    points = preset(name).end.kind != "lastStanding"
    assert await page.get_by_test_id("my-score").count() == (1 if points else 0)
    await browser.screenshot(f"preset-{name}-table")
    # Help describes this preset, not the kr-product or classic card tables.
    await page.get_by_test_id("help-toggle").tap()
    summary = page.get_by_test_id("help-preset-summary")
    await summary.wait_for()
    assert await summary.inner_text() == preset(name).summary
    assert not await page.locator("#help .help-kr").first.is_visible()
    assert not await page.locator("#help .help-classic").first.is_visible()
    await page.get_by_test_id("help-close").tap()
    await _play_to_results(Tapper(browser))
    await browser.screenshot(f"preset-{name}-results")
    started = _events(browser, "gameStarted")
    assert started and started[-1]["rules"] == name
    assert browser.log.received("view")[-1]["view"]["rules"] == name


async def test_the_preset_picker_speaks_english_too(servers: Servers, browser: Browser) -> None:
    page = browser.page
    await page.goto(servers.url)
    await _expect_attr(page.get_by_test_id("connection"), "data-state", "open")
    await page.get_by_test_id("opt-rules").locator('option[value="ru-99"]').wait_for(state="attached")
    options = page.get_by_test_id("opt-rules").locator("option")
    names = await options.evaluate_all("os => os.map(o => o.value)")
    assert names[0] == "" and "kr-product" not in names and "classic" not in names
    assert names[1:] == [n for n in preset_names() if n not in ("kr-product", "classic")]
    await page.get_by_test_id("opt-rules").select_option("ru-99")
    await page.get_by_test_id("lang-toggle").tap()
    summary = await page.get_by_test_id("rules-summary").inner_text()
    assert summary.startswith(preset("ru-99").summary_en)
    await browser.screenshot("preset-picker-en")
    # Back to the spec's modes: their options are offered again, every seat count too.
    await page.get_by_test_id("opt-rules").select_option("")
    assert await page.get_by_test_id("opt-lives").is_visible()
    assert await page.get_by_test_id("opt-seats").locator("option").count() == 9


async def test_the_presets_turn_effects_and_payments_are_announced(
    servers: Servers, browser: Browser
) -> None:
    """The demo table of a na-online room: each preset event a game may or may not deal, as a banner."""
    page = browser.page
    await page.goto(f"{servers.url}?demo=presets")
    await page.wait_for_function(f"() => {HOOK}.banners.length === 4", timeout=20_000)
    await browser.screenshot("preset-banners")
    logged = [(b["kind"], b["text"]) for b in await page.evaluate(f"{HOOK}.banners")]
    assert [kind for kind, _ in logged] == ["skipped", "playAgain", "tokensPaid", "tokensPaid"]
    texts = [text for _, text in logged]
    assert "나 님이 민서 님 차례를 건너뛰었어요" in texts[0]
    assert "지호 님이 한 번 더" in texts[1]
    assert "민서 님이 토큰 1개를 냈어요" in texts[2] and "33" in texts[2]
    assert "지호 님이 99을(를) 넘겨 토큰 2개를 냈어요" in texts[3]
    marks = page.get_by_test_id("threshold-mark")
    assert [await m.get_attribute("data-at") for m in await marks.all()] == ["33", "66", "99"]
    await _expect_attr(page.get_by_test_id("table-rules"), "data-rules", "na-online")


async def test_the_deal_of_a_preset_with_its_own_deck_table_is_verified(
    servers: Servers, browser: Browser
) -> None:
    """002: two decks with more than four players (classic's table would say one below seven), and
    "공정성 확인" re-runs that deal from the revealed seed."""
    page = browser.page
    await _create_preset_room(page, servers.url, "na-seven-cards", seats=5)
    await _play_with_bots(browser, bots=4)
    await _play_to_results(Tapper(browser))
    started = _events(browser, "gameStarted")[-1]
    assert started["deckSize"] == 104
    await page.get_by_test_id("verify-deal").tap()
    fairness = page.get_by_test_id("fairness")
    await _expect_attr(fairness, "data-verdict", "ok")
    oks = await page.locator('[data-testid^="fair-"]').evaluate_all("els => els.map(e => e.dataset.ok)")
    assert oks == ["true"] * (3 + 5), "commitment, deck size, first player and the five first hands"
    await fairness.scroll_into_view_if_needed()
    await browser.screenshot("preset-na-seven-cards-fairness")


async def test_the_house_rules_fields_example_is_a_sheet_the_server_takes(
    servers: Servers, browser: Browser
) -> None:
    """The placeholder shows how to write a house-rules sheet; written as shown, it makes a room."""
    page = browser.page
    await page.goto(servers.url)
    await page.get_by_test_id("opt-rules").locator('option[value="na-standard"]').wait_for(state="attached")
    await page.get_by_test_id("opt-rules").select_option("na-standard")
    placeholder = await page.get_by_test_id("opt-overrides").get_attribute("placeholder") or ""
    example = placeholder.split(":", 1)[1].strip()
    await _create_preset_room(page, servers.url, "na-standard", seats=2, house_rules=example)
    sheet = dict(pair.strip().split("=") for pair in example.split(","))
    rooms = [m["room"] for m in browser.log.received("room")]
    assert rooms and rooms[-1]["rules"]["overrides"] == sheet
