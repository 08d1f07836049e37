"""The trick-taking 99 hosted by the session through the game registry, over real servers (an
engine, SQLite and the real Redis): rooms of three, bots, a deadline for every decision, plays of
every kind, reconnects, results across deals and the replay; nobody sees another hand or a
face-down bid.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable

import grpc
import pytest

from ninetynine.engine.v1 import game_pb2, trick_pb2
from ninetynine.session.v1 import session_service_pb2 as pb
from tests.session.conftest import Stack
from tests.session.helpers import eventually, only_error_info, refused, wait_finished

MakeStack = Callable[..., Awaitable[Stack]]
C = grpc.StatusCode
# A short match: the first to 50, at most nine deals.
SHORT = trick_pb2.TrickOptions(target=50, max_deals=9)
BID = trick_pb2.TRICK_ACTION_KIND_BID
ANNOUNCE = trick_pb2.TRICK_ACTION_KIND_ANNOUNCE
PLAY = trick_pb2.TRICK_ACTION_KIND_PLAY


async def _room(
    stack: Stack, bots: int = 2, options: trick_pb2.TrickOptions = SHORT
) -> pb.CreateRoomResponse:
    created = await stack.stub.CreateRoom(
        pb.CreateRoomRequest(name="지호", max_seats=3, game="trick", trick_options=options)
    )
    for _ in range(bots):
        await stack.stub.AddBot(pb.AddBotRequest(token=created.seat_token))
    return created


async def _view(stack: Stack, token: str) -> pb.GetViewResponse:
    view: pb.GetViewResponse = await stack.stub.GetView(pb.GetViewRequest(token=token))
    return view


def _decision(view: trick_pb2.TrickView) -> game_pb2.Action:
    """The viewer's move: the first three cards as the bid, announce, the first playable card."""
    if view.phase == trick_pb2.TRICK_PHASE_BIDDING:
        cards = [c.card.id for c in view.hand[:3]]
        return game_pb2.Action(trick=trick_pb2.TrickAction(kind=BID, cards=cards))
    if view.phase == trick_pb2.TRICK_PHASE_ANNOUNCING:
        return game_pb2.Action(trick=trick_pb2.TrickAction(kind=ANNOUNCE))
    card = next(c.card.id for c in view.hand if c.playable)
    return game_pb2.Action(trick=trick_pb2.TrickAction(kind=PLAY, card=card))


async def test_a_trick_room_has_three_seats_and_says_which_game_it_hosts(make_stack: MakeStack) -> None:
    """Issue 19: "rooms, three seats" — the room, the lobby list and the refusals know the game."""
    stack = await make_stack()
    created = await _room(stack, bots=1)
    room = created.room
    assert room.game == "trick" and room.max_seats == 3 and room.trick_options.target == 50
    await refused(
        stack.stub.StartGame(pb.StartGameRequest(token=created.seat_token)),
        C.FAILED_PRECONDITION,
        "NOT_ENOUGH_PLAYERS",
    )
    listed = await stack.stub.ListRooms(pb.ListRoomsRequest())
    assert {r.room_id: r.game for r in listed.rooms}[room.room_id] == "trick"
    for seats in (2, 4):
        err = await refused(
            stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=seats, game="trick")),
            C.INVALID_ARGUMENT,
            "SEATS_OUTSIDE_RULES",
        )
        assert only_error_info(err).metadata["maxPlayers"] == "3"
    await refused(
        stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=3, game="chess")),
        C.INVALID_ARGUMENT,
        "UNKNOWN_GAME",
    )
    # The adding game's rooms are as before: no game named.
    adding = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="B", max_seats=2))
    assert adding.room.game == "" and not adding.room.HasField("trick_options")


async def test_bids_announcements_and_cards_are_played_and_views_keep_the_secrets(
    make_stack: MakeStack,
) -> None:
    """The seat plays every kind of decision through Play; its view has its hand and bid, never
    another's hand or face-down bid; a card off suit is refused with the state untouched."""
    stack = await make_stack(time_scale=1.0, bot_think_ms=5)
    created = await _room(stack)
    token = created.seat_token
    spectator = (await stack.stub.Spectate(pb.SpectateRequest(room_id=created.room.room_id))).spectator_token
    await stack.stub.StartGame(pb.StartGameRequest(token=token))
    seq = 0
    kinds: set[int] = set()
    refused_off_suit = False
    while True:
        view = (await _view(stack, token)).trick
        watched = (await _view(stack, spectator)).trick
        assert not watched.hand and not watched.HasField("my_bid") and not watched.viewer_id
        for seen in (view, watched):  # read one after the other: each against its own state
            for player in seen.players:
                if player.id != "p1" and player.HasField("bid"):
                    # A bid is face up only for the declarer or once its nine cards are played.
                    assert player.id == seen.declarer or player.hand_count == 0
        if view.deal > 1 or view.phase == trick_pb2.TRICK_PHASE_FINISHED:
            break
        if not view.my_turn:
            await eventually(_moved_from(stack, token, view.seq), timeout=10)
            continue
        if view.phase == trick_pb2.TRICK_PHASE_PLAYING and not refused_off_suit:
            off = [c.card.id for c in view.hand if not c.playable]
            if off:
                seq += 1
                bad = game_pb2.Action(trick=trick_pb2.TrickAction(kind=PLAY, card=off[0]))
                await refused(
                    stack.stub.Play(pb.PlayRequest(token=token, client_seq=seq, action=bad)),
                    C.FAILED_PRECONDITION,
                    "MUST_FOLLOW_SUIT",
                    "engine.ninetynine",
                )
                assert (await _view(stack, token)).trick.seq == view.seq
                refused_off_suit = True
        action = _decision(view)
        seq += 1
        await stack.stub.Play(
            pb.PlayRequest(token=token, client_seq=seq, action=action, expected_move_seq=view.seq)
        )
        kinds.add(action.trick.kind)
        if action.trick.kind == BID:
            mine = (await _view(stack, token)).trick
            assert [c.id for c in mine.my_bid.cards] == list(action.trick.cards)
            assert not any(c.card.id in action.trick.cards for c in mine.hand)
    assert kinds == {BID, ANNOUNCE, PLAY} or kinds == {BID, PLAY}  # a bot may announce first
    first = (await _view(stack, token)).trick.deals[0]
    assert len(first.lines) == 3 and sum(ln.tricks for ln in first.lines) == 9


def _moved_from(stack: Stack, token: str, seq: int) -> Callable[[], Awaitable[bool]]:
    """A check that the game moved on from ``seq`` or the viewer owes a decision."""

    async def moved() -> bool:
        view = (await _view(stack, token)).trick
        return view.seq != seq or view.my_turn

    return moved


@pytest.mark.timeout(120)
async def test_a_trick_match_of_bots_and_timeouts_ends_with_its_results_and_replay(
    make_stack: MakeStack,
) -> None:
    """Issue 19: "bots, deadlines for every decision, ... results across deals up to 100" — the
    host never moves: every bid, announcement and card of theirs is the engine's timeout."""
    stack = await make_stack(time_scale=0.002)
    created = await _room(stack)
    room_id = created.room.room_id
    await stack.stub.StartGame(pb.StartGameRequest(token=created.seat_token))
    opening = (await _view(stack, created.seat_token)).trick
    assert list(opening.pending) == ["p1", "p2", "p3"]  # everyone bids at once
    await wait_finished(stack.stub, room_id, timeout=100)
    result = await stack.stub.GetResult(pb.GetResultRequest(room_id=room_id))
    ranking = result.trick_result.ranking
    assert sorted(r.player_id for r in ranking) == ["p1", "p2", "p3"]
    assert result.trick_result.deals == 9 or ranking[0].score >= 50
    assert hashlib.sha256(result.seed.to_bytes(8, "big")).hexdigest() == result.seed_commitment
    replay = await stack.stub.GetReplay(pb.GetReplayRequest(room_id=room_id))
    assert replay.game == "trick" and list(replay.player_ids) == ["p1", "p2", "p3"]
    assert replay.trick_options.target == 50 and replay.trick_result == result.trick_result
    sources = {(m.player_id, m.source) for m in replay.moves}
    assert ("p1", "timeout") in sources and ("p2", "bot") in sources and ("p1", "player") not in sources
    timed = [e.timeout_applied for e in replay.events if e.HasField("timeout_applied")]
    assert {t.player_id for t in timed} == {"p1"}
    assert {t.action.trick.kind for t in timed} >= {BID, PLAY}
    assert any(e.game.HasField("trick_game_finished") for e in replay.events)


async def test_a_reconnect_gets_the_missed_events_and_the_view(make_stack: MakeStack) -> None:
    """A seat that subscribes again after the last seq it saw gets the events after it, its own
    hand dealt among them and nobody else's, then its view."""
    stack = await make_stack(time_scale=1.0, bot_think_ms=5)
    created = await _room(stack)
    token = created.seat_token
    await stack.stub.StartGame(pb.StartGameRequest(token=token))
    await eventually(lambda: _bids_placed(stack, token, 2))
    seen: list[pb.RoomEvent] = []
    view: pb.ViewUpdate | None = None
    async for item in stack.stub.Subscribe(pb.SubscribeRequest(token=token, after_seq=0)):
        if item.HasField("event"):
            seen.append(item.event)
        elif item.HasField("view"):
            view = item.view
            break
    assert view is not None and view.HasField("trick") and len(view.trick.hand) == 12
    dealt = [
        e.game.trick_hand_dealt for e in seen if e.HasField("game") and e.game.HasField("trick_hand_dealt")
    ]
    assert [d.player_id for d in dealt] == ["p1"]
    bids = [e.game.bid_placed for e in seen if e.HasField("game") and e.game.HasField("bid_placed")]
    assert bids and all(not b.cards for b in bids)  # the bots' bids: who, never which cards
    assert sum(1 for e in seen if e.HasField("hidden")) >= 4  # two hands, two named bids


async def _bids_placed(stack: Stack, token: str, count: int) -> bool:
    view = (await _view(stack, token)).trick
    return sum(p.bid_placed for p in view.players) >= count


@pytest.mark.timeout(120)
async def test_a_trick_match_runs_on_the_in_process_engine_and_its_rematch_keeps_the_game(
    make_stack: MakeStack,
) -> None:
    """``--engine local`` hosts the trick game too; "한 판 더" opens a room of the same game and options."""
    stack = await make_stack(time_scale=0.002, engine_target="local")
    created = await _room(stack)
    await stack.stub.StartGame(pb.StartGameRequest(token=created.seat_token))
    await wait_finished(stack.stub, created.room.room_id, timeout=100)
    result = await stack.stub.GetResult(pb.GetResultRequest(room_id=created.room.room_id))
    assert len(result.trick_result.ranking) == 3
    again = await stack.stub.Rematch(pb.RematchRequest(token=created.seat_token))
    room = again.joined.room
    assert room.game == "trick" and room.max_seats == 3 and room.trick_options == SHORT


async def _timed_out_bids(stack: Stack, token: str) -> dict[str, list[str]]:
    """The bid cards each ``timeoutApplied`` of the first bidding shows this seat, by player."""
    shown: dict[str, list[str]] = {}
    async for item in stack.stub.Subscribe(pb.SubscribeRequest(token=token, after_seq=0)):
        if item.HasField("event") and item.event.HasField("timeout_applied"):
            applied = item.event.timeout_applied
            if applied.action.trick.kind == BID:
                shown[applied.player_id] = list(applied.action.trick.cards)
        if len(shown) == 2:
            return shown
    raise AssertionError("the stream ended before both timed-out bids")


@pytest.mark.timeout(60)
async def test_a_timed_out_bid_shows_its_cards_to_its_owner_only(make_stack: MakeStack) -> None:
    """Issue 19: "The others' bid cards stay face down until their other nine cards have been
    played" — when the deadline lays two humans' bids, each sees its own three cards in the
    ``timeoutApplied`` and only that a bid was laid for the other."""
    stack = await make_stack(time_scale=0.002)
    created = await _room(stack, bots=1)
    joined = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=created.room.room_id, name="민서"))
    await stack.stub.StartGame(pb.StartGameRequest(token=created.seat_token))
    host_sees = await _timed_out_bids(stack, created.seat_token)
    guest_sees = await _timed_out_bids(stack, joined.seat_token)
    guest = next(p for p in host_sees if p != "p1")  # the bot took p2
    assert len(host_sees["p1"]) == 3 and host_sees[guest] == []
    assert len(guest_sees[guest]) == 3 and guest_sees["p1"] == []
