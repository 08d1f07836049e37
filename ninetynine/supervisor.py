"""``ninety-nine serve``: the whole stack -- engine, session replica(s), gateway -- under one command.

Each service runs as its own child process (``python -m ninetynine.cli <service> ...``), exactly as
it would in a container, so a local run exercises the same start-up, health and shutdown paths as
production. The supervisor:

1. plans the ports (``0`` picks a free one) and refuses impossible shapes (several session replicas
   need a shared Redis store; SQLite is one machine, one writer);
2. starts the engine, then the session replica(s), then the gateway, and after each wave waits until
   every child reports SERVING through the gRPC health service (the gateway also through its HTTP
   ``/healthz``);
3. prints the web table URL, the gRPC addresses, the metrics URLs and where each listens;
4. on Ctrl-C / SIGTERM stops the children in reverse order -- gateway (clients are told to
   reconnect), session(s) (in-flight moves finish, no half-written room), engine -- each with
   SIGTERM, then SIGKILL after ``--stop-timeout``; exits 0 when every child stopped cleanly.

If a child exits on its own, the supervisor logs it, stops the others and exits 1. Children live in
their own process group (a terminal's Ctrl-C reaches only the supervisor, which then stops them in
order) and, on Linux, get SIGTERM from the kernel if the supervisor dies (``PR_SET_PDEATHSIG``), so
even a SIGKILLed supervisor leaves no orphans.

Exposure: ``--host`` binds only the client-facing listeners (the gateway's HTTP/WebSocket and gRPC
ports); the engine and the session listen on ``--internal-host`` and every /metrics port on
``--metrics-host``, both 127.0.0.1 by default, so ``--host 0.0.0.0`` puts the web table on the
network and nothing else. The session and the gateway share a service credential: the one
configured (``--service-token-file`` / ``NINETYNINE_SERVICE_TOKEN``) or a random one per run,
handed to them in their environment (never on a command line, which ``ps`` shows to everyone).

Children's log lines (JSON with ``service``) are copied to stdout; on a terminal they are shown as
short readable lines instead. Their pipes are read every :data:`_POLL_S` seconds rather than on
every write: each service writes its log lines once per loop turn, several times per move, and
waking the supervisor for each write cost about 5 % of the stack's CPU under load
(docs/performance.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import functools
import ipaddress
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO
from urllib.parse import urlsplit

from ninetynine.common.config import add_env_argument
from ninetynine.common.credential import (
    CredentialError,
    add_credential_flag,
    generate_token,
    is_loopback,
    load_service_token,
)
from ninetynine.common.logging import configure_logging, get_logger
from ninetynine.engine.v1 import engine_service_pb2
from ninetynine.gateway.v1 import gateway_service_pb2
from ninetynine.launch import connect_host, free_port, service_command, service_env, url_host, wait_serving
from ninetynine.session.v1 import session_service_pb2

__all__ = ["Child", "Plan", "PlanError", "Supervisor", "add_parser", "build_plan", "run_command"]

log = get_logger(__name__)

ENGINE_SERVICE = engine_service_pb2.DESCRIPTOR.services_by_name["EngineService"].full_name
SESSION_SERVICE = session_service_pb2.DESCRIPTOR.services_by_name["SessionService"].full_name
GATEWAY_SERVICE = gateway_service_pb2.DESCRIPTOR.services_by_name["GatewayService"].full_name

# Child log lines can carry a traceback; one line may be long but must not be unbounded.
_LINE_LIMIT = 1024 * 1024
_READ_CHUNK = 256 * 1024
# How often a child's pipe is read, and how much it holds meanwhile (a child that fills it waits).
_POLL_S = 0.1
_PIPE_BYTES = 1024 * 1024


class PlanError(ValueError):
    """The flags describe a stack that cannot run (bad replica count, store, ports)."""


@dataclass(frozen=True)
class Child:
    """One service process to run: its name in logs, its command line and where it answers."""

    name: str  # engine, session, session-2, gateway
    subcommand: str  # engine, session or gateway
    args: tuple[str, ...]
    grpc_port: int
    metrics_port: int
    health_service: str
    http_port: int | None = None
    listen_host: str = "127.0.0.1"  # of the gRPC (and HTTP) listeners
    metrics_host: str = "127.0.0.1"

    @property
    def connect_host(self) -> str:
        return connect_host(self.listen_host)

    @property
    def credential(self) -> bool:
        """Whether it is given the service credential (the session checks it, the gateway sends it)."""
        return self.subcommand in ("session", "gateway")

    def listens(self) -> str:
        """Where it listens, for the banner."""
        parts = [f"grpc {url_host(self.listen_host)}:{self.grpc_port}"]
        if self.http_port is not None:
            parts.append(f"http {url_host(self.listen_host)}:{self.http_port}")
        if "--frames-socket" in self.args:
            parts.append(f"frames {self.args[self.args.index('--frames-socket') + 1]}")
        parts.append(f"metrics {url_host(self.metrics_host)}:{self.metrics_port}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Plan:
    """Every child with its ports, in start order; :meth:`banner` is what the user is shown.

    ``connect_host`` is where a local client reaches the gateway.
    """

    connect_host: str
    engine: Child | None  # None: each session runs the rules itself (``--engine-mode local``)
    sessions: tuple[Child, ...]
    gateway: Child
    store_display: str
    gateway_session_target: str

    def waves(self) -> list[list[Child]]:
        """Start order; the shutdown order is the reverse."""
        engine = [[self.engine]] if self.engine is not None else []
        return [*engine, list(self.sessions), [self.gateway]]

    def children(self) -> list[Child]:
        return [child for wave in self.waves() for child in wave]

    @property
    def web_url(self) -> str:
        return f"http://{url_host(self.connect_host)}:{self.gateway.http_port}/"

    def metrics_urls(self) -> list[tuple[str, str]]:
        return [
            (
                child.name,
                f"http://{url_host(connect_host(child.metrics_host))}:{child.metrics_port}/metrics",
            )
            for child in self.children()
        ]

    def banner(self) -> str:
        host = url_host(self.connect_host)
        lines = [
            "ninety-nine is running.",
            f"  web table:     {self.web_url}",
            f"  websocket:     ws://{host}:{self.gateway.http_port}/ws",
            f"  store:         {self.store_display}",
        ]
        lines += [
            f"  grpc {child.name + ':':<9} {url_host(child.connect_host)}:{child.grpc_port}"
            for child in self.children()
        ]
        lines += [f"  metrics {name + ':':<9} {url}" for name, url in self.metrics_urls()]
        lines += [f"  listens {child.name + ':':<9} {child.listens()}" for child in self.children()]
        if not is_loopback(self.gateway.listen_host):
            lines.append(
                f"  from other machines: http://<this machine's address>:{self.gateway.http_port}/ "
                "(the gateway only)"
            )
        lines.append("Press Ctrl-C to stop.")
        return "\n".join(lines)


class _Ports:
    """Hands out ports: an explicit one as given, ``0`` as a free one; never the same port twice."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.taken: set[int] = set()

    def claim(self, port: int, what: str, host: str | None = None) -> int:
        """``port`` as given, or (``0``) a free one on ``host`` (default: the ports' host)."""
        if not 0 <= port <= 65535:
            raise PlanError(f"{what}: port {port} is out of range (0-65535)")
        if port == 0:
            probe = self.host if host is None else host
            port = free_port(probe)
            while port in self.taken:
                port = free_port(probe)
        elif port in self.taken:
            raise PlanError(f"{what}: port {port} is already used by another part of the stack")
        self.taken.add(port)
        return port

    def next_from(self, start: int, what: str, host: str | None = None) -> int:
        """``start`` or the next port after it that no other part of the stack uses (0: a free one)."""
        if start == 0:
            return self.claim(0, what, host)
        port = start
        while port in self.taken:
            port += 1
        return self.claim(port, what, host)


def default_store_url() -> str:
    return f"sqlite:///{Path.cwd() / 'data' / 'rooms.db'}"


def _store_display(url: str) -> str:
    """The store URL without credentials or query, safe to print."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return url.split("?")[0]
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _session_target(connect_host: str, ports: Sequence[int]) -> str:
    """The gateway's ``--session``: every replica when the host is an IP literal, else the first.

    gRPC's ``ipv4:``/``ipv6:`` target lists several addresses; the gateway's channel then fails
    over to the next replica when one is down.
    """
    if len(ports) == 1:
        return f"{url_host(connect_host)}:{ports[0]}"
    try:
        address = ipaddress.ip_address(connect_host)
    except ValueError:
        log.warning("gateway gets only the first session replica: the host is not an IP address")
        return f"{connect_host}:{ports[0]}"
    if address.version == 4:
        return "ipv4:" + ",".join(f"{connect_host}:{port}" for port in ports)
    return "ipv6:" + ",".join(f"[{connect_host}]:{port}" for port in ports)


RUNTIME_PREFIX = "ninetynine-serve-"
# Longer than any start-up takes (--startup-timeout's default is 60 s).
STALE_AFTER_S = 300.0


def build_plan(args: argparse.Namespace, runtime_dir: str | None = None) -> Plan:
    """Turn the ``serve`` flags into children with concrete ports; ``PlanError`` if impossible.

    ``runtime_dir``, a directory private to this user, holds the frames sockets
    (:mod:`ninetynine.common.frames`): the engine's, where the sessions send their moves, and with
    one session replica the session's, where the gateway opens its shared calls (with several,
    the gateway's gRPC channel spreads them over the replicas and fails over).
    """
    replicas: int = args.session_replicas
    if replicas < 1:
        raise PlanError(f"--session-replicas must be at least 1, got {replicas}")
    store: str = args.store or default_store_url()
    scheme = urlsplit(store).scheme
    if scheme not in ("sqlite", "redis", "rediss", "unix"):
        raise PlanError(
            f"--store: unsupported scheme {scheme!r}; use sqlite:///path/rooms.db or redis://host:port/db"
        )
    if replicas > 1 and scheme == "sqlite":
        raise PlanError(
            f"--session-replicas {replicas} needs a shared store: SQLite is one machine, one writer. "
            "Use --store redis://127.0.0.1:6379/0"
        )

    local_engine = args.engine_mode == "local"
    host: str = args.host
    internal: str = args.internal_host
    metrics_host: str = args.metrics_host
    connect = connect_host(internal)
    ports = _Ports(internal)
    # Explicit ports first, so the consecutive ones (replicas, metrics) step around them.
    explicit = {
        **({} if local_engine else {"engine": args.engine_port}),
        "gateway-grpc": args.gateway_grpc_port,
        "http": args.http_port,
    }
    hosts = {"engine": internal, "gateway-grpc": host, "http": host}
    claimed = {what: ports.claim(port, f"--{what}-port") for what, port in explicit.items() if port != 0}
    claimed.update(
        {what: ports.claim(0, f"--{what}-port", hosts[what]) for what, port in explicit.items() if port == 0}
    )
    session_ports = [ports.next_from(args.session_port, "--session-port") for _ in range(replicas)]
    # Metrics: engine base, first session base+1, gateway base+2 (the ports of
    # deploy/prometheus/prometheus.yml), further session replicas after them.
    base: int = args.metrics_base_port
    metrics_names = ["engine", "session", "gateway", *(f"session-{i}" for i in range(2, replicas + 1))]
    metrics = {
        name: ports.next_from(base + offset if base else 0, "--metrics-base-port", metrics_host)
        for offset, name in enumerate(metrics_names)
        if not (local_engine and name == "engine")
    }

    engine_frames = str(Path(runtime_dir) / "engine.sock") if runtime_dir and not local_engine else ""
    session_frames = str(Path(runtime_dir) / "session.sock") if runtime_dir and replicas == 1 else ""

    def frames_flag(flag: str, path: str) -> tuple[str, ...]:
        return (flag, path) if path else ()

    level: str = args.log_level
    reflection = "--reflection" if args.reflection else "--no-reflection"
    common = ("--log-level", level, "--metrics-host", metrics_host, reflection)
    engine = (
        None
        if local_engine
        else Child(
            "engine",
            "engine",
            (
                "--host",
                internal,
                *common,
                "--port",
                str(claimed["engine"]),
                "--metrics-port",
                str(metrics["engine"]),
                *frames_flag("--frames-socket", engine_frames),
            ),
            claimed["engine"],
            metrics["engine"],
            ENGINE_SERVICE,
            listen_host=internal,
            metrics_host=metrics_host,
        )
    )
    session_extra: list[str] = []
    if args.bot_think_ms is not None:
        session_extra += ["--bot-think-ms", str(args.bot_think_ms)]
    if args.turn_time_scale is not None:
        session_extra += ["--turn-time-scale", str(args.turn_time_scale)]
    sessions = []
    for index, port in enumerate(session_ports, start=1):
        name = "session" if index == 1 else f"session-{index}"
        sessions.append(
            Child(
                name,
                "session",
                (
                    "--host",
                    internal,
                    *common,
                    "--port",
                    str(port),
                    "--engine",
                    "local" if engine is None else f"{url_host(connect)}:{engine.grpc_port}",
                    "--store",
                    store,
                    "--metrics-port",
                    str(metrics[name]),
                    *frames_flag("--engine-frames", engine_frames),
                    *frames_flag("--frames-socket", session_frames),
                    *session_extra,
                ),
                port,
                metrics[name],
                SESSION_SERVICE,
                listen_host=internal,
                metrics_host=metrics_host,
            )
        )
    session_target = _session_target(connect, session_ports)
    gateway = Child(
        "gateway",
        "gateway",
        (
            "--host",
            host,
            *common,
            "--port",
            str(claimed["http"]),
            "--grpc-port",
            str(claimed["gateway-grpc"]),
            "--session",
            session_target,
            "--metrics-port",
            str(metrics["gateway"]),
            *frames_flag("--session-frames", session_frames),
        ),
        claimed["gateway-grpc"],
        metrics["gateway"],
        GATEWAY_SERVICE,
        http_port=claimed["http"],
        listen_host=host,
        metrics_host=metrics_host,
    )
    return Plan(connect_host(host), engine, tuple(sessions), gateway, _store_display(store), session_target)


# -- child processes ------------------------------------------------------------------------------


@dataclass
class _Running:
    child: Child
    proc: asyncio.subprocess.Process
    exited: asyncio.Task[int]
    pump: asyncio.Task[None]
    stop_sent: bool = False
    killed: bool = False


@dataclass
class _LogWriter:
    """Copies child output to ``out``: JSON lines as they are (or short text on a terminal)."""

    out: TextIO
    pretty: bool
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def render(self, name: str, raw: bytes) -> str | None:
        """The line to show for ``raw`` (None: nothing to show)."""
        if not self.pretty and raw.startswith(b"{") and _service_key(name) in raw:
            return raw.decode("utf-8", "replace").rstrip("\r\n")  # already says who wrote it
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not text:
            return None
        record = _json_object(text)
        if record is None:
            return f"[{name}] {text}"
        if self.pretty:
            return _pretty(name, record)
        if record.get("service") != name:
            record["process"] = name  # tells session replicas apart
            return json.dumps(record, ensure_ascii=False)
        return text

    def write(self, text: str) -> None:
        try:
            self.out.write(text + "\n")
            self.out.flush()
        except (BrokenPipeError, ValueError):  # the reader went away; the stack keeps running
            pass


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _pretty(name: str, record: dict[str, Any]) -> str:
    stamp = str(record.pop("timestamp", ""))[11:23]
    level = str(record.pop("level", ""))
    event = str(record.pop("event", ""))
    record.pop("service", None)
    record.pop("logger", None)
    rest = " ".join(f"{key}={value}" for key, value in record.items())
    return f"{stamp} {name:<9} {level:<7} {event} {rest}".rstrip()


class _Readable(Protocol):
    async def read(self, n: int) -> bytes: ...


class _PolledPipe:
    """A child's stdout pipe, read by polling instead of through the event loop's selector.

    A selector-registered pipe wakes the supervisor for every write a child makes; polling every
    :data:`_POLL_S` seconds wakes it at most that often, whatever the children log, and a pipe
    found empty on two ticks in a row waits for the child's next write instead, so quiet children
    cost no wake-ups. The pipe is
    enlarged (:data:`_PIPE_BYTES`, Linux) so a child logging in bursts does not wait meanwhile.
    """

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        with contextlib.suppress(AttributeError, OSError):  # not Linux, or over pipe-max-size
            fcntl.fcntl(self.write_fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)

    def started(self) -> None:
        """The child holds the write end now: only its exit may end the stream."""
        os.close(self.write_fd)
        self.write_fd = -1

    async def read(self, n: int) -> bytes:
        """Up to ``n`` bytes, waiting for some; ``b""`` once the child's end is closed."""
        empty_ticks = 0
        while True:
            try:
                data = os.read(self.read_fd, n)
            except BlockingIOError:
                if empty_ticks:
                    # Still nothing a tick later: the child is quiet, so sleep until it writes
                    # rather than waking on every tick.
                    await self._readable()
                empty_ticks += 1
                # Every child's pipe on the same ticks: one wake-up serves them all.
                await asyncio.sleep(_POLL_S - asyncio.get_running_loop().time() % _POLL_S)
                continue
            if not data:
                self.close()
            return data

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        fd = self.read_fd

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, wake)
        try:
            await ready
        finally:
            loop.remove_reader(fd)

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.read_fd = self.write_fd = -1


async def _pump(name: str, stream: _Readable, writer: _LogWriter) -> None:
    """Copy a child's output, one write per chunk read rather than one per line."""
    partial = b""
    dropping = False  # inside a line over the limit: skip to its end
    while True:
        chunk = await stream.read(_READ_CHUNK)
        lines = (partial + chunk).split(b"\n")
        partial = lines.pop() if chunk else b""  # at the end, an unterminated last line is a line
        if dropping and lines:
            lines.pop(0)  # the over-long line's tail
            dropping = False
        if len(partial) > _LINE_LIMIT:
            lines.append(b"(a log line longer than 1 MiB was dropped)")
            dropping = True
        if dropping:
            partial = b""
        rendered = [text for text in (writer.render(name, raw) for raw in lines) if text is not None]
        if rendered:
            writer.write("\n".join(rendered))
        if not chunk:
            return


@functools.cache
def _service_key(name: str) -> bytes:
    return f'"service":"{name}"'.encode()


class ChildFailed(RuntimeError):
    """A child exited while the supervisor still needed it."""


class Supervisor:
    """Runs a :class:`Plan` until a signal (exit 0) or a child's unexpected exit (exit 1)."""

    def __init__(
        self,
        plan: Plan,
        *,
        out: TextIO,
        pretty_logs: bool,
        startup_timeout: float,
        stop_timeout: float,
        service_token: str,
    ) -> None:
        self.plan = plan
        self.service_token = service_token
        self.out = out
        self.writer = _LogWriter(out, pretty_logs)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.running: list[_Running] = []
        self.stop_requested = asyncio.Event()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._on_signal, sig)
        failed = False
        try:
            started = await self._start_all()
            if started:
                self.writer.write(self.plan.banner())
                log.info("stack serving", web_table=self.plan.web_url)
                failed = not await self._watch()
            else:
                failed = not self.stop_requested.is_set()
        except ChildFailed as exc:
            log.error("stack failed", error=str(exc))
            failed = True
        finally:
            clean = await self._stop_all()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
        if failed:
            return 1
        if not clean:
            log.error("not every service stopped cleanly")
            return 1
        log.info("stack stopped")
        return 0

    def _on_signal(self, sig: signal.Signals) -> None:
        if not self.stop_requested.is_set():
            log.info("stopping", signal=sig.name)
        self.stop_requested.set()

    async def _spawn(self, child: Child) -> _Running:
        # The credential goes in the environment (readable by this user only), not on the command line.
        token = self.service_token if child.credential else None
        output = _PolledPipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *service_command([child.subcommand, *child.args], parent=os.getpid()),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output.write_fd,
                stderr=asyncio.subprocess.STDOUT,
                env=service_env(token, own_credential=True),
                # Own process group: a terminal's Ctrl-C reaches only the supervisor, which stops the
                # children in order instead of all at once.
                process_group=0,
            )
        except BaseException:
            output.close()
            raise
        output.started()
        log.info("started", process=child.name, pid=proc.pid)
        running = _Running(
            child,
            proc,
            asyncio.create_task(proc.wait()),
            asyncio.create_task(_pump(child.name, output, self.writer)),
        )
        self.running.append(running)
        return running

    async def _start_all(self) -> bool:
        """Start wave by wave, each waited until SERVING. False if a stop was requested meanwhile."""
        deadline = time.monotonic() + self.startup_timeout
        for wave in self.plan.waves():
            if self.stop_requested.is_set():
                return False
            started = [await self._spawn(child) for child in wave]
            ready = asyncio.ensure_future(asyncio.gather(*(self._ready(r.child) for r in started)))
            stop = asyncio.ensure_future(self.stop_requested.wait())
            waited: list[asyncio.Future[Any]] = [ready, stop, *(r.exited for r in self.running)]
            try:
                done, _ = await asyncio.wait(
                    waited,
                    timeout=max(0.0, deadline - time.monotonic()),
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                stop.cancel()
                if not ready.done():
                    ready.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await ready
            self._raise_if_exited()
            if stop in done:
                return False
            if ready not in done:
                names = ", ".join(r.child.name for r in started)
                raise ChildFailed(f"{names} not SERVING within --startup-timeout {self.startup_timeout:g} s")
            ready.result()  # re-raise a health-check error
        return True

    async def _ready(self, child: Child) -> None:
        # A thread per child: the check blocks; cancelling this task ends the thread's wait too.
        cancel = threading.Event()
        try:
            await asyncio.to_thread(
                wait_serving,
                child.grpc_port,
                host=child.connect_host,
                service=child.health_service,
                http_port=child.http_port,
                timeout=None,  # _start_all bounds the wait by --startup-timeout
                cancel=cancel,
            )
        finally:
            cancel.set()
        log.info("serving", process=child.name, grpc_port=child.grpc_port)

    def _raise_if_exited(self) -> None:
        for r in self.running:
            if r.exited.done():
                raise ChildFailed(f"{r.child.name} exited unexpectedly with code {r.exited.result()}")

    async def _watch(self) -> bool:
        """Wait for a stop request (True) or a child's exit (False)."""
        stop = asyncio.ensure_future(self.stop_requested.wait())
        try:
            await asyncio.wait([stop, *(r.exited for r in self.running)], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if self.stop_requested.is_set():
            return True
        for r in self.running:
            if r.exited.done():
                log.error("service exited unexpectedly", process=r.child.name, code=r.exited.result())
        return False

    async def _stop_all(self) -> bool:
        """Stop the children in reverse start order; True if each exited 0 on its SIGTERM."""
        by_name = {r.child.name: r for r in self.running}
        clean = True
        for wave in reversed(self.plan.waves()):
            group = [by_name[child.name] for child in wave if child.name in by_name]
            results = await asyncio.gather(*(self._stop_one(r) for r in group))
            clean = clean and all(results)
        return clean

    async def _stop_one(self, r: _Running) -> bool:
        if not r.exited.done():
            with contextlib.suppress(ProcessLookupError):
                r.proc.send_signal(signal.SIGTERM)
                r.stop_sent = True
            try:
                await asyncio.wait_for(asyncio.shield(r.exited), self.stop_timeout)
            except TimeoutError:
                log.error("did not stop in time; killing", process=r.child.name, timeout_s=self.stop_timeout)
                with contextlib.suppress(ProcessLookupError):
                    r.proc.kill()
                    r.killed = True
                await r.exited
        code = r.exited.result()
        # The pipe closes when the process exits; what is left in it still goes to stdout.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(r.pump, 5.0)
        # -SIGTERM: the signal came before the service had installed its handler (still starting).
        if r.stop_sent and code in (0, -signal.SIGTERM) and not r.killed:
            log.info("stopped", process=r.child.name)
            return True
        if r.stop_sent:
            log.error("stopped uncleanly", process=r.child.name, code=code)
        return False


# -- command line ---------------------------------------------------------------------------------


def run_command(args: argparse.Namespace) -> int:
    json_logs = None if args.log_format == "auto" else args.log_format == "json"
    configure_logging("supervisor", level=args.log_level, json_logs=json_logs, stream=sys.stdout)
    _remove_stale_runtime_dirs()
    # Private to this user (mkdtemp makes it 0700): the frames sockets live here.
    with tempfile.TemporaryDirectory(prefix=RUNTIME_PREFIX) as runtime_dir:
        return _run(args, runtime_dir)


def _remove_stale_runtime_dirs() -> None:
    """Remove the runtime directories of stacks that were killed before they could clean up.

    A directory is stale when it is this user's, unchanged for :data:`STALE_AFTER_S` (a stack
    still starting has not bound its sockets yet) and none of its sockets takes a connection (a
    running stack's engine and session listen on theirs).
    """
    for entry in Path(tempfile.gettempdir()).glob(RUNTIME_PREFIX + "*"):
        try:
            info = entry.stat()
            recent = time.time() - info.st_mtime < STALE_AFTER_S
            if not entry.is_dir() or info.st_uid != os.getuid() or recent:
                continue
            if any(_answers(sock) for sock in entry.glob("*.sock")):
                continue
            shutil.rmtree(entry)
            log.info("removed a stale runtime directory", path=str(entry))
        except OSError:
            continue  # gone meanwhile, or not ours to remove


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def _run(args: argparse.Namespace, runtime_dir: str) -> int:
    try:
        plan = build_plan(args, runtime_dir)
        token = load_service_token(args.service_token_file) or generate_token()
    except (PlanError, OSError, CredentialError) as exc:
        log.error("cannot start the stack", error=str(exc))
        return 2
    if plan.engine is not None and not is_loopback(plan.engine.listen_host):
        # The session is behind the credential; the engine and /metrics answer whoever reaches them.
        log.warning(
            "the engine takes no credential and listens beyond loopback", host=plan.engine.listen_host
        )
    if not is_loopback(plan.gateway.metrics_host):
        log.warning("/metrics listens beyond loopback", host=plan.gateway.metrics_host)
    pretty = args.log_format == "text" or (args.log_format == "auto" and sys.stdout.isatty())
    supervisor = Supervisor(
        plan,
        out=sys.stdout,
        pretty_logs=pretty,
        startup_timeout=args.startup_timeout,
        stop_timeout=args.stop_timeout,
        service_token=token,
    )
    return asyncio.run(supervisor.run())


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        "serve",
        help="run engine, session and gateway together (local development, demos)",
        description="Start the engine, the session service (one or more replicas) and the gateway as "
        "child processes, wait until all are SERVING, print the URLs, and stop them in order on "
        "Ctrl-C/SIGTERM. Ports set to 0 are picked free. Every flag can also come from the environment.",
    )
    add_env_argument(
        parser,
        "--store",
        default=None,
        help="room store: sqlite:///path/rooms.db or redis://host:port/db; "
        "unset means sqlite:///<current directory>/data/rooms.db",
    )
    add_env_argument(
        parser,
        "--session-replicas",
        type=int,
        default=1,
        help="session processes; more than 1 needs a redis:// store",
    )
    add_env_argument(
        parser,
        "--host",
        default="127.0.0.1",
        help="address the gateway's HTTP/WebSocket and gRPC ports listen on (0.0.0.0: reachable from "
        "other machines, e.g. your phone)",
    )
    add_env_argument(
        parser,
        "--internal-host",
        default="127.0.0.1",
        help="address the engine and session listen on (keep loopback unless they must be reached "
        "from elsewhere)",
    )
    add_env_argument(
        parser, "--metrics-host", default="127.0.0.1", help="address every /metrics port listens on"
    )
    add_env_argument(parser, "--http-port", type=int, default=8080, help="gateway HTTP/WebSocket port")
    add_env_argument(
        parser,
        "--engine-mode",
        choices=("service", "local"),
        default="service",
        help="service: the engine is its own process, which the sessions call; local: each session "
        "runs the rules in its own process (one process and one hop fewer per move)",
    )
    add_env_argument(parser, "--engine-port", type=int, default=50051, help="engine gRPC port")
    add_env_argument(
        parser,
        "--session-port",
        type=int,
        default=50052,
        help="first session gRPC port; further replicas take the next free ports",
    )
    add_env_argument(parser, "--gateway-grpc-port", type=int, default=50053, help="gateway gRPC port")
    add_env_argument(
        parser,
        "--metrics-base-port",
        type=int,
        default=9101,
        help="/metrics ports: engine base, session base+1, gateway base+2, more replicas after (0: free)",
    )
    add_env_argument(
        parser, "--bot-think-ms", type=int, default=None, help="passed to the session (None: its own default)"
    )
    add_env_argument(
        parser,
        "--turn-time-scale",
        type=float,
        default=None,
        help="passed to the session: multiply turn timers (None: its own default, 1)",
    )
    add_env_argument(
        parser,
        "--reflection",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="gRPC server reflection on every service (local tools such as grpcurl; the session's "
        "still needs the credential)",
    )
    add_credential_flag(parser, who="the session and the gateway share (neither set: a random one per run)")
    add_env_argument(
        parser, "--log-level", default="info", help="debug, info, warning or error (all services)"
    )
    add_env_argument(
        parser,
        "--log-format",
        default="auto",
        choices=("auto", "json", "text"),
        help="children's log lines: JSON, short text, or auto (text on a terminal)",
    )
    add_env_argument(
        parser, "--startup-timeout", type=float, default=60.0, help="seconds to wait for every service"
    )
    add_env_argument(
        parser,
        "--stop-timeout",
        type=float,
        default=20.0,
        help="seconds each service gets to stop after SIGTERM before SIGKILL",
    )
    parser.set_defaults(handler=run_command)
    return parser
