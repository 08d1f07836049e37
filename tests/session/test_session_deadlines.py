"""Turn deadlines through the real session: the 3 s rule (spec §8.5) and deadlines across a restart."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import grpc

from ninetynine.engine.v1 import game_pb2
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.session.conftest import Stack
from tests.session.helpers import sample

MakeStack = Callable[..., Awaitable[Stack]]


async def _two_humans(
    stack: Stack, turn_seconds: int, lives: int | None = None
) -> tuple[pb.CreateRoomResponse, pb.JoinRoomResponse]:
    options = game_pb2.Options(turn_seconds=turn_seconds)
    if lives is not None:
        options.lives = lives
    a: pb.CreateRoomResponse = await stack.stub.CreateRoom(
        pb.CreateRoomRequest(name="A", max_seats=2, options=options)
    )
    b: pb.JoinRoomResponse = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    return a, b


async def test_three_timeouts_shorten_the_turn_until_the_player_acts(make_stack: MakeStack) -> None:
    scale = 0.1  # 10 s turns -> 1000 ms; the 3 s rule -> 300 ms
    stack = await make_stack(time_scale=scale)
    normal, short = round(10_000 * scale), round(3_000 * scale)
    # Three lives: the game runs over several rounds, long enough to see six of A's turns.
    a, b = await _two_humans(stack, turn_seconds=10, lives=3)
    a_turns: dict[int, int] = {}  # turn start -> deadline - turn start, for A's turns in order
    a_played_in: list[int] = []
    seqs = {a.seat_token: 0, b.seat_token: 0}

    async def play(token: str, view: object) -> None:
        seqs[token] += 1
        action = view.legal_plays[0].action  # type: ignore[attr-defined]
        try:
            await stack.stub.Play(pb.PlayRequest(token=token, client_seq=seqs[token], action=action))
        except grpc.aio.AioRpcError as err:  # the deadline fired first: that turn is gone
            assert err.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.ABORTED), err

    while len(a_turns) < 6:
        got = await stack.stub.GetView(pb.GetViewRequest(token=a.seat_token))
        view = got.view
        if got.room.phase == pb.ROOM_PHASE_FINISHED:
            break
        if view.current == a.player_id and got.room.deadline_ms:
            start = view.turn_started_at_ms
            if start not in a_turns:
                a_turns[start] = got.room.deadline_ms - start
                assert view.deadline_ms == got.room.deadline_ms, "the view shows the session's timer"
                if len(a_turns) >= 4:  # A times out three turns in a row, then acts itself
                    a_played_in.append(start)
                    await play(a.seat_token, view)
        elif view.current == b.player_id:
            b_view = (await stack.stub.GetView(pb.GetViewRequest(token=b.seat_token))).view
            if b_view.my_turn and b_view.legal_plays:
                await play(b.seat_token, b_view)
        await asyncio.sleep(0.01)

    durations = list(a_turns.values())
    assert len(durations) >= 5, f"the game ended too early to see the rule: {durations}"
    assert durations[:3] == [normal] * 3, durations
    assert durations[3] == short, "after 3 consecutive timeouts the turn is 3 s (scaled)"
    assert durations[4:] == [normal] * len(durations[4:]), "acting again restores the normal turn"
    replay_events = stack.stub.Subscribe(pb.SubscribeRequest(token=b.seat_token, after_seq=0))
    consecutive: list[int] = []
    async for item in replay_events:
        timed_out = item.event.timeout_applied if item.HasField("event") else None
        if (
            timed_out is not None
            and item.event.HasField("timeout_applied")
            and timed_out.player_id == a.player_id
        ):
            consecutive.append(timed_out.consecutive)
        if item.HasField("view") and item.view.seq >= got.seq:
            break
    replay_events.cancel()
    assert consecutive[:3] == [1, 2, 3]


async def _first_timeout_at(stub: pb_grpc.SessionServiceAsyncStub, token: str, after_seq: int) -> int:
    stream = stub.Subscribe(pb.SubscribeRequest(token=token, after_seq=after_seq))
    try:
        async for item in stream:
            if item.HasField("event") and item.event.HasField("timeout_applied"):
                at_ms: int = item.event.at_ms
                return at_ms
    finally:
        stream.cancel()
    raise AssertionError("stream ended without a timeout")


async def test_deadlines_survive_a_restart(make_stack: MakeStack) -> None:
    scale = 0.1  # 10 s turns -> 1 s, 30 s turns -> 3 s
    first = await make_stack(time_scale=scale)
    games: list[tuple[str, str, int, int]] = []  # room, spectator token, last seq, deadline
    for turn_seconds in (10, 10, 10, 30, 30, 30):
        a, _ = await _two_humans(first, turn_seconds)
        spectator = await first.stub.Spectate(pb.SpectateRequest(room_id=a.room.room_id))
        room = (await first.stub.GetRoom(pb.GetRoomRequest(room_id=a.room.room_id))).room
        assert room.deadline_ms > time.time() * 1000, "the first deadline is still ahead"
        games.append((room.room_id, spectator.spectator_token, room.last_seq, room.deadline_ms))
    await first.close()

    # Down past the short deadlines but not the long ones.
    short_due = max(d for _, _, _, d in games[:3])
    await asyncio.sleep(max(0.0, (short_due + 400) / 1000 - time.time()))
    restarted_ms = time.time_ns() // 1_000_000
    assert all(d > restarted_ms for _, _, _, d in games[3:]), "the long deadlines are still pending"
    second = await make_stack(time_scale=scale)
    fired = await asyncio.gather(*(_first_timeout_at(second.stub, token, seq) for _, token, seq, _ in games))
    for (room_id, _, _, deadline), at_ms in zip(games, fired, strict=True):
        assert at_ms >= deadline, f"{room_id}: never before its deadline"
        if deadline < restarted_ms:
            assert at_ms - restarted_ms < 1000, (
                f"{room_id}: an overdue deadline fires at once after the restart"
            )
        else:
            assert at_ms - deadline < 1000, f"{room_id}: a pending deadline is rescheduled, not forgotten"
    lateness = "ninetynine_session_deadline_lateness_seconds"
    assert sample(second.registry, f"{lateness}_count") >= len(games)
    overdue_by = sum((restarted_ms - d) / 1000 for _, _, _, d in games[:3])
    assert sample(second.registry, f"{lateness}_sum") >= overdue_by, "lateness counts the time spent down"


async def test_every_turn_announces_the_deadline_the_session_enforces(make_stack: MakeStack) -> None:
    """A turn's ``turnStarted``, the view after it and the room all carry the deadline that fires:
    the bot's pace on a bot's turn, the 3 s rule once a seat timed out three times in a row."""
    scale, bot_ms = 0.05, 150  # 10 s turns -> 500 ms, the 3 s rule -> 150 ms
    stack = await make_stack(bot_think_ms=bot_ms, time_scale=scale)
    normal, short = round(10_000 * scale), round(3_000 * scale)
    turns: list[tuple[str, int, int]] = []  # (kind, deadline - turn start, timeouts in a row before it)
    bot_moves: list[tuple[int, int]] = []  # (when the bot played, the deadline of its turn)
    for _ in range(3):  # a game that ends before the 3 s rule shows: another room
        host = await stack.stub.CreateRoom(
            pb.CreateRoomRequest(name="A", max_seats=2, options=game_pb2.Options(turn_seconds=10, lives=3))
        )
        bot = (await stack.stub.AddBot(pb.AddBotRequest(token=host.seat_token))).player_id
        await stack.stub.StartGame(pb.StartGameRequest(token=host.seat_token))
        in_a_row = 0
        announced: pb.RoomEvent | None = None  # the batch's turnStarted
        running = 0  # the deadline of the turn under way
        async for item in stack.stub.Subscribe(pb.SubscribeRequest(token=host.seat_token)):
            kind = item.WhichOneof("item")
            if kind == "event":
                event = item.event
                if event.WhichOneof("kind") == "timeout_applied":
                    in_a_row = event.timeout_applied.consecutive
                elif event.HasField("game") and event.game.HasField("card_played"):
                    if event.game.card_played.player_id == bot:
                        bot_moves.append((event.at_ms, running))
                elif event.HasField("game") and event.game.HasField("turn_started"):
                    announced = event
            elif kind == "view" and item.view.room.phase == pb.ROOM_PHASE_PLAYING and announced is not None:
                started = announced.game.turn_started
                view, room = item.view.view, item.view.room
                assert started.deadline_ms == view.deadline_ms == room.deadline_ms, (
                    started,
                    view.deadline_ms,
                )
                assert started.turn_started_at_ms == view.turn_started_at_ms
                who = "bot" if started.player_id == bot else "host"
                turns.append((who, started.deadline_ms - started.turn_started_at_ms, in_a_row))
                running, announced = started.deadline_ms, None
            elif kind == "view" and item.view.room.phase == pb.ROOM_PHASE_FINISHED:
                break
            if any(t[0] == "host" and t[2] >= 3 for t in turns) and len(bot_moves) >= 2:
                break
        if any(t[0] == "host" and t[2] >= 3 for t in turns):
            break
    assert {(length, row >= 3) for who, length, row in turns if who == "host"} >= {
        (normal, False),
        (short, True),
    }
    assert all(length == short for who, length, row in turns if who == "host" and row >= 3), turns
    assert {length for who, length, _ in turns if who == "bot"} == {bot_ms}, turns
    assert bot_moves and all(played >= due for played, due in bot_moves), "a bot plays at its turn's deadline"


async def test_a_session_on_its_own_store_does_no_deadline_work_between_deadlines(
    make_stack: MakeStack, store_url: Callable[[], str]
) -> None:
    """On SQLite this replica writes every deadline, so the scheduler sleeps until the earliest
    one: it does not poll the store, and a move that only brings a later deadline does not wake it.
    On a shared store (Redis) it polls, for what other replicas commit."""
    stack = await make_stack(time_scale=1.0)  # 15 s turns: nothing comes due during the test
    cache = stack.rooms.cache
    asked = looked = 0
    ask_store, take_sooner = stack.rooms.store.next_deadline_ms, cache.take_sooner_deadline

    async def counting_ask() -> int | None:
        nonlocal asked
        asked += 1
        return await ask_store()

    def counting_take() -> int | None:
        nonlocal looked
        looked += 1
        return take_sooner()

    stack.rooms.store.next_deadline_ms = counting_ask  # type: ignore[method-assign]
    cache.take_sooner_deadline = counting_take  # type: ignore[method-assign]
    a, b = await _two_humans(stack, turn_seconds=15)
    await asyncio.sleep(0.2)  # the scheduler takes the first turn's deadline
    asked_before, looked_before = asked, looked
    moves = 0
    for client_seq in range(1, 4):
        for token in (a.seat_token, b.seat_token):
            view = (await stack.stub.GetView(pb.GetViewRequest(token=token))).view
            if view.my_turn and view.legal_plays:
                action = view.legal_plays[0].action
                await stack.stub.Play(pb.PlayRequest(token=token, client_seq=client_seq, action=action))
                moves += 1
    assert moves >= 3
    await asyncio.sleep(1.0)
    if "sqlite" in store_url():
        assert asked == asked_before, "the store is not polled while no deadline is due"
        assert looked == looked_before, "a move bringing a later deadline does not wake the scheduler"
    else:
        assert asked - asked_before >= 10, "a shared store is polled (every 50 ms)"
