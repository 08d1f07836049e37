"""Views as client JSON (``SubscribeRequest.view_json``): byte for byte what the gateway's encoder
makes of the view message, for every rule set and both games, and what a real session sends.

The gateway sends such a view to its WebSocket clients as it comes, so any drift between the rules'
own keys and the ``.proto`` (a renamed, reordered, added or dropped key) fails here.
"""

from __future__ import annotations

import asyncio

from google.protobuf.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from ninetynine.engine import trick
from ninetynine.engine.rules import apply, setup, timeout_action
from ninetynine.engine.rules.presets import preset, preset_names, with_house_rules
from ninetynine.gateway.convert import server_bytes, view_text
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session import games
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.views import Shared, client_view_json

SEQ = 17


def _without_view(seq: int) -> gw.ServerMessage:
    return gw.ServerMessage(view=gw.ViewPush(seq=seq))


def _whole(entry: games.Game, game: object, viewer: str | None, deadline_ms: int, lang: str) -> Message:
    whole = entry.public_view(game, deadline_ms)
    whole.MergeFrom(entry.private_view(game, viewer, lang))  # type: ignore[arg-type]
    return whole


def _check_every_viewer(
    entry: games.Game, game: object, seats: tuple[str, ...], deadline_ms: int, lang: str
) -> None:
    shared = Shared(pb.Room())  # one room version: its public part's text is built once
    for viewer in (*seats, None, "stranger"):
        whole = _whole(entry, game, viewer, deadline_ms, lang)
        text = client_view_json(entry, game, viewer, shared, deadline_ms, lambda: whole)  # noqa: B023
        push = gw.ViewPush(seq=SEQ)
        getattr(push, entry.view_field).CopyFrom(whole)
        # The gateway's frame of the whole view message, as it sends a view that came as a message.
        assert view_text(_without_view(SEQ), entry.view_field, text) == server_bytes(
            gw.ServerMessage(view=push)
        ), viewer


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(preset_names()),
    house=st.booleans(),
    extra_seat=st.booleans(),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    deadline_ms=st.sampled_from([0, 123_456]),
    lang=st.sampled_from(["ko", "en"]),
)
def test_the_adding_games_json_view_is_the_encoders_bytes_at_every_move(
    name: str, house: bool, extra_seat: bool, seed: int, deadline_ms: int, lang: str
) -> None:
    """Every preset, with and without the house rules, played to its end by the timeout's moves:
    each viewer's JSON view (the shared part's text and the rules' own keys) is the gateway's
    frame, at each of the first 100 moves, then at every 20th, and at the end."""
    rules = preset(name)
    if house:
        rules = with_house_rules(rules, "exact99Bonus", "noSameNumberTwice", "exact69Bonus")
    seats = tuple(f"p{i}" for i in range(min(rules.players) + int(extra_seat)))
    entry = games.REGISTRY[games.ADDING]
    state, _ = setup(list(seats), seed=seed, rules=rules)
    for move in range(5000):
        if move < 100 or move % 20 == 0 or state.finished:  # a game of many rounds: a sample of them
            _check_every_viewer(entry, state, seats, deadline_ms, lang)
        if state.finished:
            return
        state, _ = apply(state, state.current, timeout_action(state), now_ms=move * 1000)
    raise AssertionError("the game did not end in 5000 moves")


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_the_trick_games_json_view_is_the_encoders_bytes_at_every_move(seed: int) -> None:
    """The trick game writes its views as messages only: its JSON view is that message encoded."""
    seats = ("p0", "p1", "p2")
    entry = games.REGISTRY[games.TRICK]
    state, _ = trick.setup(seats, seed=seed)
    for move in range(2000):
        _check_every_viewer(entry, state, seats, 0, "en")
        waiting = trick.pending(state)
        if not waiting:
            return
        player = waiting[0]
        state, _ = trick.apply(state, player, trick.timeout_action(state, player), now_ms=move)
    raise AssertionError("the match did not end in 2000 moves")


async def _views(stub: object, token: str, view_json: bool, out: asyncio.Queue[pb.ViewUpdate]) -> None:
    request = pb.SubscribeRequest(token=token, batched=True, view_json=view_json)
    stream = stub.Subscribe(request, metadata=(("accept-language", "en"),))  # type: ignore[attr-defined]
    try:
        async for item in stream:
            if item.HasField("batch") and item.batch.HasField("view"):
                out.put_nowait(item.batch.view)
    finally:
        stream.cancel()


async def _at(views: asyncio.Queue[pb.ViewUpdate], seq: int) -> pb.ViewUpdate:
    while True:
        view = await asyncio.wait_for(views.get(), 30)
        if view.seq >= seq:
            return view


async def _at_same_seq(
    a: asyncio.Queue[pb.ViewUpdate], b: asyncio.Queue[pb.ViewUpdate], seq: int
) -> tuple[pb.ViewUpdate, pb.ViewUpdate]:
    """The first views at one seq at or past ``seq`` in both streams. A stream that falls behind
    gets only the newest view of what it missed, so either may skip a seq the other shows."""
    first, second = await _at(a, seq), await _at(b, seq)
    while first.seq != second.seq:
        if first.seq < second.seq:
            first = await _at(a, second.seq)
        else:
            second = await _at(b, first.seq)
    return first, second


async def test_a_subscription_that_asks_for_json_views_gets_what_the_gateway_would_encode(make_stack) -> None:  # type: ignore[no-untyped-def]
    """A live room: the JSON view a seat and a spectator receive after each move is the gateway's
    frame of the view message a plain batched subscription receives, and carries no message."""
    stack = await make_stack(time_scale=1.0)
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    spectator = await stack.stub.Spectate(pb.SpectateRequest(room_id=a.room.room_id))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    tokens = [a.seat_token, b.seat_token, spectator.spectator_token]
    queues = {(t, j): asyncio.Queue[pb.ViewUpdate]() for t in tokens for j in (False, True)}
    tasks = [asyncio.create_task(_views(stack.stub, t, j, q)) for (t, j), q in queues.items()]
    try:
        for client_seq in range(1, 5):
            view = (await stack.stub.GetView(pb.GetViewRequest(token=a.seat_token))).view
            mover = a if view.current == a.player_id else b
            mine = (await stack.stub.GetView(pb.GetViewRequest(token=mover.seat_token))).view
            action = mine.legal_plays[0].action
            played = await stack.stub.Play(
                pb.PlayRequest(token=mover.seat_token, action=action, client_seq=client_seq)
            )
            for token in tokens:
                as_message, as_json = await _at_same_seq(
                    queues[(token, False)], queues[(token, True)], played.seq
                )
                assert not as_json.HasField("view") and as_json.view_json
                push = gw.ViewPush(seq=as_json.seq, view=as_message.view)
                expected = server_bytes(gw.ServerMessage(view=push))
                assert view_text(_without_view(as_json.seq), "view", as_json.view_json) == expected
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
