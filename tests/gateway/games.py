"""Server messages as real games produce them: the rules engine plays, the engine's converters
build the protobuf events and views the session pushes, wrapped as the gateway wraps them.

Used by the encoder's differential test and by the per-message timings, so both look at the
messages clients actually get (Korean names and summaries, 64-bit seeds, epoch-millisecond
clocks, hands with jokers and their refused choices) rather than hand-made ones.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from ninetynine.common.errors import Lang
from ninetynine.engine import trick_wire
from ninetynine.engine.convert import events_into, options_to_proto, view_into
from ninetynine.engine.rules import (
    KR,
    Event,
    GameState,
    Options,
    Phase,
    Rng,
    apply,
    player_view,
    seed_rng,
    setup,
)
from ninetynine.engine.simulate import random_action
from ninetynine.engine.trick import TrickAction, TrickOptions
from ninetynine.engine.trick import apply as trick_apply
from ninetynine.engine.trick import legal_plays as trick_legal_plays
from ninetynine.engine.trick import pending as trick_pending
from ninetynine.engine.trick import player_view as trick_player_view
from ninetynine.engine.trick import setup as trick_setup
from ninetynine.engine.trick import timeout_action as trick_timeout_action
from ninetynine.engine.v1 import engine_service_pb2 as epb
from ninetynine.engine.v1 import events_pb2, trick_pb2, view_pb2
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.v1 import session_service_pb2 as spb

__all__ = ["KOREAN_NAMES", "game_messages", "mid_game", "trick_messages"]

KOREAN_NAMES = {
    "p1": "김민준",
    "p2": "이서연",
    "p3": "박도윤",
    "p4": "최지우",
    "p5": "정하은",
    "p6": "강시우",
}
SOURCES = ("player", "bot", "timeout")
START_MS = 1_767_000_000_000  # epoch milliseconds in 2026: clocks as large as real ones


def _events(state: GameState, events: Sequence[Event]) -> list[events_pb2.Event]:
    holder = epb.SetupResponse()
    events_into(events, holder.events)
    return list(holder.events)


def _view(state: GameState, viewer: str | None, lang: Lang) -> gw.ServerMessage:
    view = view_pb2.GameView()
    view_into(player_view(state, viewer), state.options, view, lang)
    return gw.ServerMessage(view=gw.ViewPush(seq=state.seq, view=view))


def _room(state: GameState, room_id: str) -> spb.Room:
    room = spb.Room(
        room_id=room_id,
        phase=spb.ROOM_PHASE_FINISHED if state.phase is Phase.FINISHED else spb.ROOM_PHASE_PLAYING,
        host_player_id=state.seats[0],
        max_seats=len(state.seats),
        spectator_count=1,
        options=options_to_proto(state.options),
    )
    for i, pid in enumerate(state.seats):
        room.seats.add(player_id=pid, name=state.name(pid), bot=i % 2 == 1, connected=i != 2)
    return room


def game_messages(seed: int, players: int = 4, options: Options | None = None) -> Iterator[gw.ServerMessage]:
    """Every message of one whole game: events, every seat's view and the spectator's after each
    move, ``played`` replies, room updates, then the replay and the connection-level kinds."""
    seats = [f"p{i + 1}" for i in range(players)]
    names = {pid: KOREAN_NAMES.get(pid, pid) for pid in seats}
    state, events = setup(seats, options or Options(), seed=seed, now_ms=START_MS, names=names)
    room_id = f"R{seed % 1_000_000:06d}"
    yield gw.ServerMessage(
        welcome=gw.Welcome(protocol_version=1, heartbeat_seconds=20, max_message_bytes=4096, lang="ko")
    )
    yield gw.ServerMessage(
        joined=gw.Joined(room_id=room_id, player_id="p1", token="t0k3n", role="player", host=True)
    )
    yield gw.ServerMessage(room=gw.RoomUpdate(room=_room(state, room_id)))
    log: list[spb.RoomEvent] = []
    rng = Rng(seed_rng(seed))
    source = ""
    moves = 0
    while True:
        for ev in _events(state, events):
            log.append(spb.RoomEvent(seq=len(log) + 1, game=ev))
            push = gw.EventPush(seq=len(log), event=ev, source=source if ev.HasField("card_played") else "")
            yield gw.ServerMessage(event=push)
        if moves:
            yield gw.ServerMessage(played=gw.Played(client_seq=moves, seq=len(log)))
        for i, viewer in enumerate([*seats, None]):
            yield _view(state, viewer, "en" if i % 3 == 2 else "ko")
        if state.phase is Phase.FINISHED:
            break
        now = START_MS + 2_500 * (moves + 1)
        state, events = apply(state, state.current, random_action(state, rng), now_ms=now)
        source = SOURCES[moves % len(SOURCES)]
        moves += 1
    yield gw.ServerMessage(room=gw.RoomUpdate(room=_room(state, room_id)))
    yield gw.ServerMessage(rooms=gw.RoomList(rooms=[_room(state, room_id)] * 3))
    replay = spb.GetReplayResponse(
        player_ids=seats,
        options=options_to_proto(state.options),
        seed=state.seed,
        events=log,
        display_names=names,
    )
    yield gw.ServerMessage(replay=gw.Replay(room_id=room_id, replay=replay))
    yield gw.ServerMessage(snapshot=spb.Snapshot(seq=len(log), reason="GAP_TOO_OLD"))
    yield gw.ServerMessage(left=gw.Left(room_id=room_id))
    yield gw.ServerMessage(pong=gw.Pong())
    yield gw.ServerMessage(goodbye=gw.Goodbye(reason="serverShutdown", retry_after_ms=1500))
    error = gw.Error(reason="NOT_YOUR_TURN", message="지금은 내 차례가 아니에요", metadata={"current": "p2"})
    yield gw.ServerMessage(error=error)


def mid_game(seed: int = 7, players: int = 4) -> tuple[gw.ServerMessage, gw.ServerMessage]:
    """A seated player's view (4+ cards in hand) and a ``cardPlayed`` event from the middle of a
    kr-product game."""
    messages = list(game_messages(seed, players, Options(mode=KR)))
    views = [
        m
        for m in messages
        if m.WhichOneof("kind") == "view" and m.view.view.viewer_id and len(m.view.view.hand) >= 4
    ]
    played = [
        m for m in messages if m.WhichOneof("kind") == "event" and m.event.event.HasField("card_played")
    ]
    return views[len(views) // 2], played[len(played) // 2]


def trick_messages(seed: int, options: TrickOptions | None = None) -> Iterator[gw.ServerMessage]:
    """Every message of one trick match as a room of the trick game sends them: its room, events,
    every seat's view and the spectator's after each move, ``played`` replies, the room list and
    the replay. The moves are random (announcing now and then) and some are timeouts."""
    seats = ["p1", "p2", "p3"]
    names = {pid: KOREAN_NAMES[pid] for pid in seats}
    state, events = trick_setup(seats, options or TrickOptions(), seed=seed, now_ms=START_MS, names=names)
    room_id = f"T{seed % 1_000_000:06d}"
    room = spb.Room(
        room_id=room_id, phase=spb.ROOM_PHASE_PLAYING, host_player_id="p1", max_seats=3, game="trick"
    )
    trick_wire.options_into(state.options, room.trick_options)
    for i, pid in enumerate(seats):
        room.seats.add(player_id=pid, name=names[pid], bot=i > 0, connected=True)
    yield gw.ServerMessage(room=gw.RoomUpdate(room=room))
    log: list[spb.RoomEvent] = []
    rng = random.Random(seed)
    moves = 0
    while True:
        holder = epb.SetupResponse()
        trick_wire.events_into(events, holder.events)
        for ev in holder.events:
            log.append(spb.RoomEvent(seq=len(log) + 1, game=ev))
            yield gw.ServerMessage(event=gw.EventPush(seq=len(log), event=ev))
        if moves:
            yield gw.ServerMessage(played=gw.Played(client_seq=moves, seq=len(log)))
        for viewer in [*seats, None]:
            view = trick_pb2.TrickView()
            trick_wire.view_into(trick_player_view(state, viewer), view)
            yield gw.ServerMessage(view=gw.ViewPush(seq=len(log), trick=view))
        if state.finished:
            break
        player = trick_pending(state)[0]
        action = trick_timeout_action(state, player)
        if state.phase.value == "announcing" and rng.random() < 0.3:
            action = TrickAction.announce()
        elif state.phase.value == "playing" and moves % 2:
            action = TrickAction.play(rng.choice(trick_legal_plays(state, player)))
        state, events = trick_apply(state, player, action, now_ms=START_MS + 2_500 * (moves + 1))
        moves += 1
    room.phase = spb.ROOM_PHASE_FINISHED
    yield gw.ServerMessage(room=gw.RoomUpdate(room=room))
    yield gw.ServerMessage(rooms=gw.RoomList(rooms=[room]))
    replay = spb.GetReplayResponse(player_ids=seats, seed=state.seed, events=log, display_names=names)
    yield gw.ServerMessage(replay=gw.Replay(room_id=room_id, replay=replay))
