"""Paranoia (004 part III) hosted by the session, over real servers: the exchange phase owes every
seat a pass at once, each with its deadline; bots choose their card, a seat that times out has its
card chosen by the engine's timeout, views show a seat its own choice and only whether the others
have chosen, and a reconnect in the middle of the phase sees its pending choice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from ninetynine.engine.v1 import game_pb2, state_pb2, view_pb2
from ninetynine.session import games
from ninetynine.session.v1 import session_service_pb2 as pb
from tests.session.conftest import Stack
from tests.session.helpers import eventually, wait_finished

MakeStack = Callable[..., Awaitable[Stack]]
EXCHANGE = state_pb2.PHASE_EXCHANGE


async def _view(stack: Stack, token: str) -> view_pb2.GameView:
    view: view_pb2.GameView = (await stack.stub.GetView(pb.GetViewRequest(token=token))).view
    return view


def _pick(view: view_pb2.GameView) -> game_pb2.Action:
    """A single 2 or King when the hand has one (it starts an exchange), else the first legal play."""
    for play in view.legal_plays:
        if not play.action.HasField("pair_card_id") and play.action.card_id[:1] in ("2", "K"):
            return play.action
    return view.legal_plays[0].action


async def _room(stack: Stack, humans: int, bots: int) -> list[str]:
    """A paranoia room of ``humans`` seats (their tokens, the host first) and ``bots`` bots, started."""
    host = await stack.stub.CreateRoom(
        pb.CreateRoomRequest(name="지호", max_seats=humans + bots, rules="paranoia")
    )
    tokens = [host.seat_token]
    for i in range(humans - 1):
        joined = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=host.room.room_id, name=f"H{i}"))
        tokens.append(joined.seat_token)
    for _ in range(bots):
        await stack.stub.AddBot(pb.AddBotRequest(token=host.seat_token))
    await stack.stub.StartGame(pb.StartGameRequest(token=host.seat_token))
    return tokens


async def _until_exchange(stack: Stack, tokens: list[str], seqs: dict[str, int]) -> None:
    """The humans play (a 2 or King first) until an exchange owes both of them a pass."""

    async def step() -> bool:
        views = [await _view(stack, t) for t in tokens]
        if all(v.phase == EXCHANGE and v.my_turn for v in views):
            return True
        for token, view in zip(tokens, views, strict=True):
            if view.phase == state_pb2.PHASE_PLAYING and view.my_turn:
                seqs[token] += 1
                action = _pick(view)
                await stack.stub.Play(
                    pb.PlayRequest(
                        token=token, client_seq=seqs[token], action=action, expected_move_seq=view.seq
                    )
                )
                return False
            if view.phase == EXCHANGE and view.my_turn and not all(v.my_turn for v in views):
                seqs[token] += 1  # an exchange where the other human has passed already: pass, go on
                await stack.stub.Play(
                    pb.PlayRequest(token=token, client_seq=seqs[token], action=view.legal_plays[0].action)
                )
                return False
        return False

    await eventually(step, timeout=60, every=0.01)


@pytest.mark.timeout(120)
async def test_an_exchange_owes_every_seat_a_pass_at_once_and_keeps_the_passed_cards_secret(
    make_stack: MakeStack,
) -> None:
    """004 part III, the 2 and the King: every player passes a card to the neighbour at once. Both
    human seats owe it together (a deadline each), one's choice is shown to it alone, the other may
    still pass from the view it had, and each learns only the card it gave and the card it got."""
    stack = await make_stack(time_scale=1.0, bot_think_ms=5)
    tokens = await _room(stack, humans=2, bots=1)
    seqs = dict.fromkeys(tokens, 0)
    await _until_exchange(stack, tokens, seqs)
    first, second = tokens
    v1, v2 = await _view(stack, first), await _view(stack, second)
    assert v1.viewer_id == "p1" and v2.viewer_id == "p2"
    assert {p.id for p in v1.players if p.HasField("passed")} == {"p1", "p2", "p3"}
    assert [c.action.card_id for c in v1.legal_plays] == [h.card.id for h in v1.hand]
    room = (await stack.stub.GetRoom(pb.GetRoomRequest(room_id=(await _room_id(stack, first))))).room
    assert room.phase == pb.ROOM_PHASE_PLAYING

    gave = v1.hand[0].card.id
    seqs[first] += 1
    await stack.stub.Play(
        pb.PlayRequest(
            token=first,
            client_seq=seqs[first],
            action=game_pb2.Action(card_id=gave),
            expected_move_seq=v1.seq,
        )
    )
    mine, theirs = await _view(stack, first), await _view(stack, second)
    if mine.phase == EXCHANGE:  # the other human has not passed yet
        assert mine.passing == gave and not mine.my_turn and not mine.legal_plays
        assert not theirs.HasField("passing") and theirs.my_turn
        assert gave not in str(theirs) and next(p for p in theirs.players if p.id == "p1").passed
        # a reconnect in the middle of the phase sees its pending choice
        async for item in stack.stub.Subscribe(pb.SubscribeRequest(token=first, after_seq=0)):
            if item.HasField("view"):
                assert item.view.view.passing == gave and item.view.view.phase == EXCHANGE
                break
        # the second seat passes from the view it had before the first seat's pass
        seqs[second] += 1
        await stack.stub.Play(
            pb.PlayRequest(
                token=second,
                client_seq=seqs[second],
                action=game_pb2.Action(card_id=v2.hand[0].card.id),
                expected_move_seq=v2.seq,
            )
        )
    await eventually(lambda: _left_exchange(stack, first), timeout=10)

    events = await _events(stack, first)
    done = [e.game.exchange_done for e in events if e.game.HasField("exchange_done")]
    assert done and {d.player_id for d in done} == {"p1"}  # p1 never sees another seat's exchange
    assert done[-1].gave.id == gave
    seen = await _events(stack, second)
    assert {e.game.exchange_done.player_id for e in seen if e.game.HasField("exchange_done")} == {"p2"}
    assert not any(e.game.HasField("exchange_done") and e.game.exchange_done.gave.id == gave for e in seen)


async def _room_id(stack: Stack, token: str) -> str:
    async for item in stack.stub.Subscribe(pb.SubscribeRequest(token=token, after_seq=0)):
        if item.HasField("view"):
            return item.view.room.room_id
    raise AssertionError("no view")


async def _left_exchange(stack: Stack, token: str) -> bool:
    return (await _view(stack, token)).phase != EXCHANGE


async def _events(stack: Stack, token: str) -> list[pb.RoomEvent]:
    """Every game event the seat is sent from the first on (until its view)."""
    out: list[pb.RoomEvent] = []
    async for item in stack.stub.Subscribe(pb.SubscribeRequest(token=token, after_seq=0)):
        if item.HasField("event"):
            out.append(item.event)
        elif item.HasField("view"):
            break
    return [e for e in out if e.HasField("game")]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engine", ["remote", "local"])
async def test_a_paranoia_game_of_bots_and_timeouts_passes_for_the_seat_that_does_not_and_ends(
    make_stack: MakeStack, engine: str
) -> None:
    """004 part III: the agreed rounds are played to the end. The host never moves: each of its
    turns and each of its passes in an exchange is the engine's timeout; the bots pass their own.
    On the engine service and on the in-process engine. The turns (30 ms) are shorter than a bot's
    think time (20 ms after each move): a bot still answers before an exchange's shared deadline, so
    that deadline finds only the host's pass owed."""
    target = "local" if engine == "local" else None
    stack = await make_stack(time_scale=0.002, engine_target=target)
    (host,) = await _room(stack, humans=1, bots=2)
    room_id = await _room_id(stack, host)
    await wait_finished(stack.stub, room_id, timeout=100)
    replay = await stack.stub.GetReplay(pb.GetReplayRequest(room_id=room_id))
    assert replay.rules.name == "paranoia" and len(replay.result.ranking) == 3
    sources = {(m.player_id, m.source) for m in replay.moves}
    assert ("p1", "timeout") in sources and ("p2", "bot") in sources and ("p1", "player") not in sources
    game = [e.game for e in replay.events if e.HasField("game")]
    started = sum(1 for g in game if g.HasField("exchange_started"))
    chosen = [g.pass_chosen.player_id for g in game if g.HasField("pass_chosen")]
    assert started and chosen.count("p1") == chosen.count("p2") == chosen.count("p3") == started
    assert sum(1 for g in game if g.HasField("round_started")) == 3  # one round per player
    timed = [e.timeout_applied for e in replay.events if e.HasField("timeout_applied")]
    assert {t.player_id for t in timed} == {"p1"}


def test_the_registry_owes_every_seat_that_has_not_chosen_a_pass_with_one_deadline() -> None:
    """The adding game's exchange phase in the registry: a decision per seat that still owes a pass,
    all from the exchange's start and none shortened; a pass chosen from a view taken before the
    other seats' passes is not outdated."""
    from ninetynine.session.v1 import room_document_pb2 as doc_pb

    doc = doc_pb.RoomDocument(room_id="ABCDEF")
    state = doc.state
    state.phase = EXCHANGE
    state.turn_started_at_ms = 5_000
    state.seq = 12
    state.current = "b"
    for pid, passing in (("a", "2S-1"), ("b", ""), ("c", "")):
        state.seats.add(id=pid, passing=passing)
    adding = games.REGISTRY[games.ADDING]
    decisions = adding.decisions(doc)
    assert [(d.player_id, d.started_at_ms, d.shortens) for d in decisions] == [
        ("b", 5_000, False),
        ("c", 5_000, False),
    ]
    assert adding.owes(doc, "c") and not adding.owes(doc, "a")
    assert not adding.outdated(doc, 11) and not adding.outdated(doc, 12) and adding.outdated(doc, 10)


def test_a_bot_owing_a_pass_is_due_before_the_exchanges_shared_deadline() -> None:
    """The engine's timeout at an exchange's shared deadline passes for every seat still owing: a bot
    is due before that deadline, even once it has gone by, so its pass is always its own."""
    from ninetynine.session.deadlines import TurnClock
    from ninetynine.session.v1 import room_document_pb2 as doc_pb

    doc = doc_pb.RoomDocument(room_id="ABCDEF", phase=pb.ROOM_PHASE_PLAYING)
    doc.seats.add(player_id="p1", name="p1")
    doc.seats.add(player_id="p2", name="봇", bot=True)
    state = doc.state
    state.phase = EXCHANGE
    state.turn_started_at_ms = 1_000
    state.current = "p1"
    for pid in ("p1", "p2"):
        state.seats.add(id=pid, passing="")
    clock = TurnClock(bot_think_ms=500, time_scale=1.0)
    clock.set_deadline(doc, 2_000, force=True)
    assert (doc.deadline_ms, doc.deadline_player_id, doc.shown_deadline_ms) == (2_500, "p2", 16_000)
    clock.set_deadline(doc, 20_000, force=True)  # late: the human's deadline has passed already
    assert (doc.deadline_ms, doc.deadline_player_id) == (15_999, "p2")
    assert doc.deadline_kind == doc_pb.DEADLINE_KIND_BOT
