"""003's ONO 99 at the web table: dead cards, the Play-2 debt answered with two cards, the exchange.

Same real servers and Chromium as ``test_web_table.py``. A game of ``ono99-2022`` is created from
the lobby's preset picker and played by tapping against a bot: whenever a Play 2 makes the human
owe two cards, the table shows it ("2장 내기") and the human plays two cards in that one turn,
tap by tap, the table staying on the human's turn for the second ("1장 더"). Only the bot's and
the deck's luck decide when a Play 2 reaches the human (about two games in five, by the engine's
own simulation of this policy), so games are played, each to its end, until one did, within a
bound far above what chance needs. Every ONO 99 dealt to the human shows as dead. The demo
tables (``?demo=ono``, ``?demo=ono-1980``) show what a game may or may not deal: four dead ONO
99s with the exchange offered, and a total below zero on the gauge (``?demo=ono-points``: a
round's counted hands). A live ``ono99-1980`` game goes below zero on the gauge, and a live
``ono99-2022-points`` game shows each counted hand and the points table. Every frame is checked
against the protocol's schema by the conftest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ninetynine.engine.rules.presets import preset, preset_names
from tests.browser.conftest import Browser, Servers
from tests.browser.test_web_table import GAME_TIMEOUT_MS, HOOK, Tapper, _expect_attr
from tests.browser.test_web_table_presets import _create_preset_room, _events, _play_with_bots

pytestmark = pytest.mark.browser

RULES = "ono99-2022"
DEAD_LABEL = "ONO 99 · 죽은 카드 (낼 수 없음)"
# A game with no two-card turn for the human: about 0.6 by the engine's simulation of this policy
# against the bot (2 players), nearer 0.75 in a few browser runs; 40 games all without one: 1e-5.
# A game lasts about 5 s here.
MAX_GAMES = 40

OWED = """() => document.querySelector('[data-testid="my-turn"]') === null ? null
  : Number(document.querySelector('[data-testid="obligation"]')?.dataset.owed ?? 0)"""
DEAD_CHECK = """els => els.map(e => ({
  id: e.dataset.testid.slice('card-'.length),
  kind: [...e.classList].find(c => c.startsWith('kind-')).slice('kind-'.length),
  dead: e.dataset.dead === 'true',
  label: e.getAttribute('aria-label'),
  badge: e.querySelector('[data-testid="card-badge"]')?.textContent ?? null,
}))"""


@dataclass
class OnoTapper(Tapper):
    """Plays like the engine's simulation: a Play 2 when it has one, owing two never a card that
    passes the debt on (so two cards are played), else the highest number card."""

    owed: int = 0
    dead_seen: int = 0
    two_card_turns: int = 0
    minus_first: bool = False  # the 1980 test: a -10 whenever there is one, to go below zero
    banners: list[dict[str, str]] = field(default_factory=list)  # every game's (each loads the page)

    def pick(self, playable: list[dict[str, Any]]) -> dict[str, Any]:
        if self.minus_first:
            for card in playable:
                if card["kind"] == "minus":
                    return card
        if self.owed == 2:
            first = [c for c in playable if c["kind"] != "playTwo"]
            if first:
                return max(first, key=lambda c: (c["kind"] == "add", c["face"].isdigit() and int(c["face"])))
            return playable[0]
        for card in playable:
            if card["kind"] == "playTwo":
                return card
        numbers = [c for c in playable if c["kind"] == "add"]
        return max(numbers, key=lambda c: int(c["face"])) if numbers else playable[0]

    async def check_dead_cards(self) -> None:
        """Every ONO 99 in the hand is marked dead: the class, the badge and the Korean label."""
        cards = await self.page.eval_on_selector_all(
            '[data-testid="hand"] > [data-testid^="card-"]', DEAD_CHECK
        )
        for card in cards:
            assert card["dead"] == (card["kind"] == "ono99"), card
            if card["dead"]:
                self.dead_seen += 1
                assert (card["badge"], card["label"]) == ("죽은 카드", DEAD_LABEL), card

    async def play_ono_turn(self) -> None:
        page = self.page
        await self.check_dead_cards()
        owed = await page.evaluate(OWED)
        self.owed = owed or 0
        exchange = page.get_by_test_id("discard-ono")
        if await exchange.count() and not any(c["playable"] for c in await self.hand()):
            # Four dead cards and nothing else: swap them (the turn goes on with four new cards).
            given = (await exchange.get_attribute("data-cards") or "").split()
            await exchange.tap()
            await page.wait_for_function(
                """(ids) => !document.querySelector('#screen-results').hidden
                  || ids.every(id => !document.querySelector(`[data-testid="card-${id}"]`))""",
                arg=given,
                timeout=GAME_TIMEOUT_MS,
            )
            self.moves.append("discard")
            return
        played = len(self.moves)
        await self.play_turn()
        if self.owed != 2 or len(self.moves) == played or self.moves[-1] == "playTwo":
            return
        # The first of two cards is played: the table stays on my turn, owing one more, and the
        # second card is tapped like any other.
        # Read in one go the moment it shows: the badges on the status and on my own seat.
        second = await page.wait_for_function(
            f"""() => !document.querySelector('#screen-results').hidden ? {{state: 'over'}}
              : ({OWED})() === 1 ? {{state: 'second',
                  seat: document.querySelector('[data-testid="my-owes"]')?.dataset.owed,
                  status: document.querySelector('[data-testid="obligation"]').textContent}}
              : ({OWED})() === null || ({OWED})() === 2 ? {{state: 'over'}} : null""",
            timeout=GAME_TIMEOUT_MS,
        )
        shown = await second.json_value()
        if shown["state"] != "second":
            # The card passed the debt on (and it may have come back: a new turn owing two), or
            # nothing was left to play the second with (the loss ended the debt).
            return
        assert (shown["seat"], shown["status"]) == ("1", "1장 더"), shown
        if not self.two_card_turns:
            await self.browser.screenshot("ono-second-card")
        await self.check_dead_cards()
        self.owed = 1
        sent = len(self.browser.log.sent("play"))
        await self.play_turn()
        if len(self.browser.log.sent("play")) > sent:  # not overtaken by the turn's deadline
            self.two_card_turns += 1


async def _play_one_game(browser: Browser, servers: Servers, tapper: OnoTapper) -> None:
    page = browser.page
    await _create_preset_room(page, servers.url, RULES, seats=2)
    await _play_with_bots(browser, bots=1)
    await _expect_attr(page.get_by_test_id("table-rules"), "data-rules", RULES)
    while await tapper.wait_for_turn():
        await tapper.play_ono_turn()
    await page.locator("#screen-results").wait_for(state="visible")
    tapper.banners += await page.evaluate(f"{HOOK}.banners")


async def test_a_game_of_ono99_with_a_play_two_answered_by_tapping(
    servers: Servers, browser: Browser
) -> None:
    page = browser.page
    tapper = OnoTapper(browser)
    games = 0
    # Dead cards stay in the hand, so one is nearly always seen by the time a Play 2 came.
    while not (tapper.two_card_turns and tapper.dead_seen) and games < MAX_GAMES:
        if games:
            await page.get_by_test_id("back-to-lobby").tap()
        await _play_one_game(browser, servers, tapper)
        games += 1
    await browser.screenshot("ono-results")
    assert tapper.two_card_turns, f"no Play 2 reached the human in {games} games"
    assert tapper.dead_seen, f"no ONO 99 was dealt to the human in {games} games"

    mine = {m["playerId"] for m in browser.log.received("joined")}  # one seat per game
    events = [m["event"] for m in browser.log.received("event")]
    # Owed two: the server said so, the first card kept the turn, the second card ended it.
    answered = [
        i
        for i, e in enumerate(events)
        if e["type"] == "secondCardOwed"
        and e["player"] in mine
        and any(
            p["type"] == "obligationPassed" and p["player"] == e["player"] for p in events[max(0, i - 30) : i]
        )
    ]
    assert answered, "a secondCardOwed for the human, after an obligationPassed to them"
    pairs = []
    for i in answered:
        before = [e for e in events[:i] if e["type"] == "cardPlayed"][-1]
        after = next((e for e in events[i:] if e["type"] == "cardPlayed"), None)
        assert before["player"] == events[i]["player"], before
        pairs.append((before, after))
    assert any(
        a is not None and a["player"] == b["player"] and (b["source"], a["source"]) == ("player", "player")
        for b, a in pairs
    ), "both owed cards tapped in one turn"
    banners = tapper.banners
    owed = [b["text"] for b in banners if b["kind"] == "obligationPassed"]
    assert any("이번 차례에 2장을 내요" in text for text in owed), owed
    assert any(b["kind"] == "secondCardOwed" and b["text"].startswith("☝️ 한 장 더") for b in banners)
    # Every tap that played reached the server as the human's own move, none refused.
    by_player = [
        e for e in events if e["type"] == "cardPlayed" and e["player"] in mine and e["source"] == "player"
    ]
    sent = browser.log.sent("play")
    assert len([f for f in sent if not f.message["action"].get("discard")]) == len(by_player)
    assert {p["clientSeq"] for p in browser.log.received("played")} == {f.message["clientSeq"] for f in sent}
    assert not browser.log.received("error"), browser.log.received("error")
    assert all(e["rules"] == RULES for e in _events(browser, "gameStarted"))


async def test_the_ono_demo_marks_dead_cards_the_debt_and_the_exchange(
    servers: Servers, browser: Browser
) -> None:
    """?demo=ono: my turn owing two, four dead ONO 99s; the exchange is the one move offered."""
    page = browser.page
    await page.goto(f"{servers.url}?demo=ono")
    await page.wait_for_function(f"() => {HOOK}.banners.length === 3", timeout=20_000)
    cards = await page.eval_on_selector_all('[data-testid="hand"] > [data-testid^="card-"]', DEAD_CHECK)
    assert len(cards) == 4 and all(c["dead"] and c["kind"] == "ono99" for c in cards), cards
    assert {c["label"] for c in cards} == {DEAD_LABEL}
    assert {c["badge"] for c in cards} == {"죽은 카드"}
    status = page.get_by_test_id("obligation")
    assert (await status.get_attribute("data-owed"), await status.inner_text()) == ("2", "2장 내기")
    assert await page.get_by_test_id("my-owes").get_attribute("data-owed") == "2"
    logged = [(b["kind"], b["text"]) for b in await page.evaluate(f"{HOOK}.banners")]
    assert [kind for kind, _ in logged] == ["obligationPassed", "secondCardOwed", "cardsDiscarded"]
    assert logged[0][1].startswith("✌️ 민서 님의 카드: 이번 차례에 2장을 내요")
    assert logged[1][1] == "☝️ 봇 1 님이 두 번째 카드를 내요"
    assert logged[2][1] == "♻️ 나 님이 ONO 99 4장을 버리고 새 카드 4장을 받았어요"
    await browser.screenshot("ono-demo-dead-cards")
    # A dead card says why when tapped; the exchange button sends the view's own discard play.
    toast = page.get_by_test_id("toast")
    await page.get_by_test_id(f"card-{cards[0]['id']}").tap()
    await toast.wait_for(state="visible")
    assert await toast.inner_text() == "ONO 99는 지금 낼 수 없는 카드예요"
    exchange = page.get_by_test_id("discard-ono")
    assert await exchange.inner_text() == "♻️ ONO 99 4장 바꾸기"
    assert (await exchange.get_attribute("data-cards") or "").split() == [c["id"] for c in cards]
    await exchange.tap()
    await page.wait_for_function(
        """() => document.querySelector('[data-testid="toast"]').textContent.includes('"discard"')"""
    )
    sent = await toast.inner_text()
    assert '"discard":["OX-1","OX-2","OX-3","OX-4"]' in sent, sent
    # In English.
    await page.get_by_test_id("lang-toggle").tap()
    label = await page.get_by_test_id(f"card-{cards[0]['id']}").get_attribute("aria-label")
    assert label == "ONO 99 · dead card (cannot be played)"
    assert await page.get_by_test_id("obligation").inner_text() == "Play 2"
    assert await page.get_by_test_id("discard-ono").inner_text() == "♻️ Swap 4 ONO 99s"
    assert await page.locator('[data-testid="card-badge"]').first.inner_text() == "Dead"


async def test_a_total_below_zero_runs_the_gauge_the_other_way(servers: Servers, browser: Browser) -> None:
    """?demo=ono-1980: the 1980 -10 takes the total below 0; an opponent owes two cards."""
    page = browser.page
    await page.goto(f"{servers.url}?demo=ono-1980")
    total = page.get_by_test_id("total")
    await _expect_attr(total, "data-value", "-10")
    await page.wait_for_function(
        "() => document.querySelector('[data-testid=\"total\"]').textContent === '−10'"
    )
    assert await total.get_attribute("data-sign") == "negative"
    gauge = page.get_by_test_id("gauge")
    assert (await gauge.get_attribute("data-level"), await gauge.get_attribute("data-sign")) == (
        "negative",
        "negative",
    )
    arc = page.locator(".gauge-arc")
    assert "scale(-1 1)" in (await arc.get_attribute("transform") or ""), "counter-clockwise below zero"
    offset = float(await arc.get_attribute("stroke-dashoffset") or "0")
    circumference = float(await arc.get_attribute("stroke-dasharray") or "1")
    assert offset == pytest.approx(circumference * (1 - 10 / 99)), "an arc of 10 out of 99"
    owes = page.get_by_test_id("opponent-p2").get_by_test_id("seat-owes")
    assert (await owes.get_attribute("data-owed"), await owes.inner_text()) == ("2", "2장 내기")
    assert await page.get_by_test_id("my-owes").count() == 0
    # The -10 from -10 previews -20: negatives written with a real minus sign.
    minus = page.locator('[data-testid="hand"] > .kind-minus').first
    await minus.tap()
    assert (await page.get_by_test_id("preview").inner_text()).startswith("내면 → −20")
    await browser.screenshot("ono-demo-negative-total")


async def test_a_points_game_shows_each_counted_hand_and_the_points_table(
    servers: Servers, browser: Browser
) -> None:
    """ono99-2022-points: each hand left at a round's end is laid down and counted (handScored);
    the table shows the last round's hands with their cards and points, and a points table by
    round, on the table and on the results screen, whose totals are the view's scores."""
    page = browser.page
    name = "ono99-2022-points"
    await _create_preset_room(page, servers.url, name, seats=2)
    await _play_with_bots(browser, bots=1)
    tapper = OnoTapper(browser)
    while await tapper.wait_for_turn():
        await tapper.play_ono_turn()
    await page.locator("#screen-results").wait_for(state="visible")
    events = [m["event"] for m in browser.log.received("event")]
    scored: list[tuple[int, dict[str, Any]]] = []
    round_no = 1
    for e in events:
        if e["type"] == "roundStarted":
            round_no = e["round"]
        elif e["type"] == "handScored":
            scored.append((round_no, e))
    assert scored, "a points game counts hands"
    final = browser.log.received("view")[-1]["view"]
    # The last round's counted hands, as laid down: the cards and the points.
    last = scored[-1][0]
    strip = page.get_by_test_id("round-scoring")
    assert await strip.get_attribute("data-round") == str(last)
    shown = await strip.get_by_test_id("hand-scored").evaluate_all(
        """els => els.map(e => ({player: e.dataset.player, points: Number(e.dataset.points),
          cards: [...e.querySelectorAll('[data-testid="scored-card"]')].map(c => c.dataset.card)}))"""
    )
    assert shown == [
        {"player": e["player"], "points": e["points"], "cards": e["cards"]} for r, e in scored if r == last
    ]
    # The points table on the results screen: a cell per round and player, the view's scores.
    table = page.get_by_test_id("points-results").get_by_test_id("points-table")
    await table.wait_for()
    await browser.screenshot("ono-points-results")
    for p in final["players"]:
        row = table.locator(f'[data-testid="points-row"][data-player="{p["id"]}"]')
        assert await row.get_attribute("data-score") == str(p["score"])
        cells = await row.locator("td[data-round]").evaluate_all(
            "els => els.map(e => [Number(e.dataset.round), e.dataset.points])"
        )
        for r, points in cells:
            mine = [e["points"] for rr, e in scored if rr == r and e["player"] == p["id"]]
            assert points == (str(sum(mine)) if mine else ""), (p["id"], r, points, mine)
        assert sum(e["points"] for _, e in scored if e["player"] == p["id"]) == p["score"]
    assert {r for r, _ in scored} == {
        int(c)
        for c in await table.locator("tbody tr")
        .first.locator("td[data-round]")
        .evaluate_all("els => els.map(e => e.dataset.round)")
    }
    banners = [b for b in await page.evaluate(f"{HOOK}.banners") if b["kind"] == "handScored"]
    assert banners and banners[0]["text"].startswith("🧮 ")
    # The replay steps through the rounds too: a counted hand is part of its move's line.
    await page.get_by_test_id("open-replay").tap()
    await page.locator("#screen-replay").wait_for(state="visible")
    steps = int((await page.get_by_test_id("replay-step").inner_text()).split("/")[1])
    texts = []
    for _ in range(steps):
        texts.append(await page.locator("#replay-text").inner_text())
        await page.get_by_test_id("replay-next").tap()
    assert any("손패" in text and "점" in text for text in texts), texts[-5:]


async def test_the_points_demo_lays_down_the_round_and_speaks_english(
    servers: Servers, browser: Browser
) -> None:
    """?demo=ono-points: three hands counted in round 1 (cards and points), the table by round."""
    page = browser.page
    await page.goto(f"{servers.url}?demo=ono-points")
    await page.wait_for_function(f"() => {HOOK}.banners.length === 3", timeout=20_000)
    strip = page.get_by_test_id("round-scoring")
    assert await strip.get_attribute("data-round") == "1"
    assert (await strip.inner_text()).startswith("1라운드 점수")
    rows = strip.get_by_test_id("hand-scored")
    assert await rows.count() == 3
    first = rows.first
    assert (await first.get_attribute("data-player"), await first.get_attribute("data-points")) == (
        "p2",
        "64",
    )
    faces = await first.get_by_test_id("scored-card").all_inner_texts()
    assert faces == ["2", "99", "10", "7"], "ids drawn as their faces (the ONO 99 as 99)"
    assert (await first.inner_text()).replace("\n", " ").endswith("+64점")
    await page.get_by_test_id("points-details").locator("summary").tap()
    table = page.get_by_test_id("points-table")
    await table.wait_for(state="visible")
    row = table.locator('[data-testid="points-row"][data-player="p2"]')
    assert await row.get_attribute("data-score") == "64"
    assert await row.locator('td[data-round="1"]').inner_text() == "64"
    await browser.screenshot("ono-demo-points")
    await page.get_by_test_id("lang-toggle").tap()
    assert (await page.get_by_test_id("round-scoring").inner_text()).startswith("Round 1 scoring")
    assert await page.get_by_test_id("points-details").locator("summary").inner_text() == "Points table"


# Each total the table renders, with the gauge's state at that moment (renderTotal sets them at once).
RECORD_TOTALS = """() => {
  const total = document.querySelector('[data-testid="total"]');
  window.__totals = [];
  new MutationObserver(() => window.__totals.push({
    value: Number(total.dataset.value), sign: total.dataset.sign,
    level: document.querySelector('[data-testid="gauge"]').dataset.level,
    transform: document.querySelector('.gauge-arc').getAttribute('transform'),
  })).observe(total, { attributes: true, attributeFilter: ['data-value'] });
}"""


async def test_a_game_of_the_1980_edition_goes_below_zero_on_the_gauge(
    servers: Servers, browser: Browser
) -> None:
    """ono99-1980: «총계가 0 아래로 내려가 마이너스가 되도록 만들 수 있습니다.» The human spends each -10
    at once; games are played until the total went below zero (a -10 reached a hand: nearly always)."""
    page = browser.page
    tapper = OnoTapper(browser, minus_first=True)
    await page.goto(servers.url)
    await _expect_attr(page.get_by_test_id("connection"), "data-state", "open")
    await page.evaluate(RECORD_TOTALS)
    await page.get_by_test_id("player-name").fill("지호")
    await page.get_by_test_id("opt-rules").locator('option[value="ono99-1980"]').wait_for(state="attached")
    for games in range(MAX_GAMES):
        if games:
            await page.get_by_test_id("back-to-lobby").tap()
        # The lobby opens in the same page (no reload): the recorder keeps watching.
        await page.get_by_test_id("opt-rules").select_option("ono99-1980")
        await page.get_by_test_id("opt-seats").select_option("2")
        await page.get_by_test_id("create-room").tap()
        await page.get_by_test_id("waiting-room").wait_for()
        await _play_with_bots(browser, bots=1)
        while await tapper.wait_for_turn():
            await tapper.play_ono_turn()
        await page.locator("#screen-results").wait_for(state="visible")
        if min(m["view"]["total"] for m in browser.log.received("view")) < 0:
            break
    totals = [m["view"]["total"] for m in browser.log.received("view")]
    assert min(totals) < 0, "no total below zero"
    rendered = await page.evaluate("window.__totals")
    below = [r for r in rendered if r["value"] < 0]
    assert below, "the table rendered a total below zero"
    for r in below:
        assert (r["sign"], r["level"]) == ("negative", "negative"), r
        assert "scale(-1 1)" in r["transform"], r
    assert all(r["sign"] == "positive" and "scale" not in r["transform"] for r in rendered if r["value"] >= 0)
    assert not browser.log.received("error"), browser.log.received("error")


async def test_the_lobby_offers_every_ono_preset_with_its_description(
    servers: Servers, browser: Browser
) -> None:
    """The preset picker lists the server's presets: each ONO 99 one, described in Korean and English."""
    page = browser.page
    await page.goto(servers.url)
    await _expect_attr(page.get_by_test_id("connection"), "data-state", "open")
    picker = page.get_by_test_id("opt-rules")
    await picker.locator(f'option[value="{RULES}"]').wait_for(state="attached")
    offered = await picker.locator("option").evaluate_all("os => os.map(o => o.value)")
    ono = [n for n in preset_names() if n.startswith("ono99-")]
    assert len(ono) >= 3 and [n for n in offered if n.startswith("ono99-")] == ono
    summary = page.get_by_test_id("rules-summary")
    for name in ono:
        await picker.select_option(name)
        assert (await summary.inner_text()).startswith(preset(name).summary)
    await page.get_by_test_id("lang-toggle").tap()
    for name in ono:
        await picker.select_option(name)
        assert (await summary.inner_text()).startswith(preset(name).summary_en)
