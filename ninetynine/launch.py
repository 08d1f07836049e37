"""Start, watch and stop service child processes: what ``serve``, the benchmarks and the tests share.

A service child is ``python -m ninetynine.cli <service> <flags>`` -- the production entry point.
This module knows how to:

* pick a free port (:func:`free_port`) and write a host into an address (:func:`url_host`,
  :func:`connect_host`);
* build the child's command line (:func:`service_command`; with ``parent`` it first runs a shim
  that makes the kernel SIGTERM the child when that parent dies) and its environment
  (:func:`service_env`: unbuffered output, and the service credential in the environment, never on
  the command line);
* start it with its output appended to a log file (:func:`start`);
* wait until it reports SERVING through the gRPC health service, and for the gateway until its
  HTTP ``/healthz`` answers 200 (:func:`wait_serving`);
* stop children with SIGTERM, then SIGKILL after a bound (:func:`stop`, :func:`kill`).

``ninety-nine serve`` (ninetynine/supervisor.py) pipes its children's output through its own log
writer and runs them under asyncio; it uses the command line, environment, ports and readiness
check from here.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ninetynine.common.config import env_var
from ninetynine.common.credential import TOKEN_ENV

__all__ = [
    "connect_host",
    "free_port",
    "kill",
    "service_command",
    "service_env",
    "start",
    "stop",
    "url_host",
    "wait_serving",
]

# How often a readiness check asks again, and how long one ask may take.
_POLL_S = 0.1
_ASK_TIMEOUT_S = 0.5

# Runs first in a guarded child, then execs the real service in the same process. It asks the
# kernel to SIGTERM the child when its parent dies (Linux ``PR_SET_PDEATHSIG``; the setting survives
# exec). It is a shim rather than a ``preexec_fn`` because a ``preexec_fn`` forces a full fork() of
# a process whose gRPC threads are busy (health checks), which can crash the child before exec;
# without it subprocess uses vfork, which does not copy them.
_CHILD_SHIM = """
import os, sys
supervisor = int(sys.argv[1])
if sys.platform.startswith("linux"):
    import ctypes, signal
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)
if os.getppid() != supervisor:
    sys.exit("ninety-nine serve: the supervisor is gone; not starting")
os.execv(sys.executable, [sys.executable, "-m", "ninetynine.cli", *sys.argv[2:]])
"""


def url_host(host: str) -> str:
    """``host`` as it goes before ``:port`` (IPv6 literals in brackets)."""
    return f"[{host}]" if ":" in host else host


def connect_host(listen_host: str) -> str:
    """Where a local client reaches a server listening on ``listen_host``."""
    if listen_host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if listen_host == "::":
        return "::1"
    return listen_host


# Listening ports come from below the kernel's ephemeral range when there is room there: a port
# from that range can become the source port of any outgoing connection between the moment it is
# chosen and the moment a child binds it ("Address already in use").
_LOCAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000  # below: well-known and registered services (Redis, PostgreSQL, NATS ...)
_TRIES = 200
_handed_out: set[int] = set()
_handed_out_lock = threading.Lock()


def _below_ephemeral() -> range:
    try:
        first_ephemeral = int(_LOCAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return range(0)
    return range(_LOWEST, first_ephemeral)


def _bound(family: socket.AddressFamily, host: str, port: int) -> int | None:
    """The port a socket gets when bound to ``port`` (0: the kernel's choice); None when taken."""
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))  # no SO_REUSEADDR: a port in TIME_WAIT counts as taken
        except OSError:
            return None
        return int(sock.getsockname()[1])


def _candidates() -> Iterator[int]:
    """Ports below the ephemeral range from a random start (apart from other processes choosing
    now), then the kernel's choice (0) when there is no room there."""
    ports = _below_ephemeral()
    if len(ports) > _TRIES:
        start = random.randrange(len(ports))
        yield from (ports[(start + i) % len(ports)] for i in range(_TRIES))
    while True:
        yield 0


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now on ``host`` (``""``: every IPv4 address).

    One process never gets the same port twice, and the port is below the kernel's ephemeral
    range when that leaves room, so no outgoing connection takes it before a server binds it.
    """
    host = host or "0.0.0.0"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with _handed_out_lock:
        for candidate in _candidates():
            if candidate in _handed_out:
                continue
            port = _bound(family, host, candidate)
            if port is not None and port not in _handed_out:
                _handed_out.add(port)
                return port
    raise AssertionError("unreachable: the candidates never end")  # pragma: no cover


def service_command(args: Sequence[str], *, parent: int | None = None) -> list[str]:
    """The command line of ``ninety-nine <args>`` (``args[0]`` is the service).

    With ``parent`` (a pid, normally ``os.getpid()``) the child gets SIGTERM when that process
    dies, and does not start at all if it is already gone.
    """
    if parent is None:
        return [sys.executable, "-m", "ninetynine.cli", *args]
    # -S: the shim needs no site-packages; the service it execs gets them.
    return [sys.executable, "-S", "-c", _CHILD_SHIM, str(parent), *args]


def service_env(
    credential: str | None = None, *, own_credential: bool = False, **extra: str
) -> dict[str, str]:
    """This process's environment for a child, with unbuffered output and ``extra`` on top.

    With ``own_credential`` the child does not inherit a configured service credential (neither
    the secret nor the file flag) and gets ``credential`` instead, if any.
    """
    env = dict(os.environ, PYTHONUNBUFFERED="1", **extra)
    if own_credential:
        env.pop(env_var("--service-token-file"), None)
        env.pop(TOKEN_ENV, None)
    if credential is not None:
        env[TOKEN_ENV] = credential
    return env


def start(
    args: Sequence[str], log_path: Path, *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start ``ninety-nine <args>`` with stdout and stderr appended to ``log_path``."""
    with log_path.open("ab") as log:
        return subprocess.Popen(
            service_command(args),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=service_env() if env is None else env,
            cwd=cwd,
        )


def _serving(target: str, service: str) -> bool:
    # A channel per ask: a restarted server must not wait out the old one's reconnect backoff.
    with grpc.insecure_channel(target) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=_ASK_TIMEOUT_S
            )
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def wait_serving(
    port: int,
    *,
    host: str = "127.0.0.1",
    service: str = "",
    http_port: int | None = None,
    timeout: float | None = 20.0,
    proc: subprocess.Popen[bytes] | None = None,
    cancel: threading.Event | None = None,
) -> bool:
    """Block until the gRPC health service on ``host:port`` reports ``service`` SERVING and, with
    ``http_port``, ``/healthz`` there answers 200.

    Returns False if ``cancel`` was set first. Raises :class:`TimeoutError` after ``timeout``
    seconds (None: no bound) and :class:`RuntimeError` if ``proc`` exits meanwhile.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    checks: list[Callable[[], bool]] = [lambda: _serving(f"{url_host(host)}:{port}", service)]
    if http_port is not None:
        url = f"http://{url_host(host)}:{http_port}/healthz"
        checks.append(lambda: _healthy(url))
    for check in checks:
        while not check():
            if cancel is not None and cancel.wait(_POLL_S):
                return False
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"the service for port {port} exited with {proc.returncode} (see its log)")
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"nothing SERVING on {host}:{port} within {timeout:g} s")
            if cancel is None:
                time.sleep(_POLL_S)
    return True


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL and reap: no shutdown hook runs, exactly like a crash or an OOM kill."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def stop(procs: Iterable[subprocess.Popen[bytes]], timeout: float) -> list[int]:
    """SIGTERM every one still running, then SIGKILL those not gone ``timeout`` seconds later;
    returns their exit codes."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            kill(proc)
    return [proc.wait() for proc in procs]
