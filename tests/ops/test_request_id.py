"""One move, one request id: gateway → session → engine, each in its canonical log line.

The gateway gives every client message a fresh request id (clients cannot choose it), logs it in
its ``message`` line and forwards it as ``x-request-id``; the session's ``rpc`` line for ``Play``
and the engine's ``rpc`` line for the ``Apply`` it caused must carry the same id. The stack runs
under ``ninety-nine serve`` so the three logs are read from the supervisor's stdout, as an
operator would.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.ops.stack import Serve, open_table

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    running = Serve.start("--bot-think-ms=20", cwd=tmp_path)
    try:
        running.wait_ready()
        yield running
    finally:
        if running.proc.poll() is None:
            running.kill()


def lines_with(records: list[dict[str, Any]], **match: object) -> list[dict[str, Any]]:
    return [r for r in records if all(r.get(key) == value for key, value in match.items())]


async def test_one_request_id_follows_a_move_through_all_three_services(serve: Serve) -> None:
    async with aiohttp.ClientSession() as http:
        table = await open_table(http, serve.web_url)
        room_id = await table.create_room_with_bots(1)
        played, _ = await table.play_moves(1)
        assert played == 1, table.seen
        await table.ws.close()
    # Stopping drains every child's output into the supervisor's stdout.
    assert serve.terminate() == 0, serve.output()
    records = serve.json_lines()

    gateway_plays = lines_with(records, service="gateway", event="message", type="play")
    assert len(gateway_plays) == 1, gateway_plays
    gateway_line = gateway_plays[0]
    request_id = gateway_line["request_id"]
    assert gateway_line["room_id"] == room_id
    assert isinstance(request_id, str) and len(request_id) >= 16

    session_lines = lines_with(records, service="session", event="rpc", request_id=request_id)
    assert [line["method"].rsplit("/", 1)[-1] for line in session_lines] == ["Play"], session_lines
    session_line = session_lines[0]
    assert session_line["code"] == "OK"
    assert session_line["room_id"] == room_id
    assert session_line["client_seq"] == 1  # the first play of this seat (Table numbers them 1, 2...)

    engine_lines = lines_with(records, service="engine", event="rpc", request_id=request_id)
    assert [line["method"].rsplit("/", 1)[-1] for line in engine_lines] == ["Apply"], engine_lines
    assert engine_lines[0]["code"] == "OK"

    # The id is this move's own: the room's Setup (from startGame) and any bot move ran under other
    # ids. (The game may end on the human's move, before the bot ever plays, so Setup is the one
    # other engine call that is always there.)
    other_calls = [
        r
        for r in lines_with(records, service="engine", event="rpc")
        if r["method"].endswith(("/Setup", "/Apply")) and r["request_id"] != request_id
    ]
    assert any(r["method"].endswith("/Setup") for r in other_calls), other_calls
    print(
        f"\nrequest_id {request_id}: gateway {gateway_line['duration_ms']} ms, "
        f"session Play {session_line['duration_ms']} ms, engine Apply {engine_lines[0]['duration_ms']} ms"
    )
