"""The floor of a Python WebSocket game server: a move's frames fanned out, and nothing else.

``python -m bench.load.floor [--clients 2000] [--rate 185] [--duration 20] [--server-cpu 0]``
starts :func:`serve` as a child process (pinned with ``taskset`` to ``--server-cpu`` when given),
connects ``--clients`` WebSocket clients from this process, four to a room, and sends ``--rate``
plays a second, each from a random client. For each play the server parses the JSON, answers
``played`` to the mover, and sends every seat of the room the move's ``cardPlayed`` push and that
seat's view: the frames (texts) our gateway writes for a move, taken from real games by
:func:`bench.client_json.move_messages`. No rules, no storage, no second process: aiohttp on
uvloop, as the gateway runs. The run prints the server's CPU per move (from ``/proc``), to set
beside the gateway's and the whole stack's from ``../shared/peers/run_side_by_side.sh``
(docs/performance.md, "The floor of a WebSocket fan-out in Python").
"""

from __future__ import annotations

import argparse
import asyncio
import random
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

import aiohttp
import orjson
import uvloop
from aiohttp import web

from bench.client_json import move_messages
from bench.load.stack import read_proc
from ninetynine.gateway.convert import server_bytes

ROOM_SEATS = 4
PLAY = b'{"type":"play","id":%d,"clientSeq":%d,"moveSeq":%d,"card":"S7-1","choice":{"sign":"plus"}}'


def move_frames() -> list[list[str]]:
    """Per move of real games: the ``cardPlayed`` push's text, then each seat's view text."""
    return [[server_bytes(msg).decode() for msg in move] for move in move_messages()]


def app() -> web.Application:
    frames = move_frames()
    rooms: dict[str, list[web.WebSocketResponse]] = {}
    moves = 0

    async def table(request: web.Request) -> web.WebSocketResponse:
        nonlocal moves
        ws = web.WebSocketResponse(max_msg_size=16 * 1024, autoping=True)
        await ws.prepare(request)
        seats = rooms.setdefault(request.query["room"], [])
        seats.append(ws)
        try:
            async for message in ws:
                play = orjson.loads(message.data)
                played = {"type": "played", "id": play["id"], "clientSeq": play["clientSeq"]}
                await ws.send_str(orjson.dumps(played).decode())
                move = frames[moves % len(frames)]
                moves += 1
                for seat, view in zip(list(seats), move[1:], strict=False):
                    await seat.send_str(move[0])
                    await seat.send_str(view)
        finally:
            seats.remove(ws)
        return ws

    application = web.Application()
    application.router.add_get("/table", table)
    return application


def serve(port: int) -> None:
    uvloop.install()
    web.run_app(app(), host="127.0.0.1", port=port, access_log=None, print=None)


def cpu_seconds(pid: int) -> float:
    sample = read_proc(pid)
    if sample is None:
        raise RuntimeError(f"the floor server (pid {pid}) is gone")
    return sample.cpu_s


async def drive(port: int, pid: int, clients: int, rate: float, duration: float) -> dict[str, float]:
    """Connect, play for ``duration`` seconds at ``rate``, and return the server's CPU per move."""
    received = 0

    async def read(ws: aiohttp.ClientWebSocketResponse) -> None:
        nonlocal received
        async for _ in ws:
            received += 1

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        sockets = [
            await http.ws_connect(f"http://127.0.0.1:{port}/table?room={i // ROOM_SEATS}", max_msg_size=0)
            for i in range(clients)
        ]
        readers = [asyncio.create_task(read(ws)) for ws in sockets]
        await asyncio.sleep(1.0)  # every seat is in its room before the first move
        cpu_before, started, sent = cpu_seconds(pid), time.monotonic(), 0
        while time.monotonic() - started < duration:
            sent += 1
            await random.choice(sockets).send_bytes(PLAY % (sent, sent, sent))
            await asyncio.sleep(1 / rate)
        await asyncio.sleep(1.0)  # the last moves' frames arrive
        cpu = cpu_seconds(pid) - cpu_before
        for task in readers:
            task.cancel()
        for ws in sockets:
            await ws.close()
    return {"moves": sent, "frames": received, "server_cpu_s": cpu, "cpu_ms_per_move": 1000 * cpu / sent}


def wait_for_port(port: int, timeout: float = 30.0) -> None:
    give_up = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
            return
        except OSError:
            if time.monotonic() > give_up:
                raise
            time.sleep(0.1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load.floor", description=__doc__.splitlines()[0])
    parser.add_argument("role", nargs="?", choices=("drive", "serve"), default="drive")
    parser.add_argument("--port", type=int, default=29_990)
    parser.add_argument("--clients", type=int, default=2_000)
    parser.add_argument("--rate", type=float, default=185.0, help="plays a second, all rooms together")
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--server-cpu", help="pin the server to these CPUs (taskset -c)")
    args = parser.parse_args(argv)
    if args.role == "serve":
        serve(args.port)
        return 0
    command = [sys.executable, "-m", "bench.load.floor", "serve", "--port", str(args.port)]
    if args.server_cpu is not None:
        command = ["taskset", "-c", args.server_cpu, *command]
    server = subprocess.Popen(command)
    try:
        wait_for_port(args.port)
        result = uvloop.run(drive(args.port, server.pid, args.clients, args.rate, args.duration))
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(orjson.dumps(result).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
