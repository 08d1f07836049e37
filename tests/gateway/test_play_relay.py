"""The gateway's plays over shared PlayMany calls (``PlayRelay`` in ``ninetynine/gateway/relay.py``).

Clients must not notice: a whole game plays to the end, refusals reach them with the reason,
text and metadata the session's unary Play refuses the same play with, one request id follows a
play from the gateway's line to the session's, and a stuck or restarted session fails plays the way
a unary call would, so the client's resend (idempotent by client_seq) lands once on a new call.
Real engine, session and gateway servers.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from prometheus_client import CollectorRegistry

from ninetynine.common.errors import error_info
from ninetynine.common.grpcclient import create_channel
from ninetynine.common.logging import configure_logging
from ninetynine.common.sharedcalls import AnswerLost
from ninetynine.engine.server import EngineMetrics, create_engine_server
from ninetynine.gateway.convert import action_from_json
from ninetynine.gateway.relay import PlayRelay
from ninetynine.session.playmany import PLAY_METHOD
from ninetynine.session.v1 import session_service_pb2 as spb
from ninetynine.session.v1 import session_service_pb2_grpc as spb_grpc
from tests.common.conftest import LogCapture
from tests.gateway.conftest import Backend, GatewayFactory, WsClient, WsFactory
from tests.gateway.test_relay import LocalSession
from tests.gateway.test_ws_contract import _create_table, _play_to_the_end
from tests.session.store.sqlite_lock import StoreLock


async def test_a_whole_game_plays_to_the_end_over_shared_play_streams(
    make_gateway: GatewayFactory, ws_client: WsFactory
) -> None:
    running = await make_gateway(session_play_streams=2)
    client = await ws_client(running)
    joined = await _create_table(client)
    finished = await _play_to_the_end(client, joined["playerId"])
    assert joined["playerId"] in [r["player"] for r in finished["ranking"]]
    played = [m for m in client.seen if m["type"] == "played"]
    assert played, "the plays were answered"
    assert [p["clientSeq"] for p in played] == sorted({p["clientSeq"] for p in played})
    assert any(call is not None for call in running.gateway.plays.calls), "they went over a shared call"
    # Each answer rode its move's events (no answer message of its own), and `played` still comes
    # first, right before the move's cardPlayed.
    answers = {
        sample.labels["via"]: sample.value
        for metric in running.gateway.metrics.play_answers.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    }
    assert answers.get("room_stream") == len(played) and not answers.get("call"), answers
    for frame in played:
        after = client.seen[client.seen.index(frame) + 1]
        assert after["type"] == "event" and after["event"]["type"] == "cardPlayed", after
        assert after["event"]["player"] == joined["playerId"] and after["seq"] <= frame["seq"]


async def _refusal(client: WsClient, play: dict[str, Any]) -> dict[str, Any]:
    answer = await client.request(play)
    assert answer["type"] == "error", answer
    return {key: value for key, value in answer.items() if key != "id"}


async def _unary_refusal(
    session: spb_grpc.SessionServiceAsyncStub, token: str, play: dict[str, Any], lang: str
) -> dict[str, Any]:
    """The session's own unary Play refusing ``play``, as the error frame it should reach a client as."""
    request = spb.PlayRequest(token=token, client_seq=play["clientSeq"])
    action_from_json(play["action"], request.action)
    if "moveSeq" in play:
        request.expected_move_seq = play["moveSeq"]
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await session.Play(request, metadata=(("accept-language", lang),), timeout=10)
    info = error_info(refused.value)
    assert info is not None
    # The gateway names the refused play's clientSeq in the frame's metadata.
    metadata = {**info.metadata, "clientSeq": str(play["clientSeq"])}
    message = refused.value.details()
    return {"type": "error", "reason": info.reason, "message": message, "fatal": False, "metadata": metadata}


@pytest.mark.turn_time_scale(1.0)  # 15 s turns: the game waits for the human while both ask
async def test_refusals_reach_the_client_as_the_session_refuses_them_over_unary_play(
    make_gateway: GatewayFactory, ws_client: WsFactory, backend: Backend
) -> None:
    shared = await make_gateway(session_play_streams=2)
    host = await ws_client(shared)
    joined = await host.request({"type": "createRoom", "id": "c", "name": "A", "seats": 2})
    await host.request({"type": "addBot", "id": "b"})
    await host.request({"type": "startGame", "id": "s"})
    # The same seat straight at the session, over its unary Play.
    channel = create_channel(backend.session_target)
    unary = spb_grpc.SessionServiceStub(channel)

    def my_turn(m: dict[str, Any]) -> bool:
        return bool(m["type"] == "view" and m["view"].get("myTurn"))

    first = await host.until(my_turn)
    played = await host.request(
        {"type": "play", "id": 1, "clientSeq": 50, "action": first["view"]["legalPlays"][0]["action"]}
    )
    assert played["type"] == "played"
    view = await host.until(lambda m: my_turn(m) and m["seq"] > played["seq"])  # after the bot's move
    action = view["view"]["legalPlays"][0]["action"]
    played_card = next(
        m["event"]["cardId"]
        for m in reversed(host.seen)
        if m["type"] == "event" and m["event"]["type"] == "cardPlayed"
    )

    def refusals(client_seq: int) -> dict[str, dict[str, Any]]:
        # A refused clientSeq stays refused (client-protocol §3): each refusal has its own. The
        # unary call sends the same play again, so its answer is the remembered one.
        return {
            "STALE": {"type": "play", "id": 2, "clientSeq": 49, "action": action},
            "VIEW_OUTDATED": {
                "type": "play",
                "id": 3,
                "clientSeq": client_seq,
                "action": action,
                "moveSeq": view["view"]["seq"] - 1,
            },
            "CARD_NOT_IN_HAND": {
                "type": "play",
                "id": 4,
                "clientSeq": client_seq + 1,
                "action": {"cardId": played_card},
            },
        }

    try:
        for lang, client_seq in (("ko", 60), ("en", 70)):
            await host.request({"type": "hello", "id": "h", "lang": lang})
            for reason, play in refusals(client_seq).items():
                streamed = await _refusal(host, play)
                direct = await _unary_refusal(unary, joined["token"], play, lang)
                assert streamed["reason"] == reason, streamed
                assert streamed == direct, (lang, reason)
    finally:
        await channel.close(None)


@pytest.fixture
def logs() -> Iterator[LogCapture]:
    capture = LogCapture()
    configure_logging("gateway", json_logs=True, stream=capture)  # type: ignore[arg-type]
    yield capture
    configure_logging("gateway", json_logs=True)


@pytest.mark.turn_time_scale(1.0)
async def test_one_request_id_follows_a_play_from_the_gateway_to_the_session(
    make_gateway: GatewayFactory, ws_client: WsFactory, logs: LogCapture
) -> None:
    running = await make_gateway(session_play_streams=2)
    client = await ws_client(running)
    await client.request({"type": "createRoom", "id": "c", "name": "A", "seats": 2})
    await client.request({"type": "addBot", "id": "b"})
    await client.request({"type": "startGame", "id": "s"})
    view = await client.until(lambda m: m["type"] == "view" and m["view"].get("myTurn") is True)
    action = view["view"]["legalPlays"][0]["action"]
    played = await client.request({"type": "play", "id": 1, "clientSeq": 5, "action": action})
    stale = await client.request({"type": "play", "id": 2, "clientSeq": 4, "action": action})
    assert (played["type"], stale["type"]) == ("played", "error")

    def gateway_plays(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [line for line in lines if line.get("event") == "message" and line.get("type") == "play"]

    await logs.wait_for(
        lambda lines: len(gateway_plays(lines)) == 2 and len(logs.rpc_lines(PLAY_METHOD)) == 2
    )
    sent = gateway_plays(logs.lines)
    session = logs.rpc_lines(PLAY_METHOD)
    assert [line["request_id"] for line in sent] == [line["request_id"] for line in session]
    assert sent[0]["request_id"] != sent[1]["request_id"]
    assert [(line["code"], line.get("reason")) for line in session] == [("OK", None), ("ABORTED", "STALE")]
    assert (sent[0]["seq"], sent[1]["reason"]) == (played["seq"], "STALE")
    # The shared call that carried them has a line of its own, under an id of its own.
    await running.stop(grace=0.5)
    stream = await logs.rpc_line("/ninetynine.session.v1.SessionService/PlayMany")
    assert stream["plays"] == 2 and stream["request_id"] not in {line["request_id"] for line in sent}


# -- a stuck or restarted session ------------------------------------------------------------------


@dataclass
class Table:
    session: LocalSession
    stub: spb_grpc.SessionServiceAsyncStub
    relay: PlayRelay
    tokens: list[str]

    async def turn(self) -> tuple[str, spb.PlayRequest]:
        """Whose turn it is, and a legal play for it (client_seq to be set)."""
        for token in self.tokens:
            view = (await self.stub.GetView(spb.GetViewRequest(token=token), wait_for_ready=True)).view
            if view.my_turn:
                return token, spb.PlayRequest(token=token, action=view.legal_plays[0].action)
        raise AssertionError("nobody is to move")

    async def move_seq(self) -> int:
        view = await self.stub.GetView(spb.GetViewRequest(token=self.tokens[0]), wait_for_ready=True)
        return int(view.view.seq)


@pytest.fixture
async def table(tmp_path: Path) -> AsyncIterator[Table]:
    """Engine, a restartable session on SQLite, a PlayRelay with one shared call, a started room of
    two humans (15 s turns: nothing moves but their plays)."""
    engine, engine_port, _ = create_engine_server(
        "127.0.0.1:0", metrics=EngineMetrics.create(CollectorRegistry())
    )
    await engine.start()
    session = LocalSession(f"127.0.0.1:{engine_port}", tmp_path / "rooms.db")
    await session.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{session.port}")
    stub = spb_grpc.SessionServiceStub(channel)
    relay = PlayRelay(stub.PlayMany, streams=1)
    host = await stub.CreateRoom(spb.CreateRoomRequest(name="A", max_seats=2))
    guest = await stub.JoinRoom(spb.JoinRoomRequest(room_id=host.room.room_id, name="B"))
    await stub.StartGame(spb.StartGameRequest(token=host.seat_token))
    yield Table(session, stub, relay, [host.seat_token, guest.seat_token])
    await relay.close()
    await channel.close(None)
    await session.stop()
    await engine.stop(None)


async def test_a_play_past_its_timeout_is_deadline_exceeded_and_the_call_goes_on(table: Table) -> None:
    _, play = await table.turn()
    play.client_seq = 1
    before = await table.move_seq()
    lock = StoreLock(table.session.db)
    try:
        with pytest.raises(grpc.aio.AioRpcError) as late:
            await table.relay.play(play, "ko", timeout=0.3)
    finally:
        lock.release()
    assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    call = table.relay.calls[0]
    assert call is not None and not call.broken, "one slow play does not end the shared call"
    # The play landed once the store let it; the client's resend gets that outcome back.
    again = await table.relay.play(play, "ko", timeout=5)
    assert again.duplicate and again.client_seq == 1
    assert await table.move_seq() == before + 1
    _, following = await table.turn()
    following.client_seq = 1
    assert not (await table.relay.play(following, "ko", timeout=5)).duplicate
    assert table.relay.calls[0] is call


async def test_a_session_restart_fails_pending_plays_and_the_resend_lands_once_on_a_new_call(
    table: Table,
) -> None:
    _, play = await table.turn()
    play.client_seq = 1
    before = await table.move_seq()
    first_call_play = asyncio.create_task(table.relay.play(play, "en", timeout=5))
    lock = StoreLock(table.session.db)
    await asyncio.sleep(0.2)  # the play waits for the store
    old_call = table.relay.calls[0]
    assert old_call is not None and old_call.pending, "the play is pending on the shared call"
    stopping = asyncio.create_task(table.session.stop())
    with pytest.raises(grpc.aio.AioRpcError) as broken:
        await first_call_play
    # The call's own status, as a unary Play cut off by the restart would fail.
    assert broken.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
    assert old_call.broken
    lock.release()
    await stopping

    # While the session is down, the next play fails at once (UNAVAILABLE), as a unary call would.
    with pytest.raises(grpc.aio.AioRpcError) as down:
        await table.relay.play(play, "en", timeout=5)
    assert down.value.code() == grpc.StatusCode.UNAVAILABLE

    # Back on the same port and file: the client's resend of the same client_seq goes over a new
    # call and the move is applied exactly once, whether or not the first one made it.
    await table.session.start()
    assert await table.move_seq() in (before, before + 1)  # waits for the channel to reconnect
    resent = await table.relay.play(play, "en", timeout=5)
    assert resent.client_seq == 1
    assert await table.move_seq() == before + 1
    assert table.relay.calls[0] is not old_call
    _, following = await table.turn()
    following.client_seq = 1
    assert not (await table.relay.play(following, "en", timeout=5)).duplicate
    assert await table.move_seq() == before + 2


async def test_a_play_whose_room_stream_lost_its_answer_is_answered_on_its_call(table: Table) -> None:
    """A play asked to be answered on the room stream, applied while that stream skipped events (a
    GAP_TOO_OLD snapshot) or ended, is not left waiting for an answer that will not come: told
    so (AnswerLost), the relay sends it again and the session answers the repeat on the call."""
    _, play = await table.turn()
    play.client_seq = 1
    before = await table.move_seq()
    answered: asyncio.Future[spb.PlayManyResponse] = asyncio.get_running_loop().create_future()
    pending = asyncio.create_task(table.relay.play(play, "ko", timeout=5, answered=answered))
    for _ in range(100):  # the session applies it and, as asked, sends no answer on the call
        if await table.move_seq() == before + 1:
            break
        await asyncio.sleep(0.02)
    assert await table.move_seq() == before + 1
    await asyncio.sleep(0.1)
    assert not pending.done(), "the applied play's answer was left to the room stream"
    answered.set_exception(AnswerLost())
    response = await asyncio.wait_for(pending, 2)
    assert response.duplicate and response.client_seq == 1
    assert await table.move_seq() == before + 1, "the repeat did not move the game again"
