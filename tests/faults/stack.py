"""Engine, session, gateway and Redis as real processes that a fault test can kill and restart.

Each :class:`Service` keeps its ports, so a restart comes back where clients expect it, the way a
supervisor or Kubernetes would bring a crashed pod back behind the same address. Starting, waiting
and stopping are :mod:`ninetynine.launch`'s.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import redis

from ninetynine import launch
from ninetynine.launch import free_port
from tests.gateway.conftest import WsClient
from tests.session.procs import session_args


@dataclass
class Service:
    """One service process; ``start`` (re)launches it with the same arguments and ports."""

    name: str
    args: list[str]
    log_path: Path
    port: int = 0  # gRPC port (the gateway's too)
    http_port: int = 0  # the gateway's WebSocket port
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> None:
        self.proc = launch.start(self.args, self.log_path)
        self.starts += 1
        launch.wait_serving(self.port, http_port=self.http_port or None, proc=self.proc)

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, exactly like a crash or an OOM kill."""
        assert self.proc is not None
        launch.kill(self.proc)

    def terminate(self) -> None:
        """SIGTERM without waiting: the graceful shutdown a rolling update or a node drain starts."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        if self.proc is not None:
            launch.stop([self.proc], timeout=30)

    def rss_kib(self) -> int:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError(f"{self.name} has no VmRSS")


def engine_service(tmp: Path) -> Service:
    port = free_port()
    args = ["engine", "--host=127.0.0.1", f"--port={port}", "--metrics-port=0"]
    return Service("engine", args, tmp / "engine.log", port=port)


def session_service(
    tmp: Path,
    engine_port: int,
    store: str,
    *,
    scale: float = 0.02,
    bot_ms: int = 5,
    label: str = "session",
    metrics_port: int = 0,
    lease_ms: int | None = None,
    grace: float | None = None,
) -> Service:
    """A session process; ``label`` names its log, ``metrics_port`` (0: any) serves /metrics,
    ``grace`` (default: the CLI's) is its drain period on SIGTERM."""
    port = free_port()
    args = session_args(port, engine_port, store, scale=scale, bot_ms=bot_ms)
    args = [a for a in args if not a.startswith("--metrics-port=")] + [f"--metrics-port={metrics_port}"]
    if lease_ms is not None:
        args.append(f"--lease-ms={lease_ms}")
    if grace is not None:
        args.append(f"--grace={grace}")
    return Service(label, args, tmp / f"{label}.log", port=port)


def replica_stack(
    tmp: Path, store: str, *, scale: float, bot_ms: int, grace: float | None = None, replicas: int = 2
) -> tuple[Service, list[Service], Service]:
    """An engine, ``replicas`` session replicas sharing ``store`` (each serving /metrics on a port of
    its own, see :func:`metrics_lines`) and a gateway spread over them; none started yet."""
    engine = engine_service(tmp)
    sessions = [
        session_service(
            tmp,
            engine.port,
            store,
            scale=scale,
            bot_ms=bot_ms,
            label=f"session-{i}",
            metrics_port=free_port(),
            grace=grace,
        )
        for i in range(replicas)
    ]
    return engine, sessions, gateway_service(tmp, [session.port for session in sessions])


async def metrics_lines(http: aiohttp.ClientSession, service: Service) -> list[str]:
    """The lines of ``service``'s /metrics page (it must have been given a ``--metrics-port``)."""
    port = next(int(a.split("=")[1]) for a in service.args if a.startswith("--metrics-port="))
    async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
        return (await response.text()).splitlines()


def gateway_service(tmp: Path, session_port: int | Sequence[int], *, label: str = "gateway") -> Service:
    """A gateway in front of one session, or of several replicas (round robin over their ports)."""
    http_port, grpc_port = free_port(), free_port()
    if isinstance(session_port, int):
        session_target = f"127.0.0.1:{session_port}"
    else:
        session_target = "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in session_port)
    args = [
        "gateway",
        "--host=127.0.0.1",
        f"--port={http_port}",
        f"--grpc-port={grpc_port}",
        f"--session={session_target}",
        "--metrics-port=0",
    ]
    return Service(label, args, tmp / f"{label}.log", port=grpc_port, http_port=http_port)


@dataclass
class RedisServer:
    """A test-owned redis-server with AOF fsync on every write, on its own port and directory."""

    directory: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        # The child keeps its own copy of the descriptor: this process closes its one at once.
        with (self.directory / "redis.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    "redis-server",
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "always",
                    "--save",
                    "",
                    "--dir",
                    str(self.directory),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 20
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        while True:
            try:
                client.ping()
                # After a restart Redis answers LOADING until the AOF is replayed.
                if client.info("persistence").get("loading") == 0:
                    break
            except (redis.ConnectionError, redis.BusyLoadingError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"redis-server on {self.port} did not come up")
            time.sleep(0.05)
        client.close()

    def kill(self) -> None:
        assert self.proc is not None
        launch.kill(self.proc)

    def stop(self) -> None:
        if self.proc is not None:
            launch.stop([self.proc], timeout=30)


async def ws_connect(http: aiohttp.ClientSession, http_port: int) -> WsClient:
    ws = await http.ws_connect(f"http://127.0.0.1:{http_port}/ws", autoclose=False, max_msg_size=0)
    return WsClient(ws)


def event_seqs(messages: list[dict[str, Any]]) -> list[int]:
    return [m["seq"] for m in messages if m["type"] == "event"]


def dumps(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False)


async def wait_until(check: Callable[[], bool], timeout: float, every: float = 0.05) -> None:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(every)


def grpc_channel(port: int) -> grpc.aio.Channel:
    # A private subchannel pool: a new channel must not inherit a dead server's reconnect backoff.
    return grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)])
