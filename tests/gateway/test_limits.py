"""Per-connection limits: the token bucket and abuse meter by themselves, then on a real gateway."""

from __future__ import annotations

import asyncio
import time

import pytest

from ninetynine.gateway.limits import AbuseMeter, Limits, TokenBucket
from ninetynine.gateway.protocol import ProtocolError, parse_text
from ninetynine.gateway.server import RunningGateway
from tests.gateway.conftest import GatewayFactory, WsFactory


def test_token_bucket_allows_the_burst_then_the_rate() -> None:
    bucket = TokenBucket(rate=2.0, burst=3, now=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.retry_after_ms(0.0) == 500
    assert bucket.take(0.5) is True  # one token back after 1/rate seconds
    assert bucket.take(0.5) is False
    assert [bucket.take(100.0) for _ in range(4)] == [True, True, True, False], "never more than the burst"


def test_abuse_meter_counts_refusals_in_a_sliding_window() -> None:
    meter = AbuseMeter(limit=3, window_seconds=10.0)
    assert [meter.refuse(t) for t in (0.0, 1.0, 2.0)] == [False, False, False]
    assert meter.refuse(3.0) is True
    fresh = AbuseMeter(limit=3, window_seconds=10.0)
    assert [fresh.refuse(t) for t in (0.0, 5.0, 10.5, 15.5, 20.6)] == [False] * 5, "old refusals expire"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "MALFORMED_MESSAGE"),
        ('"ping"', "MALFORMED_MESSAGE"),
        ('{"id": 1}', "MALFORMED_MESSAGE"),
        ('{"type": "teleport", "id": "x"}', "UNKNOWN_TYPE"),
        ('{"type": "hello", "lang": "fr"}', "MALFORMED_MESSAGE"),
        ('{"type": "createRoom", "name": "지호", "seats": 11}', "MALFORMED_MESSAGE"),
        (
            '{"type": "resume", "token": "tA9fQ2mZr8Lw0xY3cV5bN1kJ4hG6dS7e", "afterSeq": -1}',
            "MALFORMED_MESSAGE",
        ),
        (
            '{"type": "play", "clientSeq": 1, "action": {"cardId": "PM9-1", "sign": "plus"}}',
            "MALFORMED_MESSAGE",
        ),
        ("[" * 100_000, "MALFORMED_MESSAGE"),
    ],
)
def test_refused_frames_name_their_reason(text: str, reason: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        parse_text(text)
    assert refused.value.reason == reason


def test_refusals_found_by_fuzzing_are_clean_and_keep_the_id() -> None:
    # Found by the fuzz harness tests/fuzz/gateway.py: a lone surrogate elsewhere in the frame lost
    # the frame's id (one in the id itself cannot be echoed). Found while writing it: an integer of
    # more than 4300 digits (a frame above the default 4096 bytes, possible with
    # --max-message-bytes) raised ValueError out of parse_text.
    cases = [
        ('{"type": "ping", "id": "p1", "x": "\\ud800"}', "p1"),
        ('{"type": "ping", "id": 7, "client": "\\udfff"}', 7),
        ('{"type": "ping", "id": "a\\ud800"}', None),
        ('{"type": "ping", "id": 3, "n": ' + "1" * 4301 + "}", None),
    ]
    for text, reply_id in cases:
        with pytest.raises(ProtocolError) as refused:
            parse_text(text)
        assert (refused.value.reason, refused.value.reply_id) == ("MALFORMED_MESSAGE", reply_id), text


def test_an_integral_float_id_is_echoed_as_the_integer() -> None:
    # JSON Schema counts 7.0 as an integer, so the frame is valid; its reply must carry the id
    # (found by tests/fuzz/gateway.py, the schema-built frames).
    message, reply_id = parse_text('{"type": "ping", "id": 7.0}')
    assert message.WhichOneof("kind") == "ping" and reply_id == 7 and type(reply_id) is int
    with pytest.raises(ProtocolError) as refused:
        parse_text('{"type": "teleport", "id": 12.0}')
    assert refused.value.reply_id == 12


def test_a_valid_frame_becomes_a_client_message_with_its_id() -> None:
    text = '{"type": "play", "id": "p7", "clientSeq": 5, "action": {"cardId": "J-2", "jokerValue": 90}}'
    message, reply_id = parse_text(text)
    assert reply_id == "p7"
    assert message.play.client_seq == 5
    assert message.play.action.card_id == "J-2" and message.play.action.joker_value == 90
    created, _ = parse_text('{"type": "createRoom", "name": "Sam", "seats": 3, "options": {"refill": "off"}}')
    assert created.create_room.seats == 3 and created.create_room.options.refill is False


async def test_a_flood_is_refused_then_closed_as_abuse(
    make_gateway: GatewayFactory, ws_client: WsFactory
) -> None:
    running = await make_gateway(Limits(rate_per_second=0.5, burst=3, abuse_refusals=10))
    client = await ws_client(running)
    for i in range(30):
        await client.send({"type": "ping", "id": i})
    assert await client.close_code() == 1008
    pongs = [m for m in client.seen if m["type"] == "pong"]
    limited = [m for m in client.seen if m["type"] == "error"]
    assert len(pongs) == 3, "the burst is served"
    assert len(limited) == 10 and all(m["reason"] == "RATE_LIMITED" and not m["fatal"] for m in limited)
    assert all(int(m["metadata"]["retryAfterMs"]) > 0 for m in limited)
    assert client.seen[-1] == {"type": "goodbye", "reason": "abuse", "retryAfterMs": 0}
    refused = running.gateway.metrics.rate_limited.labels("ws")._value.get()
    assert refused == 11


async def test_mild_excess_keeps_the_connection(make_gateway: GatewayFactory, ws_client: WsFactory) -> None:
    running = await make_gateway(Limits(rate_per_second=0.5, burst=2, abuse_refusals=10))
    client = await ws_client(running)
    for i in range(3):
        await client.send({"type": "ping", "id": i})
    replies = [await client.recv() for _ in range(3)]
    assert [m["type"] for m in replies] == ["pong", "pong", "error"]
    assert replies[2]["reason"] == "RATE_LIMITED"
    assert not client.ws.closed


async def test_a_silent_client_is_closed_as_idle(make_gateway: GatewayFactory, ws_client: WsFactory) -> None:
    running = await make_gateway(Limits(heartbeat_seconds=1, idle_factor=1))
    client = await ws_client(running)
    assert await client.close_code() == 4000
    assert client.seen == [{"type": "goodbye", "reason": "idle", "retryAfterMs": 0}]


async def test_shutdown_says_goodbye_to_every_client(gateway: RunningGateway, ws_client: WsFactory) -> None:
    first, second = await ws_client(gateway), await ws_client(gateway)
    await first.request({"type": "createRoom", "id": 1, "name": "Sam", "seats": 2})
    await second.request({"type": "ping", "id": 1})
    await gateway.stop(grace=0.5)
    for client in (first, second):
        assert await client.close_code() == 1001
        assert client.seen[-1] == {"type": "goodbye", "reason": "serverShutdown", "retryAfterMs": 500}


async def test_healthz_and_the_web_table_route(gateway: RunningGateway) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{gateway.http_port}/healthz") as resp:
            assert resp.status == 200 and (await resp.json())["status"] == "ok"
        async with http.get(f"http://127.0.0.1:{gateway.http_port}/") as resp:
            assert resp.status in (200, 404)  # 404 only until the web table's index.html lands


async def test_a_hello_with_a_short_heartbeat_makes_a_silent_drop_end_within_seconds(
    make_gateway: GatewayFactory, ws_client: WsFactory
) -> None:
    running = await make_gateway(Limits(heartbeat_seconds=20))
    client = await ws_client(running)
    welcome = await client.request({"type": "hello", "id": 1, "lang": "ko", "heartbeatSeconds": 2})
    assert welcome["heartbeatSeconds"] == 2, "the server keeps the client's shorter heartbeat"
    # Then nothing more, as after a network drop: closed after 3 × 2 s, not 3 × 20 s.
    assert await asyncio.wait_for(client.close_code(), timeout=15) == 4000
    assert client.seen[-1] == {"type": "goodbye", "reason": "idle", "retryAfterMs": 0}


async def test_a_ping_asking_for_the_clock_gets_the_server_time(
    make_gateway: GatewayFactory, ws_client: WsFactory
) -> None:
    running = await make_gateway(Limits())
    client = await ws_client(running)
    before = time.time() * 1000
    pong = await client.request({"type": "ping", "id": 7, "clock": True})
    after = time.time() * 1000
    assert pong["type"] == "pong" and before - 1 <= pong["serverTime"] <= after + 1
    plain = await client.request({"type": "ping", "id": 8})
    assert plain == {"type": "pong", "id": 8}, "unchanged without clock"
