"""Rooms that play a preset with house rules, through the real session on both stores.

A room names a preset and overrides at CreateRoom; they are refused there when the engine would
refuse them, kept in the room document (a restart, a resume from the first event and a rematch
all see them), and handed to the engine's Setup: the game played is the preset with the house
rule, end to end, on the engine service and on the in-process engine.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from itertools import pairwise

import grpc
import pytest

from ninetynine.engine.rules.presets import preset_names
from ninetynine.engine.v1 import events_pb2
from ninetynine.session.v1 import session_service_pb2 as pb
from tests.session.helpers import ENGINE_DOMAIN, ENGLISH, is_english, is_korean, refused

# na-online's thresholds with 3 tokens instead of 9: a player pays at most 3 before being out.
PRESET, HOUSE_RULES, TOKENS = "na-online", {"tokens": "3"}, 3


async def _finished(stub, room_id: str) -> pb.Room:
    for _ in range(600):
        room: pb.Room = (await stub.GetRoom(pb.GetRoomRequest(room_id=room_id))).room
        if room.phase == pb.ROOM_PHASE_FINISHED:
            return room
        await asyncio.sleep(0.05)
    raise AssertionError("the game did not end")


@pytest.mark.parametrize("engine", ["remote", "local"])
async def test_a_preset_with_a_house_rule_plays_to_the_end_and_keeps_its_rules(
    make_stack, engine: str
) -> None:
    target = "local" if engine == "local" else None
    stack = await make_stack(time_scale=0.005, engine_target=target)
    created = await stack.stub.CreateRoom(
        pb.CreateRoomRequest(name="A", max_seats=3, rules=PRESET, overrides=HOUSE_RULES)
    )
    rules = created.room.rules
    assert (rules.name, dict(rules.overrides), list(rules.thresholds)) == (PRESET, HOUSE_RULES, [33, 66, 99])
    assert rules.summary.startswith("온라인") and rules.summary_en.startswith("Online")
    assert (rules.min_players, rules.max_players) == (2, 10)
    room_id = created.room.room_id
    for _ in range(2):
        await stack.stub.AddBot(pb.AddBotRequest(token=created.seat_token))
    started = await stack.stub.StartGame(pb.StartGameRequest(token=created.seat_token))
    assert started.room.rules == rules

    # Nobody human acts: the host's turns end on their deadline, the bots play their own.
    await _finished(stack.stub, room_id)
    replay = await stack.stub.GetReplay(pb.GetReplayRequest(room_id=room_id))
    assert replay.rules == rules
    assert {m.source for m in replay.moves} == {"timeout", "bot"}
    games = [e.game for e in replay.events if e.HasField("game")]
    game_started = next(g.game_started for g in games if g.HasField("game_started"))
    assert (game_started.rules, game_started.lives) == (PRESET, TOKENS)
    # The thresholds cost tokens, and the house rule's 3 are all anybody had to pay with.
    paid: Counter[str] = Counter()
    for g in games:
        if g.HasField("tokens_paid"):
            paid[g.tokens_paid.player_id] += g.tokens_paid.tokens
            assert g.tokens_paid.at in (33, 66, 99)
    assert paid and max(paid.values()) <= TOKENS
    assert len(replay.result.ranking) == 3

    # A restarted session reads the same room back: its rules, and from the first event on.
    await stack.close()
    again = await make_stack(time_scale=0.005, engine_target=target)
    assert (await again.stub.GetRoom(pb.GetRoomRequest(room_id=room_id))).room.rules == rules
    stream = again.stub.Subscribe(pb.SubscribeRequest(token=created.seat_token, after_seq=0))
    async for item in stream:
        if item.HasField("event") and item.event.game.HasField("game_started"):
            assert item.event.game.game_started.rules == PRESET
        if item.HasField("view") and item.view.HasField("view"):
            assert item.view.view.rules == PRESET
            assert item.view.room.rules == rules
            break
    stream.cancel()
    # "한 판 더" plays the same preset and house rules.
    rematch = await again.stub.Rematch(pb.RematchRequest(token=created.seat_token))
    assert rematch.joined.room.rules == rules


async def test_bad_rules_are_refused_at_create_room_with_the_engines_reason(make_stack) -> None:
    stack = await make_stack()
    create = stack.stub.CreateRoom

    unknown = await refused(
        create(pb.CreateRoomRequest(name="A", max_seats=3, rules="no-such-game")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "UNKNOWN_RULES",
        ENGINE_DOMAIN,
    )
    assert is_korean(unknown.details())
    english = await refused(
        create(pb.CreateRoomRequest(name="A", max_seats=3, rules="no-such-game"), metadata=ENGLISH),
        grpc.StatusCode.INVALID_ARGUMENT,
        "UNKNOWN_RULES",
        ENGINE_DOMAIN,
    )
    assert is_english(english.details()) and "no-such-game" in (english.details() or "")
    for overrides in (
        {"teleport": "1"},  # no such house rule
        {"tokens": "many"},  # not a value it takes
        {f"k{i}": "1" for i in range(17)},  # more than a sheet holds
        {"tokens": "9" * 33},  # longer than any value
        {"t" * 33: "1"},  # longer than any key
    ):
        await refused(
            create(pb.CreateRoomRequest(name="A", max_seats=3, rules="na-standard", overrides=overrides)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_OVERRIDE",
            ENGINE_DOMAIN,
        )
    # House rules with no preset: the mode of the options, changed (refused here: a bad value).
    await refused(
        create(pb.CreateRoomRequest(name="A", max_seats=3, overrides={"tokens": "lots"})),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_OVERRIDE",
        ENGINE_DOMAIN,
    )
    seats = await refused(
        create(pb.CreateRoomRequest(name="A", max_seats=6, rules="ru-99"), metadata=ENGLISH),
        grpc.StatusCode.INVALID_ARGUMENT,
        "SEATS_OUTSIDE_RULES",
    )
    assert seats.details() == "ru-99 is for 2 to 5 players, not 6 seats"
    # Nothing was stored.
    assert not (await stack.stub.ListRooms(pb.ListRoomsRequest())).rooms
    # Within its players range, the same preset is fine; the spec's modes need no rules.
    ok = await create(pb.CreateRoomRequest(name="A", max_seats=5, rules="ru-99"))
    assert ok.room.rules.name == "ru-99" and (ok.room.rules.min_players, ok.room.rules.max_players) == (2, 5)
    plain = await create(pb.CreateRoomRequest(name="A", max_seats=3))
    assert not plain.room.HasField("rules")
    house = await create(pb.CreateRoomRequest(name="A", max_seats=3, overrides={"tokens": "2"}))
    assert (house.room.rules.name, dict(house.room.rules.overrides)) == ("kr-product", {"tokens": "2"})


async def test_list_rules_offers_every_preset(make_stack) -> None:
    stack = await make_stack()
    listed = await stack.stub.ListRules(pb.ListRulesRequest())
    assert [p.name for p in listed.presets] == list(preset_names())
    assert all(p.summary and p.summary_en and p.source for p in listed.presets)
    assert all(2 <= p.min_players <= p.max_players <= 10 for p in listed.presets)
    online = next(p for p in listed.presets if p.name == PRESET)
    assert list(online.thresholds) == [33, 66, 99]


async def test_a_locked_king_says_why_in_the_seats_view(make_stack) -> None:
    """002's start-card version: a King may not be played in a player's first five turns; the
    session's view of the seat says so with the rank and the turn count, in the caller's language."""
    stack = await make_stack(time_scale=1.0)
    for _ in range(40):  # a King among three cards dealt: about one deal in five
        created = await stack.stub.CreateRoom(
            pb.CreateRoomRequest(name="A", max_seats=2, rules="na-start-card")
        )
        await stack.stub.AddBot(pb.AddBotRequest(token=created.seat_token))
        await stack.stub.StartGame(pb.StartGameRequest(token=created.seat_token))
        request = pb.GetViewRequest(token=created.seat_token)
        view = (await stack.stub.GetView(request, metadata=ENGLISH)).view
        kings = [c for c in view.hand if c.card.id.startswith("K")]
        if kings:
            break
    else:
        pytest.fail("no deal gave the host a King")
    assert [(c.reason, c.reason_message) for c in kings[0].choices] == [
        ("CARD_TOO_EARLY", "A K cannot be played in your first 5 turns")
    ]
    korean = (await stack.stub.GetView(request)).view
    (king,) = (c for c in korean.hand if c.card.id == kings[0].card.id)
    assert [c.reason_message for c in king.choices] == ["K은(는) 내 차례 5번이 지나야 낼 수 있어요"]


def _second_cards(games: list[events_pb2.Event]) -> list[str]:
    """The debtors who, after the first of two owed cards, started a turn for the second one."""
    out = []
    for i, g in enumerate(games):
        if g.HasField("second_card_owed"):
            after = next(x for x in games[i:] if x.HasField("turn_started") or x.HasField("eliminated"))
            if after.HasField("turn_started"):
                assert after.turn_started.player_id == g.second_card_owed.player_id
                out.append(after.turn_started.player_id)
    return out


@pytest.mark.parametrize("engine", ["remote", "local"])
async def test_an_ono99_play_two_is_played_card_by_card_on_the_clock(make_stack, engine: str) -> None:
    """003's Play 2 through the session: the debtor's first card is a move, the second another, each
    on its own deadline (the rules start a new turn for the same player, as with play-again), by the
    bots and by the timeout policy alike. Games are dealt until one has a second card played."""
    target = "local" if engine == "local" else None
    stack = await make_stack(time_scale=0.005, engine_target=target)
    for _ in range(10):
        created = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="O", max_seats=3, rules="ono99-2022"))
        for _ in range(2):
            await stack.stub.AddBot(pb.AddBotRequest(token=created.seat_token))
        await stack.stub.StartGame(pb.StartGameRequest(token=created.seat_token))
        await _finished(stack.stub, created.room.room_id)
        replay = await stack.stub.GetReplay(pb.GetReplayRequest(room_id=created.room.room_id))
        games = [e.game for e in replay.events if e.HasField("game")]
        if _second_cards(games):
            break
    else:
        raise AssertionError("no game of ten had a second owed card played")
    assert any(g.HasField("obligation_passed") for g in games)
    players = [m.player_id for m in replay.moves]
    assert any(a == b for a, b in pairwise(players))  # the two cards are two moves of one player
    assert {m.source for m in replay.moves} <= {"timeout", "bot"}
