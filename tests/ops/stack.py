"""Run ``ninety-nine serve`` as a real subprocess and talk to it the way a user would.

:class:`Serve` starts the supervisor on free ports (every port flag 0), collects its stdout in a
background thread, waits for the printed banner and parses the URLs out of it. :func:`play_moves`
plays part of a game through the gateway's WebSocket (protocol: docs/client-protocol.md).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import redis

from ninetynine.common.credential import TOKEN_ENV

REDIS_URL = "redis://127.0.0.1:6379/0"
READY_LINE = "Press Ctrl-C to stop."
START_TIMEOUT_S = 45.0
STOP_TIMEOUT_S = 30.0
WS_TIMEOUT_S = 15.0

FREE_PORTS = (
    "--http-port=0",
    "--engine-port=0",
    "--session-port=0",
    "--gateway-grpc-port=0",
    "--metrics-base-port=0",
)


@dataclass
class Serve:
    """One ``ninety-nine serve`` process; ``lines`` is everything it printed so far."""

    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    _reader: threading.Thread | None = None

    @classmethod
    def start(cls, *args: str, cwd: Path) -> Serve:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen(
            [sys.executable, "-m", "ninetynine.cli", "serve", *FREE_PORTS, "--log-format=json", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=cwd,
            env=env,
        )
        serve = cls(proc)
        serve._reader = threading.Thread(target=serve._read, daemon=True)
        serve._reader.start()
        return serve

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.strip() == READY_LINE:
                self.ready.set()
        self.ready.set()  # EOF: wake a waiter; it checks the exit code

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        if not self.ready.wait(timeout) or self.proc.poll() is not None:
            self.kill()
            raise AssertionError("ninety-nine serve did not come up:\n" + self.output())

    def output(self) -> str:
        return "\n".join(self.lines)

    def banner_value(self, label: str) -> str:
        """The value printed after ``label:`` in the banner, e.g. ``web table`` or ``grpc session``."""
        pattern = re.compile(rf"^\s+{re.escape(label)}:\s+(\S+)$")
        for line in self.lines:
            match = pattern.match(line)
            if match:
                return match.group(1)
        raise AssertionError(f"{label!r} not in the banner:\n{self.output()}")

    @property
    def web_url(self) -> str:
        return self.banner_value("web table")

    def metrics_urls(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for line in self.lines:
            match = re.match(r"^\s+metrics (\S+):\s+(http://\S+/metrics)$", line)
            if match:
                found[match.group(1)] = match.group(2)
        return found

    def child_pids(self) -> dict[str, int]:
        """The children's pids, from the supervisor's own ``started`` log lines."""
        pids: dict[str, int] = {}
        for record in self.json_lines():
            if record.get("service") == "supervisor" and record.get("event") == "started":
                pids[str(record["process"])] = int(record["pid"])
        return pids

    def child_env(self, name: str) -> dict[str, str]:
        """A child's environment as the kernel shows it to this (the same) user: where the
        supervisor put the service credential."""
        raw = Path(f"/proc/{self.child_pids()[name]}/environ").read_bytes().decode("utf-8", "replace")
        return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)

    def service_token(self) -> str:
        return self.child_env("session")[TOKEN_ENV]

    def json_lines(self) -> list[dict[str, Any]]:
        records = []
        for line in list(self.lines):
            if line.startswith("{"):
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue
        return records

    def terminate(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM the supervisor (what Ctrl-C does too) and return its exit code."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("ninety-nine serve did not stop after SIGTERM:\n" + self.output()) from None
        if self._reader is not None:
            self._reader.join(5)
        return code

    def kill(self) -> None:
        """Last resort in a failing test: kill the supervisor and its children (by their pids)."""
        for pid in self.child_pids().values():
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def pid_alive(pid: int) -> bool:
    """True if ``pid`` is a live process (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    # The state follows the parenthesised command name, which may itself contain spaces.
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def children_of(pid: int) -> list[int]:
    """Live processes whose parent is ``pid`` (scans /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    """Wait until none of ``pids`` is alive; returns the ones still alive at the timeout."""
    deadline = time.monotonic() + timeout
    alive = [pid for pid in pids if pid_alive(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in alive if pid_alive(pid)]
    return alive


def redis_store_url() -> tuple[str, str]:
    """A Redis store URL with a key prefix of its own, and the prefix (to delete the keys after)."""
    prefix = f"nn-ops-{secrets.token_hex(4)}:"
    return f"{REDIS_URL}?prefix={prefix}", prefix


def delete_redis_keys(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


# -- the game, through the gateway's WebSocket -----------------------------------------------------


@dataclass
class Table:
    """One WebSocket player; ``seen`` keeps every server message in order."""

    ws: aiohttp.ClientWebSocketResponse
    seen: list[dict[str, Any]] = field(default_factory=list)
    next_id: int = 1
    # Pushed messages that arrived while waiting for a reply; recv() hands them out first.
    pending: deque[dict[str, Any]] = field(default_factory=deque)

    async def recv(self) -> dict[str, Any]:
        if self.pending:
            return self.pending.popleft()
        return await self._receive()

    async def _receive(self) -> dict[str, Any]:
        frame = await self.ws.receive(timeout=WS_TIMEOUT_S)
        if frame.type != aiohttp.WSMsgType.TEXT:
            raise AssertionError(f"expected a text frame, got {frame.type!r} {frame.data!r}")
        message: dict[str, Any] = json.loads(frame.data)
        self.seen.append(message)
        return message

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send ``message`` with a fresh ``id``; return the direct reply (success or error)."""
        message = {**message, "id": self.next_id}
        self.next_id += 1
        await self.ws.send_str(json.dumps(message, ensure_ascii=False))
        while True:
            reply = await self._receive()
            if reply.get("id") == message["id"]:
                return reply
            self.pending.append(reply)

    async def create_room_with_bots(self, bots: int = 2, *, mode: str = "kr-product") -> str:
        assert (await self.request({"type": "hello", "lang": "en"}))["type"] == "welcome"
        joined = await self.request(
            {"type": "createRoom", "name": "ops", "seats": bots + 1, "options": {"mode": mode}}
        )
        assert joined["type"] == "joined", joined
        for _ in range(bots):
            assert (await self.request({"type": "addBot"}))["type"] == "room"
        started = await self.request({"type": "startGame"})
        assert started["type"] == "room" and started["room"]["phase"] == "playing", started
        return str(joined["roomId"])

    async def play_moves(self, wanted: int) -> tuple[int, bool]:
        """Play ``wanted`` own moves (each the first legal choice the view offers).

        Returns ``(moves played, over)``: ``over`` when it stopped early because the game ended or
        this player is out of it (a fast game can eliminate a seat after a move or two). A play
        refused because a timeout got there first is simply not counted.
        """
        played = 0
        client_seq = 0
        view: dict[str, Any] | None = None
        while played < wanted:
            message = await self.recv()
            if message["type"] != "view":
                continue
            view = message["view"]
            if view["phase"] == "finished":
                return played, True
            if not view.get("myTurn") or not view.get("legalPlays"):
                me = next(p for p in view["players"] if p["id"] == view.get("viewer"))
                if not me["alive"]:
                    return played, True
                continue
            client_seq += 1
            action = view["legalPlays"][0]["action"]
            reply = await self.request({"type": "play", "clientSeq": client_seq, "action": action})
            if reply["type"] == "played":
                played += 1
            else:
                assert reply["type"] == "error", reply
        return played, False

    async def finish_game(self, *, play: bool = True) -> dict[str, Any]:
        """Read until the game ends, playing the first legal choice on each turn when ``play``
        (otherwise every turn of this seat runs out and the timeout policy plays it).

        Returns the final view.
        """
        client_seq = 10_000
        while True:
            message = await self.recv()
            if message["type"] != "view":
                continue
            view: dict[str, Any] = message["view"]
            if view["phase"] == "finished":
                return view
            if play and view.get("myTurn") and view.get("legalPlays"):
                client_seq += 1
                action = view["legalPlays"][0]["action"]
                await self.request({"type": "play", "clientSeq": client_seq, "action": action})


async def open_table(http: aiohttp.ClientSession, web_url: str) -> Table:
    ws_url = web_url.rstrip("/") + "/ws"
    return Table(await http.ws_connect(ws_url, max_msg_size=0))
